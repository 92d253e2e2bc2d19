package org.leasehold.lease;

import org.leasehold.LeaseholdException;

/** A lease operation failed; the subclass says how. The service's state is as it was before the call. */
public class LeaseException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    public LeaseException(String message) {
        super(message);
    }

    public LeaseException(String message, Throwable cause) {
        super(message, cause);
    }
}
