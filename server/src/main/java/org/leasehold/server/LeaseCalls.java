package org.leasehold.server;

import java.time.Instant;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.server.LeaseAccess.Held;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.UpgradeRequest;

/**
 * Runs renewals, upgrades and releases of allowed held leases on the engine for both the gRPC calls and the session
 * stream, keeping the principal each grant belongs to, and counts every answer in the metrics.
 */
final class LeaseCalls {
    private static final System.Logger LOG = System.getLogger(LeaseCalls.class.getName());

    private final EngineHolder holder;
    private final GrantOwners owners;
    private final ServerMetrics metrics;

    LeaseCalls(EngineHolder holder, GrantOwners owners, ServerMetrics metrics) {
        this.holder = holder;
        this.owners = owners;
        this.metrics = metrics;
    }

    EngineHolder holder() {
        return holder;
    }

    /** Which principal each grant belongs to. */
    GrantOwners owners() {
        return owners;
    }

    ServerMetrics metrics() {
        return metrics;
    }

    /** Counts one answer of {@code op} with its {@code outcome} and its time since {@code startNanos}. */
    void done(String op, String outcome, long startNanos) {
        metrics.answered(op, outcome, (System.nanoTime() - startNanos) / 1e9);
    }

    /** The outcome label of a failed call in the metrics. */
    static String outcome(Throwable e) {
        if (e instanceof LeaseBusyException) {
            return "busy";
        } else if (e instanceof InvalidLeaseRequestException) {
            return "invalid";
        } else if (e instanceof LeaseServiceUnavailableException) {
            return "unavailable";
        } else if (e instanceof LeasePermissionDeniedException) {
            return "denied";
        } else if (e instanceof LeaseBrokenException) {
            return "broken";
        } else if (e instanceof LeaseExpiredException) {
            return "expired";
        } else if (e instanceof StaleLeaseException) {
            return "stale";
        } else if (e instanceof CancellationException) {
            return "withdrawn";
        }
        return "error";
    }

    static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /**
     * On a test clock, runs timers that became due meanwhile. A manual clock never runs a timer inside schedule(),
     * so a timer scheduled by this call just after another thread advanced the clock past it would otherwise wait
     * for the next advance; on the system clock nothing is needed.
     */
    void runDueTestTimers() {
        if (holder.testClock()) {
            holder.manual().runDue();
        }
    }

    /** Releases a grant nobody can receive any more ({@code why} says so in the log). */
    void releaseUnwanted(Lease lease, String why) {
        try {
            holder.engine().release(lease, null, null);
            owners.ended(lease);
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2103 released {0}: {1}", lease.describe(), why);
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2104 releasing {0} ({1}) failed: {2}", lease.describe(), why,
                    e.getMessage());
        }
    }

    Lease upgrade(Held held, UpgradeRequest req) throws LeaseException {
        Lease up = holder.engine().upgrade(held.lease(), ProtoCodec.upgradeDeadline(req));
        owners.moved(up);
        return up;
    }

    Lease renew(Held held, RenewRequest req) throws LeaseException {
        Instant holdUntil = ProtoCodec.renewHoldInDoubtUntil(req);
        Lease renewed = holder.engine().renew(held.lease(), ProtoCodec.renewDeadline(req),
                req.hasMetadata() ? req.getMetadata() : null);
        owners.moved(renewed);
        if (holdUntil != null) {
            renewed = holder.engine().holdInDoubt(renewed, holdUntil);
            // The engine renews it from now on without a call through here: its owner is kept until the hold's end.
            owners.moved(new Lease(renewed.holder(), renewed.mode(), renewed.kind(), renewed.grantedAt(), holdUntil,
                    renewed.grants()));
        }
        return renewed;
    }

    /** Releases {@code held} for {@code principal}; an admin's release of another principal's lease is logged. */
    Instant release(String principal, Held held, ReleaseRequest req) throws LeaseException {
        Instant watermark = ProtoCodec.releaseWatermark(req);
        Instant ended;
        try {
            ended = holder.engine().release(held.lease(), watermark, req.hasMetadata() ? req.getMetadata() : null);
        } finally {
            runDueTestTimers();
        }
        owners.ended(held.lease());
        if (held.otherOwner() != null) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2110 principal ''{0}'' (admin) released {1}, granted to "
                    + "principal ''{2}''", principal, held.lease().describe(), held.otherOwner());
        }
        return ended;
    }
}
