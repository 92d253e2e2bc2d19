package org.leasehold.bag;

/**
 * The frame's bytes were written but could not be made durable (the flush failed), so the store cannot say whether
 * the message is, or after a machine crash will be, readable. This is the only failure of an append that is not a
 * definitive refusal. Treat it like a transaction whose outcome is in doubt: read the log (after its bucket is
 * sealed) to find out, and do not publish a watermark below the message's timestamp.
 */
public class WriteOutcomeUnknownException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    public WriteOutcomeUnknownException(String message, Throwable cause) {
        super(message, cause);
    }
}
