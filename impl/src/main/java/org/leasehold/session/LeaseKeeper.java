package org.leasehold.session;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.Executor;
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
 * what happens (Chubby's session events):
 * <ul>
 *   <li>{@link SessionEvent.Type#JEOPARDY} when a renewal fails for a reason that may pass (the service is
 *       unreachable, restarting, slow, or the executor refused the renewal); renewals are then retried about every
 *       tenth of the lease time, the last just before the deadline;
 *   <li>{@link SessionEvent.Type#SAFE} when a renewal succeeds after jeopardy;
 *   <li>{@link SessionEvent.Type#EXPIRED} when the deadline passes without a successful renewal (judged on the local
 *       clock, early by the service's clock uncertainty), or when the service says the lease is over.
 * </ul>
 * It keeps one lease for an application ({@link #keep}, the events to a {@link SessionListener}), or a group of
 * leases that one holder adds to and renews together ({@link #keepAll}, the events to a {@link Watcher}: the
 * resource adapter keeps each unit of work's leases so). Renewals run on the keeper's own small thread pool, or on
 * the executor it was given (a container's work manager); timers come from the injected {@link TimeSource} (local
 * time).
 */
public final class LeaseKeeper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseKeeper.class.getName());
    private static final AtomicInteger THREADS = new AtomicInteger();
    /** The shortest step between a failed renewal and its retry. */
    private static final long MIN_RETRY_MICROS = 50_000;

    private final LeaseService service;
    private final TimeSource local;
    private final Supplier<Duration> uncertainty;
    private final Executor executor;
    /** The keeper's own pool, shut down by {@link #close()}; null when renewals run on an executor it was given. */
    private final ExecutorService pool;
    private volatile boolean closed;

    /**
     * A keeper with its own two renewal threads.
     *
     * @param service     the service whose leases are kept
     * @param local       local time and timers
     * @param uncertainty how far the service's clock may be from the local estimate of it (zero in the same JVM)
     */
    public LeaseKeeper(LeaseService service, TimeSource local, Supplier<Duration> uncertainty) {
        this.service = service;
        this.local = local;
        this.uncertainty = uncertainty;
        this.pool = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "leasehold-keeper-" + THREADS.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.executor = pool;
    }

    /**
     * A keeper whose renewals run on {@code executor}; an executor that refuses a renewal (throws
     * {@link RejectedExecutionException}) counts as a failed renewal, retried like any other.
     *
     * @param service     the service whose leases are kept
     * @param local       local time and timers
     * @param uncertainty how far the service's clock may be from the local estimate of it (zero in the same JVM)
     * @param executor    where renewals run (a container's work manager, say); not shut down by {@link #close()}
     */
    public LeaseKeeper(LeaseService service, TimeSource local, Supplier<Duration> uncertainty, Executor executor) {
        this.service = service;
        this.local = local;
        this.uncertainty = uncertainty;
        this.pool = null;
        this.executor = executor;
    }

    /**
     * Starts keeping {@code lease}, renewing it for {@code leaseTime} each time (clamped by the service), and reporting
     * to {@code listener}.
     */
    public KeptLease keep(Lease lease, Duration leaseTime, SessionListener listener) {
        checkLeaseTime(leaseTime);
        Single s = new Single(lease, listener);
        s.group = new Group(s, leaseTime, s);
        s.group.start();
        return s;
    }

    /**
     * Starts keeping the leases {@code holding} holds, now and as it adds more, each renewed for {@code leaseTime};
     * {@code watcher} hears every renewal, failure and event. The group is kept until {@link Keeping#stop()}, until
     * {@link Holding#over()} says it is over, or until its leases are lost.
     */
    public Keeping keepAll(Holding holding, Duration leaseTime, Watcher watcher) {
        checkLeaseTime(leaseTime);
        Group g = new Group(holding, leaseTime, watcher);
        g.start();
        return g;
    }

    private static void checkLeaseTime(Duration leaseTime) {
        if (leaseTime.isZero() || leaseTime.isNegative()) {
            throw new IllegalArgumentException("the lease time to renew for must be positive: " + leaseTime);
        }
    }

    /** Stops renewing: timers that come due do nothing, and the keeper's own threads (if it has them) end. */
    @Override
    public void close() {
        closed = true;
        if (pool != null) {
            pool.shutdownNow();
        }
    }

    /** The leases of one holder, kept together: the keeper reads them at every renewal and writes the renewed ones back. */
    public interface Holding {

        /** The leases to renew now (at least one once kept). */
        List<Lease> leases();

        /** Replaces {@code before} by {@code after}, its renewed value (same names and generations). */
        void replace(Lease before, Lease after);

        /** True when the holder no longer needs its leases kept (it ended, or gave them up): renewing stops quietly. */
        boolean over();
    }

    /** Hears what happens to a group of kept leases; called on the renewing thread, outside the keeper's locks. */
    public interface Watcher {

        /** Every lease of the group was renewed; {@code leases} are their new values. */
        default void renewed(List<Lease> leases) {
        }

        /** The renewal failed for the {@code failures}-th time in a row; it is retried at {@code retryAt}. */
        default void retrying(int failures, Throwable cause, Instant retryAt) {
        }

        /** Jeopardy, safe or expired, with what led to it. */
        void event(Event event);
    }

    /**
     * A session event of a group of kept leases.
     *
     * @param type     what happened
     * @param leases   the group's leases: as held at the failure (jeopardy), as renewed (safe), as last held (expired)
     * @param failures renewals failed in a row: 1 at jeopardy, the count before the success at safe, the count so far
     *                 at expired
     * @param cause    the failure (jeopardy), the service's answer that the lease is over or the last failure (expired),
     *                 or null
     * @param byService at expired: true when the service said the lease is over, false when the deadline passed
     * @param deadline the deadline of the earliest lease: until when renewals are retried (jeopardy), the new one
     *                 (safe), the one that passed or was reached (expired)
     */
    public record Event(SessionEvent.Type type, List<Lease> leases, int failures, Throwable cause, boolean byService,
            Instant deadline) {
    }

    /** A group of leases being kept. */
    public interface Keeping {

        /** Stops renewing, without an event; the leases are left as they are (releasing them is the holder's). */
        void stop();

        /** True until stopped, over or lost. */
        boolean isLive();
    }

    private final class Group implements Keeping {
        private final Holding holding;
        private final Duration leaseTime;
        private final Watcher watcher;
        private int failures;
        private Throwable lastFailure;
        private boolean done;
        /** Local time (micros) after which the leases must be taken as lost. */
        private long localDeadline;
        /** The service deadline {@link #localDeadline} was set from. */
        private Instant armedFor;
        private TimeSource.Timer renewTimer;
        private TimeSource.Timer expiryTimer;

        Group(Holding holding, Duration leaseTime, Watcher watcher) {
            this.holding = holding;
            this.leaseTime = leaseTime;
            this.watcher = watcher;
        }

        void start() {
            synchronized (this) {
                armAfterGrant(holding.leases());
            }
        }

        /** Sets the local deadline from the service deadline and schedules the next renewal. Holds the monitor. */
        private void armAfterGrant(List<Lease> leases) {
            long now = local.nowMicros();
            long remaining = armExpiry(leases, now);
            long period = Math.max(1_000, Micros.of(leaseTime) / 3);
            schedule(Math.min(now + period, now + Math.max(1_000, remaining / 2)));
        }

        /** Sets the local deadline from the earliest service deadline and arms its timer; the time remaining. */
        private long armExpiry(List<Lease> leases, long now) {
            Instant deadline = earliest(leases);
            long remaining = deadline == null ? Micros.of(leaseTime)
                    : Micros.of(Duration.between(serviceNow(leases), deadline)) - Micros.of(uncertainty.get());
            armedFor = deadline;
            localDeadline = now + remaining;
            if (expiryTimer != null) {
                expiryTimer.cancel();
            }
            expiryTimer = local.schedule(localDeadline, this::onExpiryTimer);
            return remaining;
        }

        private Instant serviceNow(List<Lease> leases) {
            try {
                return service.now();
            } catch (RuntimeException e) {
                // Unknown service time: assume the deadline is as near as the lease time allows.
                Instant deadline = earliest(leases);
                return deadline == null ? local.now() : deadline.minus(leaseTime);
            }
        }

        private void schedule(long atMicros) {
            if (renewTimer != null) {
                renewTimer.cancel();
            }
            renewTimer = local.schedule(atMicros, () -> {
                if (closed) {
                    return;
                }
                try {
                    executor.execute(this::renew);
                } catch (RejectedExecutionException e) {
                    if (!closed) {
                        failed(holding.leases(), e);
                    }
                }
            });
        }

        private boolean over() {
            if (!done && holding.over()) {
                done = true;
                cancelTimers();
            }
            return done;
        }

        private void renew() {
            synchronized (this) {
                if (over()) {
                    return;
                }
            }
            List<Lease> held = holding.leases();
            try {
                for (Lease l : held) {
                    holding.replace(l, service.renewFor(l, leaseTime));
                }
            } catch (LeaseExpiredException | StaleLeaseException | LeaseBrokenException e) {
                lost(e, true);
                return;
            } catch (LeaseException | RuntimeException e) {
                failed(held, e);
                return;
            }
            List<Lease> renewed = holding.leases();
            int before;
            synchronized (this) {
                if (done) {
                    return;
                }
                before = failures;
                failures = 0;
                lastFailure = null;
                armAfterGrant(renewed);
            }
            watcher.renewed(renewed);
            if (before > 0) {
                // JEOPARDY was told at the first of the failures.
                watcher.event(new Event(SessionEvent.Type.SAFE, renewed, before, null, false, earliest(renewed)));
            }
        }

        private void failed(List<Lease> held, Throwable cause) {
            int n;
            long retryAt;
            synchronized (this) {
                if (over()) {
                    return;
                }
                n = ++failures;
                lastFailure = cause;
                long now = local.nowMicros();
                long step = Math.max(MIN_RETRY_MICROS, Micros.of(leaseTime) / 10);
                retryAt = Math.min(now + step, Math.max(now + 1_000, localDeadline - 1_000));
                schedule(retryAt);
            }
            watcher.retrying(n, cause, Micros.toInstant(retryAt));
            if (n == 1) {
                watcher.event(new Event(SessionEvent.Type.JEOPARDY, held, 1, cause, false, earliest(held)));
            }
        }

        private void onExpiryTimer() {
            synchronized (this) {
                if (over() || local.nowMicros() < localDeadline) {
                    return;
                }
                List<Lease> held = holding.leases();
                Instant deadline = earliest(held);
                if (deadline != null && armedFor != null && deadline.isAfter(armedFor)
                        && armExpiry(held, local.nowMicros()) > 0) {
                    // The holder renewed or upgraded its leases itself meanwhile (at prepare, say).
                    return;
                }
            }
            try {
                executor.execute(() -> lost(null, false));
            } catch (RejectedExecutionException e) {
                lost(null, false);
            }
        }

        private void lost(Throwable serviceSaid, boolean byService) {
            int n;
            Throwable cause;
            synchronized (this) {
                if (done) {
                    return;
                }
                done = true;
                cancelTimers();
                n = failures;
                cause = byService ? serviceSaid : lastFailure;
            }
            List<Lease> held = holding.leases();
            watcher.event(new Event(SessionEvent.Type.EXPIRED, held, n, cause, byService, earliest(held)));
        }

        private void cancelTimers() {
            if (renewTimer != null) {
                renewTimer.cancel();
            }
            if (expiryTimer != null) {
                expiryTimer.cancel();
            }
        }

        @Override
        public void stop() {
            synchronized (this) {
                done = true;
                cancelTimers();
            }
        }

        @Override
        public synchronized boolean isLive() {
            return !done;
        }
    }

    private static Instant earliest(List<Lease> leases) {
        Instant min = null;
        for (Lease l : leases) {
            min = min == null || l.deadline().isBefore(min) ? l.deadline() : min;
        }
        return min;
    }

    /** One lease kept for an application: the group of one, with its listener. */
    private final class Single implements KeptLease, Holding, Watcher {
        private final SessionListener listener;
        private volatile Lease lease;
        private volatile boolean released;
        private Group group;

        Single(Lease lease, SessionListener listener) {
            this.lease = lease;
            this.listener = listener;
        }

        @Override
        public List<Lease> leases() {
            return List.of(lease);
        }

        @Override
        public void replace(Lease before, Lease after) {
            lease = after;
        }

        @Override
        public boolean over() {
            return released;
        }

        @Override
        public void event(Event e) {
            Lease l = e.leases().get(0);
            String detail = switch (e.type()) {
                case JEOPARDY -> "renewing failed; retrying until the deadline " + l.deadline() + ": "
                        + e.cause().getMessage();
                case SAFE -> "a renewal succeeded again; the deadline is now " + l.deadline();
                case EXPIRED -> e.byService() ? "the service says the lease is over: " + e.cause().getMessage()
                        : "the deadline " + l.deadline() + " passed without a successful renewal";
            };
            Instant at = group.serviceNow(e.leases());
            LOG.log(e.type() == SessionEvent.Type.SAFE ? System.Logger.Level.INFO : System.Logger.Level.WARNING,
                    "LEASEHOLD-3201 {0} for {1}: {2}", e.type(), l.describe(), detail);
            try {
                listener.onEvent(new SessionEvent(e.type(), l, at, detail));
            } catch (RuntimeException ex) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-3202 a session listener threw on " + e.type()
                        + "; dropped", ex);
            }
        }

        @Override
        public Lease lease() {
            return lease;
        }

        @Override
        public boolean isLive() {
            return group.isLive();
        }

        @Override
        public void release(Instant watermark, String metadata) throws LeaseException {
            Lease l;
            synchronized (group) {
                if (!group.isLive()) {
                    throw new LeaseExpiredException(lease.deadline(), lease.describe()
                            + " is no longer kept (it was lost or already released): nothing to release");
                }
                released = true;
                group.stop();
                l = lease;
            }
            service.release(l, watermark, metadata);
        }

        @Override
        public void close() throws LeaseException {
            if (!isLive()) {
                return;
            }
            try {
                release(null, null);
            } catch (LeaseBrokenException e) {
                // A broken tentative lease never allowed writes; there is nothing to release.
            }
        }
    }
}
