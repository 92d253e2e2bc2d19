package org.leasehold.connector;

import java.io.Serializable;

import java.time.Instant;

import jakarta.resource.Referenceable;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewDefinition;
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

    /**
     * Registers {@code definition} with this factory's adapter, which from now on publishes a snapshot of the view
     * in the bag store every {@code ViewBuildIntervalMillis} (at the latest sealed boundary, on the container's work
     * manager), so that a read of the view ({@link LeaseLog#view}) costs one snapshot and a short tail, also on a
     * restarted server. A definition registered under the same name before (by an earlier deployment of the
     * application, say) is replaced. Unregister it when the application stops: the adapter would keep its classes.
     *
     * @throws IllegalArgumentException the view's name is not acceptable, or it has no version
     * @throws ConnectorException       the adapter is not running for this factory (the cause says why)
     */
    void registerView(ViewDefinition<?> definition) throws LeaseholdException;

    /**
     * Stops building snapshots of {@code definition}; false if it is not registered (never, or another definition of
     * the same name replaced it, which then stays registered).
     */
    boolean unregisterView(ViewDefinition<?> definition) throws LeaseholdException;

    /**
     * Publishes a snapshot of the registered view {@code name} now, at the latest sealed boundary (sealing the
     * buckets before it that are not sealed yet), unless one is published there already, and returns that boundary.
     * Any server may build any view: the first to publish a boundary
     * wins, and the others find identical bytes.
     *
     * @throws UnknownViewException                    no view is registered as {@code name}
     * @throws org.leasehold.bag.ViewEncodingException another builder published different bytes for the same
     *                                                 boundary: the definition is not deterministic
     * @throws ConnectorException                      the adapter is not running for this factory
     */
    Instant buildView(String name) throws LeaseholdException;
}
