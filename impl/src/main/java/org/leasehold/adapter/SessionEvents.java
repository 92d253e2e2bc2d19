package org.leasehold.adapter;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.lease.Lease;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionListener;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.TimeSource;

/**
 * The session events (L13) of the leases one adapter runtime keeps alive for its units of work (on the
 * {@link LeaseKeeper}), and the listeners applications subscribed through
 * {@link org.leasehold.connector.LeaseConnectionFactory#addSessionListener}. Each unit's {@link #watcher} counts what
 * the keeper reports, logs it, marks the unit lost when its leases are (it cannot append any more, and its
 * transaction votes rollback), and tells the listeners: {@code JEOPARDY} at the first failed renewal of a unit,
 * {@code SAFE} when a renewal succeeds after it, {@code EXPIRED} when its leases are lost. Events are delivered on
 * the renewing thread, one lease at a time, in the order they happen; a listener that throws is logged and the
 * others still hear the event.
 */
final class SessionEvents {
    private static final System.Logger LOG = System.getLogger(SessionEvents.class.getName());

    private final TimeSource time;
    private final AdapterMetrics metrics;
    private final List<SessionListener> listeners = new CopyOnWriteArrayList<>();

    SessionEvents(TimeSource time, AdapterMetrics metrics) {
        this.time = time;
        this.metrics = metrics;
    }

    void add(SessionListener listener) {
        listeners.add(listener);
    }

    boolean remove(SessionListener listener) {
        return listeners.remove(listener);
    }

    /** What the keeper of {@code u}'s leases reports goes to the metrics, the log, the unit and the listeners. */
    LeaseKeeper.Watcher watcher(UnitOfWork u) {
        return new LeaseKeeper.Watcher() {
            @Override
            public void renewed(List<Lease> leases) {
                metrics.renewed();
            }

            @Override
            public void retrying(int failures, Throwable cause, Instant retryAt) {
                metrics.renewalFailed();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4303 renewal {0} of {1} failed ({2}); retrying at {3}",
                        failures, u, why(cause), retryAt);
            }

            @Override
            public void event(LeaseKeeper.Event e) {
                switch (e.type()) {
                    case JEOPARDY -> {
                        metrics.sessionJeopardy();
                        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4304 {0}: a renewal failed ({1}); its leases are "
                                + "in jeopardy until a renewal succeeds, and lost if none has by {2}", u, why(e.cause()),
                                e.deadline());
                        fire(SessionEvent.Type.JEOPARDY, e.leases(), "a renewal failed: " + why(e.cause())
                                + "; retrying until " + e.deadline());
                    }
                    case SAFE -> {
                        metrics.sessionSafe();
                        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4305 {0} renewed its leases after {1} failed "
                                + "renewals: safe again", u, e.failures());
                        fire(SessionEvent.Type.SAFE, e.leases(), "renewed after " + e.failures() + " failed renewal"
                                + (e.failures() == 1 ? "" : "s"));
                    }
                    case EXPIRED -> {
                        if (e.byService()) {
                            String reason = e.cause().getMessage();
                            u.lost(reason);
                            metrics.leaseLost();
                            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4301 {0} lost a lease: {1}", u, reason);
                            fire(SessionEvent.Type.EXPIRED, e.leases(), reason);
                        } else {
                            String reason = e.failures() == 0 ? "no renewal ran before the leases ended at "
                                    + e.deadline() : e.failures() + " renewals in a row failed, the last because "
                                    + why(e.cause()) + "; the leases ended at " + e.deadline() + ", before another try";
                            u.lost(reason);
                            metrics.leaseLost();
                            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4302 {0}: {1}; its leases are treated as "
                                    + "lost", u, reason);
                            fire(SessionEvent.Type.EXPIRED, e.leases(), reason);
                        }
                    }
                    default -> throw new IllegalStateException("unknown session event " + e.type());
                }
            }
        };
    }

    private static String why(Throwable cause) {
        if (cause instanceof RejectedExecutionException r) {
            return "the work manager refused the renewal: " + r.getMessage();
        }
        return String.valueOf(cause);
    }

    /** Tells every listener {@code type} for each of {@code leases}, with {@code detail} for people. */
    void fire(SessionEvent.Type type, List<Lease> leases, String detail) {
        if (listeners.isEmpty() || leases.isEmpty()) {
            return;
        }
        Instant at = time.now();
        for (Lease lease : leases) {
            SessionEvent event = new SessionEvent(type, lease, at, detail);
            for (SessionListener l : listeners) {
                try {
                    l.onEvent(event);
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4306 a session listener ({0}) failed on {1} of "
                            + "{2}: {3}; the event was dropped for it", l, type, lease.describe(), e.toString());
                }
            }
        }
    }
}
