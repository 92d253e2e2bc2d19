package org.leasehold.bag;

import org.leasehold.LeaseholdException;

/**
 * A bag store operation failed; the subclass says how. Unless the subclass says otherwise (only
 * {@link WriteOutcomeUnknownException} does), a failed append wrote nothing that will ever be readable, and every
 * message acknowledged before it stays readable.
 */
public class BagStoreException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    public BagStoreException(String message) {
        super(message);
    }

    public BagStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
