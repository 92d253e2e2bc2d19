package org.leasehold.store;

import java.util.List;

/**
 * What one {@link FileBagStore#compact} call did to one log.
 *
 * @param log             the log
 * @param published       the segments this call published (file names under {@code <log>/segments/})
 * @param lost            the segments another compactor published first while this call prepared the same range
 *                        (this call's prepared file was unlinked)
 * @param alreadyThere    the segments that were published before this call (their ranges were left alone)
 * @param buckets         the source buckets listed in the segments this call wrote, sealed or not
 * @param frames          the frames those segments hold
 * @param bytes           the bytes written (segments published and lost)
 * @param preparedRemoved prepared segment files of published ranges unlinked (left by crashed or losing compactors)
 * @param bucketsRemoved  buckets whose files this call removed because a published, verified segment holds them
 *                        ({@link BagStoreConfig#removeCompactedBuckets()}); always 0 when that is off
 */
public record CompactionReport(String log, List<String> published, List<String> lost, int alreadyThere, long buckets,
        long frames, long bytes, int preparedRemoved, int bucketsRemoved) {

    public CompactionReport {
        published = List.copyOf(published);
        lost = List.copyOf(lost);
    }

    /** This report with {@code n} buckets removed. */
    CompactionReport withBucketsRemoved(int n) {
        return new CompactionReport(log, published, lost, alreadyThere, buckets, frames, bytes, preparedRemoved, n);
    }
}
