package org.leasehold.adapter;

import java.io.PrintWriter;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.locks.ReentrantLock;

import javax.security.auth.Subject;
import javax.transaction.xa.XAResource;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ConnectionEvent;
import jakarta.resource.spi.ConnectionEventListener;
import jakarta.resource.spi.ConnectionRequestInfo;
import jakarta.resource.spi.IllegalStateException;
import jakarta.resource.spi.LocalTransaction;
import jakarta.resource.spi.ManagedConnection;
import jakarta.resource.spi.ManagedConnectionMetaData;
import jakarta.transaction.TransactionSynchronizationRegistry;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseLostException;

/**
 * A physical connection: the link between handles, the unit of work of the transaction it is enlisted in (chosen by
 * its {@link ConnectionUnits}), and the resource manager. The container enlists its {@link XAResource} (or drives its
 * {@link LocalTransaction}); handles delegate their calls to it, which run under the connection's lock, so that they
 * never interleave with the branch's association and two-phase steps.
 */
final class LeaseholdManagedConnection implements ManagedConnection {
    private final LeaseholdManagedConnectionFactory factory;
    private final LeaseholdRuntime runtime;
    private final ResourceManager rm;
    private final Set<LeaseConnectionImpl> handles = new CopyOnWriteArraySet<>();
    private final List<ConnectionEventListener> listeners = new CopyOnWriteArrayList<>();
    private final LeaseholdXAResource xaResource;
    private final ReentrantLock lock = new ReentrantLock();
    private final ConnectionUnits units;
    private volatile boolean destroyed;
    /** The definition's {@code ResourcePrincipal}: what witnesses name when the container passes no principal. */
    private final String definitionPrincipal;
    private PrintWriter logWriter;

    LeaseholdManagedConnection(LeaseholdManagedConnectionFactory factory, LeaseholdRuntime runtime,
            String definitionPrincipal) {
        this.factory = factory;
        this.runtime = runtime;
        this.definitionPrincipal = definitionPrincipal;
        this.rm = runtime.resourceManager();
        this.units = new ConnectionUnits(rm.units());
        this.xaResource = new LeaseholdXAResource(lock, units, rm);
    }

    LeaseholdManagedConnectionFactory factory() {
        return factory;
    }

    /** The log this connection writes to and reads from. */
    String log() {
        return rm.log();
    }

    /**
     * Takes the leases {@code options} asks for, for the unit of work {@code handle}'s call belongs to; a branch's
     * leases are then held until its whole transaction completes (see {@link Completion}).
     */
    Lease acquire(LeaseConnectionImpl handle, LeaseOptions options) throws LeaseholdException {
        lock.lock();
        try {
            UnitOfWork u = usableUnit(handle);
            Lease lease = rm.acquire(u, options, handle.principal());
            if (u.xid != null && !u.holdsUntilCompletion()) {
                // Once per transaction branch: the registry is behind the adapter's lock, not for every acquire.
                rm.holdUntilCompletion(u, synchronizationRegistry());
            }
            return lease;
        } finally {
            lock.unlock();
        }
    }

    /** Appends {@code payloads} for the unit of work {@code handle}'s call belongs to. */
    void append(LeaseConnectionImpl handle, byte[][] payloads) throws LeaseholdException {
        lock.lock();
        try {
            rm.append(usableUnit(handle), payloads);
        } finally {
            lock.unlock();
        }
    }

    /** The leases of the unit of work {@code handle}'s calls belong to now. */
    List<Lease> leases(LeaseConnectionImpl handle) {
        UnitOfWork u = units.current(handle);
        return u == null ? List.of() : u.leases();
    }

    MessageStream read(ReadRequest request) throws LeaseholdException {
        return rm.read(request);
    }

    /** The view's state now: the latest snapshot and the messages after it (see {@link AdapterViews#read}). */
    <S> ViewState<S> view(ViewDefinition<S> definition) throws LeaseholdException {
        return runtime.views().read(definition);
    }

    /** Ends {@code handle}'s own unit of work (outside a transaction), if it has one: it closed or was invalidated. */
    void endOwnUnit(LeaseConnectionImpl handle) {
        UnitOfWork u = units.takeOwn(handle);
        if (u != null) {
            rm.endAuto(u);
        }
    }

    /**
     * The unit {@code handle}'s call belongs to, if it can still be used; a branch that lost a lease is marked for
     * rollback first.
     */
    private UnitOfWork usableUnit(LeaseConnectionImpl handle) throws LeaseLostException {
        UnitOfWork u = units.forCall(handle);
        if (u.lostReason() != null) {
            markRollbackOnly(u);
        }
        rm.checkUsable(u);
        return u;
    }

    private void markRollbackOnly(UnitOfWork u) {
        if (u.xid == null) {
            return;
        }
        TransactionSynchronizationRegistry tsr = synchronizationRegistry();
        if (tsr != null) {
            try {
                tsr.setRollbackOnly();
            } catch (java.lang.IllegalStateException e) {
                // Not on the transaction's thread, or already completing: prepare votes rollback anyway.
            }
        }
    }

    TransactionSynchronizationRegistry synchronizationRegistry() {
        LeaseholdResourceAdapter ra = factory.adapter();
        return ra == null ? null : ra.synchronizationRegistry();
    }

    @Override
    public Object getConnection(Subject subject, ConnectionRequestInfo info) throws ResourceException {
        if (destroyed) {
            throw new IllegalStateException("this Leasehold managed connection was destroyed");
        }
        String principal = CallerPrincipal.of(subject, factory);
        LeaseConnectionImpl handle = new LeaseConnectionImpl(this, principal != null ? principal : definitionPrincipal);
        handles.add(handle);
        return handle;
    }

    @Override
    public void associateConnection(Object connection) throws ResourceException {
        if (!(connection instanceof LeaseConnectionImpl h)) {
            throw new IllegalStateException("not a Leasehold connection handle: " + connection);
        }
        LeaseholdManagedConnection previous = h.managedConnection();
        if (previous != null) {
            previous.handles.remove(h);
            if (previous != this) {
                units.adoptOwn(h, previous.units.takeOwn(h));
            }
        }
        h.associate(this);
        handles.add(h);
    }

    void closed(LeaseConnectionImpl handle) {
        handles.remove(handle);
        ConnectionEvent event = new ConnectionEvent(this, ConnectionEvent.CONNECTION_CLOSED);
        event.setConnectionHandle(handle);
        for (ConnectionEventListener l : listeners) {
            l.connectionClosed(event);
        }
    }

    /** Tells the container this connection is unusable (a fatal error in the resource manager). */
    void failed(Exception e) {
        ConnectionEvent event = new ConnectionEvent(this, ConnectionEvent.CONNECTION_ERROR_OCCURRED, e);
        for (ConnectionEventListener l : listeners) {
            l.connectionErrorOccurred(event);
        }
    }

    @Override
    public void cleanup() {
        for (LeaseConnectionImpl h : handles) {
            h.invalidate();
        }
        handles.clear();
        UnitOfWork local = units.cleanup();
        if (local != null) {
            rm.rollbackLocal(local);
        }
    }

    @Override
    public void destroy() {
        cleanup();
        destroyed = true;
    }

    @Override
    public void addConnectionEventListener(ConnectionEventListener listener) {
        listeners.add(listener);
    }

    @Override
    public void removeConnectionEventListener(ConnectionEventListener listener) {
        listeners.remove(listener);
    }

    @Override
    public XAResource getXAResource() {
        return xaResource;
    }

    @Override
    public LocalTransaction getLocalTransaction() {
        return new LeaseholdLocalTransaction(units, rm);
    }

    @Override
    public ManagedConnectionMetaData getMetaData() {
        return new LeaseholdManagedConnectionMetaData(runtime);
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        this.logWriter = out;
    }

    @Override
    public PrintWriter getLogWriter() {
        return logWriter;
    }
}
