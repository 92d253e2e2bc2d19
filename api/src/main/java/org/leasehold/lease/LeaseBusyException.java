package org.leasehold.lease;

import java.time.Instant;

/**
 * The names could not all be granted within the request's wait: another holder has (or queued requesters are
 * ahead for) {@link #name()}. Nothing was granted. Retry later, or wait longer.
 */
public class LeaseBusyException extends LeaseException {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final Instant heldUntil;

    public LeaseBusyException(String name, Instant heldUntil, String message) {
        super(message);
        this.name = name;
        this.heldUntil = heldUntil;
    }

    /** The first name that could not be granted. */
    public String name() {
        return name;
    }

    /** The latest deadline of the blocking holders when the request gave up, or null if it was blocked by waiters. */
    public Instant heldUntil() {
        return heldUntil;
    }
}
