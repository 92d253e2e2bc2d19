package org.leasehold.bag;

/** The log does not exist under the store's root: nothing was ever appended to it or sealed in it. */
public class UnknownLogException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    private final String log;

    public UnknownLogException(String log, String message) {
        super(message);
        this.log = log;
    }

    public String log() {
        return log;
    }
}
