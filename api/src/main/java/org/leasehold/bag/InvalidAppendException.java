package org.leasehold.bag;

/**
 * The append request itself is malformed (no payload, a null element, a bad or duplicate lease name, a witness that
 * is too large). Retrying it unchanged fails again. Nothing was written.
 */
public class InvalidAppendException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    public InvalidAppendException(String message) {
        super(message);
    }
}
