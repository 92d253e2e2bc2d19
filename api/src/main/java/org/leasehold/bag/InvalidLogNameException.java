package org.leasehold.bag;

/** The log name is not acceptable (it becomes a directory name). Nothing was read or written. */
public class InvalidLogNameException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    private final String logName;

    public InvalidLogNameException(String logName, String message) {
        super(message);
        this.logName = logName;
    }

    /** The refused name, as given (may be null). */
    public String logName() {
        return logName;
    }
}
