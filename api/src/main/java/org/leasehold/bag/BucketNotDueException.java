package org.leasehold.bag;

import java.time.Instant;

/**
 * A seal was requested for a bucket whose end plus grace has not passed yet by this process's clock: sealing it now
 * could refuse writes that are still on time. Nothing was sealed. Retry at {@link #dueAt()}.
 */
public class BucketNotDueException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    private final Instant dueAt;

    public BucketNotDueException(Instant dueAt, String message) {
        super(message);
        this.dueAt = dueAt;
    }

    /** When every requested bucket may be sealed. */
    public Instant dueAt() {
        return dueAt;
    }
}
