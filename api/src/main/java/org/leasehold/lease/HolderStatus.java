package org.leasehold.lease;

import java.time.Instant;

/** A current holder of a name, as the admin view shows it. */
public record HolderStatus(HolderId holder, LeaseMode mode, LeaseKind kind, long generation, CorrelationId correlationId,
        Instant grantedAt, Instant deadline) {
}
