package org.leasehold.remote;

import org.leasehold.lease.LeaseException;

/**
 * A call of the {@link org.leasehold.lease.LeaseService} interface that declares no checked exception ({@code now},
 * {@code availableFrom}, {@code check}, {@code inspect}) could not be answered by the lease server. The cause says
 * why (unreachable, not authenticated, refused).
 */
public final class RemoteCallFailedException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RemoteCallFailedException(String message, LeaseException cause) {
        super(message + ": " + cause.getMessage(), cause);
    }
}
