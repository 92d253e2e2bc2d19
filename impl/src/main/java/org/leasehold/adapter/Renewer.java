package org.leasehold.adapter;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Keeps the leases of live units of work alive: every third of the lease time a timer hands the unit's renewal to
 * the adapter's executor (the container's {@code WorkManager}). A lease that expired, was broken or is unknown to
 * the service is lost at once; other failures (the service unreachable) are retried, and the third failure in a row
 * loses the unit's leases. A lost unit cannot append, and its transaction votes rollback.
 */
final class Renewer {
    private static final System.Logger LOG = System.getLogger(Renewer.class.getName());
    static final int MAX_FAILURES = 3;

    private final LeaseService leases;
    private final TimeSource time;
    private final Executor executor;
    private final AdapterMetrics metrics;
    private final Map<UnitOfWork, Tracked> tracked = new ConcurrentHashMap<>();

    private static final class Tracked {
        final Duration leaseTime;
        volatile TimeSource.Timer timer;

        Tracked(Duration leaseTime) {
            this.leaseTime = leaseTime;
        }
    }

    Renewer(LeaseService leases, TimeSource time, Executor executor, AdapterMetrics metrics) {
        this.leases = leases;
        this.time = time;
        this.executor = executor;
        this.metrics = metrics;
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
        long period = Math.max(1_000L, Micros.of(t.leaseTime) / 3);
        t.timer = time.schedule(Micros.plus(time.nowMicros(), period), () -> {
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
            u.renewed();
            metrics.renewed();
        } catch (LeaseExpiredException | LeaseBrokenException | StaleLeaseException e) {
            u.lost(e.getMessage());
            metrics.leaseLost();
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4301 {0} lost a lease: {1}", u, e.getMessage());
            tracked.remove(u, t);
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
        if (n >= MAX_FAILURES) {
            u.lost(MAX_FAILURES + " renewals in a row failed, the last because " + why);
            metrics.leaseLost();
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4302 {0}: {1} renewals failed in a row ({2}); its leases are "
                    + "treated as lost", u, n, why);
            tracked.remove(u, t);
            return;
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4303 renewal {0} of {1} failed ({2}); retrying", n, u, why);
        if (tracked.get(u) == t) {
            schedule(u, t);
        }
    }
}
