package org.leasehold.lease;

/**
 * The call named a lease the service does not hold as current: a stale generation (already released or replaced),
 * or another holder's identity. Refused; nothing changed.
 */
public class StaleLeaseException extends LeaseException {
    private static final long serialVersionUID = 1L;

    public StaleLeaseException(String message) {
        super(message);
    }
}
