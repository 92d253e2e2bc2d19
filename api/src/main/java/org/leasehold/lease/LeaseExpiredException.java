package org.leasehold.lease;

import java.time.Instant;

/**
 * The lease's deadline passed before the call. The next holder treats it as expired (its floor is the deadline),
 * so nothing may be released or written under it any more.
 */
public class LeaseExpiredException extends LeaseException {
    private static final long serialVersionUID = 1L;

    private final Instant deadline;

    public LeaseExpiredException(Instant deadline, String message) {
        super(message);
        this.deadline = deadline;
    }

    public Instant deadline() {
        return deadline;
    }
}
