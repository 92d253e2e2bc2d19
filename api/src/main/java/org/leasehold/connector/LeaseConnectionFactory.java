package org.leasehold.connector;

import java.io.Serializable;

import jakarta.resource.Referenceable;

import org.leasehold.LeaseholdException;
import org.leasehold.lease.SessionListener;

/**
 * Hands out {@link LeaseConnection}s of the resource adapter; look it up or inject it by its JNDI name (for example
 * {@code @Resource(lookup = "java:app/leasehold/Leases")}).
 */
public interface LeaseConnectionFactory extends Serializable, Referenceable {

    /** The JNDI name the CDI integration looks up when none is configured. */
    String DEFAULT_JNDI_NAME = "java:app/leasehold/Leases";

    /**
     * A connection for the current unit of work: inside a transaction, it is enlisted in it.
     *
     * @throws ConnectorException the adapter could not provide one (the cause says why)
     */
    LeaseConnection getConnection() throws LeaseholdException;

    /**
     * Subscribes {@code listener} to the session events (Chubby's jeopardy, safe and expired) of every lease this
     * factory's adapter keeps alive for its units of work: {@code JEOPARDY} when a renewal fails (the lease service is
     * unreachable or restarting; stop starting new work under those leases), {@code SAFE} when a renewal succeeds
     * again, {@code EXPIRED} when the leases are lost (the unit's transaction will roll back). Events come on the
     * adapter's renewal thread, one lease at a time; a listener must return quickly and not throw. Adding the same
     * listener twice makes it hear each event twice.
     *
     * @throws ConnectorException the adapter is not running for this factory (the cause says why)
     */
    void addSessionListener(SessionListener listener) throws LeaseholdException;

    /** Unsubscribes {@code listener} (once); false if it was not subscribed. */
    boolean removeSessionListener(SessionListener listener) throws LeaseholdException;

    /**
     * The state of this factory's adapter, for health checks: the bag store accepts writes, the lease service
     * answers, the lease servers' clocks are within bound (ready); the adapter could serve again without a restart
     * (live). Starts the adapter's runtime for this factory if it has not started; a runtime that cannot start is
     * reported as not ready, with the reason. Each call may write a few bytes to the bag store and, in remote mode,
     * call a lease server whose clock was not measured within the last second; it does not throw.
     */
    AdapterStatus status();
}
