package org.leasehold.lease;

/**
 * A tentative lease was broken by an older requester (or the lease was taken again by its own identity) before
 * the call. Nothing may be written under it; roll back and start over.
 */
public class LeaseBrokenException extends LeaseException {
    private static final long serialVersionUID = 1L;

    private final String name;

    public LeaseBrokenException(String name, String message) {
        super(message);
        this.name = name;
    }

    /** The name whose lease was broken. */
    public String name() {
        return name;
    }
}
