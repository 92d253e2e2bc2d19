package org.leasehold.bag;

/** A payload (or the whole frame) is larger than the store accepts. Nothing was written. */
public class PayloadTooLargeException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    private final long size;
    private final long limit;

    public PayloadTooLargeException(long size, long limit, String message) {
        super(message);
        this.size = size;
        this.limit = limit;
    }

    /** The refused size in bytes. */
    public long size() {
        return size;
    }

    /** The configured limit in bytes. */
    public long limit() {
        return limit;
    }
}
