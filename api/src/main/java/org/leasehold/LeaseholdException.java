package org.leasehold;

/**
 * Root of every checked exception Leasehold throws. Each subclass names one precise failure; its
 * message says what happened, to what, and what the caller can do about it.
 */
public class LeaseholdException extends Exception {
    private static final long serialVersionUID = 1L;

    public LeaseholdException(String message) {
        super(message);
    }

    public LeaseholdException(String message, Throwable cause) {
        super(message, cause);
    }
}
