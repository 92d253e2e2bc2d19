package org.leasehold.lease;

/**
 * A lease held for the current unit of work (a transaction, or a connection outside one) is lost: it expired, it
 * could not be renewed three times in a row, or it was broken. Nothing was written under it; the transaction is
 * marked rollback-only. Start the unit of work over.
 */
public class LeaseLostException extends LeaseException {
    private static final long serialVersionUID = 1L;

    public LeaseLostException(String message) {
        super(message);
    }

    public LeaseLostException(String message, Throwable cause) {
        super(message, cause);
    }
}
