package org.leasehold.adapter;

import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.leasehold.lease.Lease;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionListener;
import org.leasehold.time.TimeSource;

/**
 * The session events (L13) of the leases one adapter runtime keeps alive for its units of work, and the listeners
 * applications subscribed through {@link org.leasehold.connector.LeaseConnectionFactory#addSessionListener}. Events
 * are delivered on the renewer's thread, one lease at a time, in the order they happen; a listener that throws is
 * logged and the others still hear the event.
 */
final class SessionEvents {
    private static final System.Logger LOG = System.getLogger(SessionEvents.class.getName());

    private final TimeSource time;
    private final List<SessionListener> listeners = new CopyOnWriteArrayList<>();

    SessionEvents(TimeSource time) {
        this.time = time;
    }

    void add(SessionListener listener) {
        listeners.add(listener);
    }

    boolean remove(SessionListener listener) {
        return listeners.remove(listener);
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
