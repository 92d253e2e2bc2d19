package org.leasehold.session;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionListener;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Keeps leases alive by renewing them about every third of their lease time, for any {@link LeaseService}, and tells
 * a {@link SessionListener} what happens (Chubby's session events):
 * <ul>
 *   <li>{@link SessionEvent.Type#JEOPARDY} when a renewal fails for a reason that may pass (the service is
 *       unreachable, restarting, slow); renewals are then retried about every tenth of the lease time;
 *   <li>{@link SessionEvent.Type#SAFE} when a renewal succeeds after jeopardy;
 *   <li>{@link SessionEvent.Type#EXPIRED} when the deadline passes without a successful renewal (judged on the local
 *       clock, early by the service's clock uncertainty), or when the service says the lease is over.
 * </ul>
 * Renewals run on the keeper's own small thread pool; timers come from the injected {@link TimeSource} (local time).
 */
public final class LeaseKeeper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseKeeper.class.getName());
    private static final AtomicInteger THREADS = new AtomicInteger();

    private final LeaseService service;
    private final TimeSource local;
    private final Supplier<Duration> uncertainty;
    private final ExecutorService executor;

    /**
     * @param service     the service whose leases are kept
     * @param local       local time and timers
     * @param uncertainty how far the service's clock may be from the local estimate of it (zero in the same JVM)
     */
    public LeaseKeeper(LeaseService service, TimeSource local, Supplier<Duration> uncertainty) {
        this.service = service;
        this.local = local;
        this.uncertainty = uncertainty;
        this.executor = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "leasehold-keeper-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Starts keeping {@code lease}, renewing it for {@code leaseTime} each time (clamped by the service), and reporting
     * to {@code listener}.
     */
    public KeptLease keep(Lease lease, Duration leaseTime, SessionListener listener) {
        if (leaseTime.isZero() || leaseTime.isNegative()) {
            throw new IllegalArgumentException("the lease time to renew for must be positive: " + leaseTime);
        }
        Kept k = new Kept(lease, leaseTime, listener);
        k.start();
        return k;
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }

    private final class Kept implements KeptLease {
        private final Duration leaseTime;
        private final SessionListener listener;
        private volatile Lease lease;
        private boolean jeopardy;
        private boolean done;
        /** Local time (micros) after which the lease must be taken as lost. */
        private long localDeadline;
        private TimeSource.Timer renewTimer;
        private TimeSource.Timer expiryTimer;

        Kept(Lease lease, Duration leaseTime, SessionListener listener) {
            this.lease = lease;
            this.leaseTime = leaseTime;
            this.listener = listener;
        }

        void start() {
            synchronized (this) {
                armAfterGrant(lease);
            }
        }

        /** Sets the local deadline from the service deadline and schedules the next renewal. Holds the monitor. */
        private void armAfterGrant(Lease l) {
            long remaining = Micros.of(Duration.between(serviceNow(), l.deadline())) - Micros.of(uncertainty.get());
            long now = local.nowMicros();
            localDeadline = now + remaining;
            if (expiryTimer != null) {
                expiryTimer.cancel();
            }
            expiryTimer = local.schedule(localDeadline, this::onExpiryTimer);
            long period = Math.max(1_000, Micros.of(leaseTime) / 3);
            schedule(Math.min(now + period, now + Math.max(1_000, remaining / 2)));
        }

        private Instant serviceNow() {
            try {
                return service.now();
            } catch (RuntimeException e) {
                // Unknown service time: assume the deadline is as near as the lease time allows.
                return lease.deadline().minus(leaseTime);
            }
        }

        private void schedule(long atMicros) {
            if (renewTimer != null) {
                renewTimer.cancel();
            }
            renewTimer = local.schedule(atMicros, () -> {
                try {
                    executor.execute(this::renew);
                } catch (RejectedExecutionException e) {
                    // The keeper is closed: nothing more is renewed.
                }
            });
        }

        private void renew() {
            Lease current;
            synchronized (this) {
                if (done) {
                    return;
                }
                current = lease;
            }
            try {
                Lease renewed = service.renewFor(current, leaseTime);
                boolean wasJeopardy;
                synchronized (this) {
                    if (done) {
                        return;
                    }
                    lease = renewed;
                    wasJeopardy = jeopardy;
                    jeopardy = false;
                    armAfterGrant(renewed);
                }
                if (wasJeopardy) {
                    emit(SessionEvent.Type.SAFE, renewed, "a renewal succeeded again; the deadline is now "
                            + renewed.deadline());
                }
            } catch (LeaseExpiredException | StaleLeaseException | LeaseBrokenException e) {
                lost("the service says the lease is over: " + e.getMessage());
            } catch (LeaseException | RuntimeException e) {
                boolean first;
                long retryAt;
                synchronized (this) {
                    if (done) {
                        return;
                    }
                    first = !jeopardy;
                    jeopardy = true;
                    long now = local.nowMicros();
                    long step = Math.max(50_000, Micros.of(leaseTime) / 10);
                    retryAt = Math.min(now + step, Math.max(now + 1_000, localDeadline - 1_000));
                    schedule(retryAt);
                }
                if (first) {
                    emit(SessionEvent.Type.JEOPARDY, current, "renewing failed; retrying until the deadline "
                            + current.deadline() + ": " + e.getMessage());
                }
            }
        }

        private void onExpiryTimer() {
            synchronized (this) {
                if (done || local.nowMicros() < localDeadline) {
                    return;
                }
            }
            try {
                executor.execute(() -> lost("the deadline " + lease.deadline() + " passed without a successful renewal"));
            } catch (RejectedExecutionException e) {
                lost("the deadline " + lease.deadline() + " passed while the keeper was closing");
            }
        }

        private void lost(String why) {
            synchronized (this) {
                if (done) {
                    return;
                }
                done = true;
                cancelTimers();
            }
            emit(SessionEvent.Type.EXPIRED, lease, why);
        }

        private void cancelTimers() {
            if (renewTimer != null) {
                renewTimer.cancel();
            }
            if (expiryTimer != null) {
                expiryTimer.cancel();
            }
        }

        private void emit(SessionEvent.Type type, Lease l, String detail) {
            Instant at = serviceNow();
            LOG.log(type == SessionEvent.Type.SAFE ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                    "LEASEHOLD-3201 {0} for {1}: {2}", type, l.describe(), detail);
            try {
                listener.onEvent(new SessionEvent(type, l, at, detail));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-3202 a session listener threw on " + type + "; dropped", e);
            }
        }

        @Override
        public Lease lease() {
            return lease;
        }

        @Override
        public synchronized boolean isLive() {
            return !done;
        }

        @Override
        public void release(Instant watermark, String metadata) throws LeaseException {
            Lease l;
            synchronized (this) {
                if (done) {
                    throw new LeaseExpiredException(lease.deadline(), lease.describe()
                            + " is no longer kept (it was lost or already released): nothing to release");
                }
                done = true;
                cancelTimers();
                l = lease;
            }
            service.release(l, watermark, metadata);
        }

        @Override
        public void close() throws LeaseException {
            synchronized (this) {
                if (done) {
                    return;
                }
            }
            try {
                release(null, null);
            } catch (LeaseBrokenException e) {
                // A broken tentative lease never allowed writes; there is nothing to release.
            }
        }
    }
}
