package org.leasehold.lease;

import java.time.Instant;

/**
 * A current holder of a name, as the admin view shows it.
 *
 * @param inDoubtUntil while the service keeps the lease held for a holder that may be unable to renew it (a prepared
 *                     transaction branch, {@link LeaseService#holdInDoubt}), until when; otherwise null
 */
public record HolderStatus(HolderId holder, LeaseMode mode, LeaseKind kind, long generation, CorrelationId correlationId,
        Instant grantedAt, Instant deadline, Instant inDoubtUntil) {

    /** A holder that is not held in doubt. */
    public HolderStatus(HolderId holder, LeaseMode mode, LeaseKind kind, long generation, CorrelationId correlationId,
            Instant grantedAt, Instant deadline) {
        this(holder, mode, kind, generation, correlationId, grantedAt, deadline, null);
    }
}
