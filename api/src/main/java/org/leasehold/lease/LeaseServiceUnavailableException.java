package org.leasehold.lease;

import java.time.Instant;

/**
 * The service grants nothing yet: it restarted recently and waits out every lease its previous incarnation may
 * have granted (the quiet period), or it is unreachable. Retry at {@link #availableAt()}.
 */
public class LeaseServiceUnavailableException extends LeaseException {
    private static final long serialVersionUID = 1L;

    private final Instant availableAt;

    public LeaseServiceUnavailableException(Instant availableAt, String message) {
        super(message);
        this.availableAt = availableAt;
    }

    public LeaseServiceUnavailableException(Instant availableAt, String message, Throwable cause) {
        super(message, cause);
        this.availableAt = availableAt;
    }

    /** When the service expects to grant again, or null if unknown. */
    public Instant availableAt() {
        return availableAt;
    }
}
