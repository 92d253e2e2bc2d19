package org.leasehold.bag;

import java.time.Instant;

/**
 * The bucket the message's timestamp falls in is sealed, being sealed, or past its grace, so the append is refused.
 * The refusal is definitive: the message is not readable now and never will be. Retry with a new timestamp (under a
 * lease that is still valid), which lands in a current bucket.
 */
public class BucketSealedException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    /** How the refusal came about. */
    public enum Reason {
        /** The bucket was sealed, or sealing had begun, before anything was written. */
        SEALED,
        /** This process's clock says the bucket is past its grace: any process may be sealing it. Nothing written. */
        PAST_GRACE,
        /**
         * The bytes were written, but only after sealing had begun, and they lie outside the sizes the bucket's lock
         * file lists: readers ignore them.
         */
        LATE
    }

    private final Reason reason;
    private final String log;
    private final String bucket;
    private final Instant bucketStart;

    public BucketSealedException(Reason reason, String log, String bucket, Instant bucketStart, String message) {
        super(message);
        this.reason = reason;
        this.log = log;
        this.bucket = bucket;
        this.bucketStart = bucketStart;
    }

    public Reason reason() {
        return reason;
    }

    public String log() {
        return log;
    }

    /** The bucket's path inside the log, for example {@code 2026/11/22/02/43/01.000000}. */
    public String bucket() {
        return bucket;
    }

    /** The start of the bucket's time range. */
    public Instant bucketStart() {
        return bucketStart;
    }
}
