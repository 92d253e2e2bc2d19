package org.leasehold.bag;

/**
 * The store cannot do its work: the root is missing or not writable, the disk is full, an I/O error occurred, the
 * writer identity is taken by another process on this machine, or the store is closed. The message names the path
 * and the cause. A failed append wrote nothing readable; acknowledged messages are unaffected.
 */
public class StoreUnavailableException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    public StoreUnavailableException(String message) {
        super(message);
    }

    public StoreUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
