package org.leasehold.lease;

/**
 * Receives {@link SessionEvent}s for leases kept alive by renewals. Called on the keeper's thread, one event at a
 * time per lease, in order; an implementation must return quickly and must not throw (a thrown exception is logged
 * and dropped). Every backend reports {@link SessionEvent.Type#EXPIRED}; a backend in the same JVM (the embedded
 * engine) never reports {@link SessionEvent.Type#JEOPARDY}, because its renewals cannot fail for lack of a network.
 */
@FunctionalInterface
public interface SessionListener {

    /** One event for one lease. */
    void onEvent(SessionEvent event);
}
