package org.leasehold.lease;

import java.time.Instant;
import java.util.List;

/** A requester queued for a name, as the admin view shows it. */
public record WaiterStatus(HolderId holder, LeaseMode mode, LeaseKind kind, List<String> names, Instant since,
        Instant waitUntil) {
}
