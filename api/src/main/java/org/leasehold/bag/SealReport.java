package org.leasehold.bag;

import java.time.Instant;
import java.util.List;

/**
 * What a seal call did, bucket by bucket.
 *
 * @param log     the log
 * @param buckets one entry per bucket in the requested range, in time order
 */
public record SealReport(String log, List<BucketSeal> buckets) {

    public SealReport {
        buckets = List.copyOf(buckets);
    }

    /** How a bucket came to be sealed. */
    public enum Outcome {
        /** This call's lock file was linked into place. */
        SEALED,
        /** The bucket already had a lock file when this call looked. */
        ALREADY_SEALED,
        /** Another process linked its lock file while this call was helping. */
        HELPED
    }

    /**
     * One sealed bucket.
     *
     * @param bucket  the bucket's start
     * @param path    the bucket's path inside the log
     * @param outcome how it was sealed
     * @param files   how many data files the lock file lists
     * @param bytes   the total of their listed sizes
     */
    public record BucketSeal(Instant bucket, String path, Outcome outcome, int files, long bytes) {
    }
}
