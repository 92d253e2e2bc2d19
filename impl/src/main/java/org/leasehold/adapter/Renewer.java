package org.leasehold.adapter;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Keeps the leases of live units of work alive: every third of the lease time a timer hands the unit's renewal to
 * the adapter's executor (the container's {@code WorkManager}). A lease that expired, was broken or is unknown to
 * the service is lost at once; other failures (the service unreachable, the work manager refusing work) are retried
 * every tenth of the lease time for as long as the unit's earliest deadline allows, and a failure after which no
 * retry fits before that deadline loses the unit's leases. A lost unit cannot append, and its transaction votes
 * rollback.
 *
 * <p>Subscribed applications hear it as session events ({@link SessionEvents}): {@code JEOPARDY} at the first failed
 * renewal of a unit, {@code SAFE} when a renewal succeeds after it, {@code EXPIRED} when its leases are lost.
 */
final class Renewer {
    private static final System.Logger LOG = System.getLogger(Renewer.class.getName());

    private final LeaseService leases;
    private final TimeSource time;
    private final Executor executor;
    private final AdapterMetrics metrics;
    private final SessionEvents events;
    private final Map<UnitOfWork, Tracked> tracked = new ConcurrentHashMap<>();

    private static final class Tracked {
        final Duration leaseTime;
        volatile TimeSource.Timer timer;

        Tracked(Duration leaseTime) {
            this.leaseTime = leaseTime;
        }
    }

    Renewer(LeaseService leases, TimeSource time, Executor executor, AdapterMetrics metrics, SessionEvents events) {
        this.leases = leases;
        this.time = time;
        this.executor = executor;
        this.metrics = metrics;
        this.events = events;
    }

    /** Starts (or keeps) renewing {@code u}'s leases, each for {@code leaseTime}. */
    void track(UnitOfWork u, Duration leaseTime) {
        Tracked t = tracked.computeIfAbsent(u, k -> new Tracked(leaseTime));
        if (t.timer == null) {
            schedule(u, t);
        }
    }

    void untrack(UnitOfWork u) {
        Tracked t = tracked.remove(u);
        if (t != null && t.timer != null) {
            t.timer.cancel();
        }
    }

    int tracking() {
        return tracked.size();
    }

    private void schedule(UnitOfWork u, Tracked t) {
        schedule(u, t, Micros.plus(time.nowMicros(), Math.max(1_000L, Micros.of(t.leaseTime) / 3)));
    }

    private void schedule(UnitOfWork u, Tracked t, long atMicros) {
        t.timer = time.schedule(atMicros, () -> {
            try {
                executor.execute(() -> renew(u, t));
            } catch (RejectedExecutionException e) {
                failed(u, t, "the work manager refused the renewal: " + e.getMessage());
            }
        });
    }

    private void renew(UnitOfWork u, Tracked t) {
        if (tracked.get(u) != t || u.state() == UnitOfWork.State.ENDED || u.lostReason() != null) {
            return;
        }
        try {
            for (Lease l : u.leases()) {
                Lease renewed = leases.renew(l, time.now().plus(t.leaseTime), null);
                u.replace(l, renewed);
            }
            int failures = u.renewalFailures();
            u.renewed();
            metrics.renewed();
            if (failures > 0) {
                // JEOPARDY was told at the first of them.
                metrics.sessionSafe();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4305 {0} renewed its leases after {1} failed renewals: "
                        + "safe again", u, failures);
                events.fire(SessionEvent.Type.SAFE, u.leases(), "renewed after " + failures + " failed renewal"
                        + (failures == 1 ? "" : "s"));
            }
        } catch (LeaseExpiredException | LeaseBrokenException | StaleLeaseException e) {
            u.lost(e.getMessage());
            metrics.leaseLost();
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4301 {0} lost a lease: {1}", u, e.getMessage());
            tracked.remove(u, t);
            events.fire(SessionEvent.Type.EXPIRED, u.leases(), e.getMessage());
            return;
        } catch (LeaseException | RuntimeException e) {
            failed(u, t, e.toString());
            return;
        }
        if (tracked.get(u) == t) {
            schedule(u, t);
        }
    }

    private void failed(UnitOfWork u, Tracked t, String why) {
        int n = u.renewalFailed();
        metrics.renewalFailed();
        List<Lease> held = u.leases();
        Instant deadline = null;
        for (Lease l : held) {
            deadline = deadline == null || l.deadline().isBefore(deadline) ? l.deadline() : deadline;
        }
        long retryAt = Micros.plus(time.nowMicros(), Math.max(1_000L, Micros.of(t.leaseTime) / 10));
        if (deadline != null && !Micros.toInstant(retryAt).isBefore(deadline)) {
            String reason = n + " renewals in a row failed, the last because " + why + "; the leases end at " + deadline
                    + ", before another try";
            u.lost(reason);
            metrics.leaseLost();
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4302 {0}: {1}; its leases are treated as lost", u, reason);
            tracked.remove(u, t);
            events.fire(SessionEvent.Type.EXPIRED, held, reason);
            return;
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4303 renewal {0} of {1} failed ({2}); retrying at {3}", n, u, why,
                Micros.toInstant(retryAt));
        if (n == 1) {
            metrics.sessionJeopardy();
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4304 {0}: a renewal failed ({1}); its leases are in jeopardy "
                    + "until a renewal succeeds, and lost if none has by {2}", u, why, deadline);
            events.fire(SessionEvent.Type.JEOPARDY, held, "a renewal failed: " + why + "; retrying until " + deadline);
        }
        if (tracked.get(u) == t) {
            schedule(u, t, retryAt);
        }
    }
}
