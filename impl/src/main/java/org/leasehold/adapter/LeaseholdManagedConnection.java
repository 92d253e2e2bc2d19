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

/**
 * A physical connection: the link between handles, the unit of work of the transaction it is enlisted in, and the
 * resource manager. The container enlists its {@link XAResource} (or drives its {@link LocalTransaction}); handles
 * delegate to it.
 */
final class LeaseholdManagedConnection implements ManagedConnection {
    private final LeaseholdManagedConnectionFactory factory;
    private final LeaseholdRuntime runtime;
    private final ResourceManager rm;
    private final Set<LeaseConnectionImpl> handles = new CopyOnWriteArraySet<>();
    private final List<ConnectionEventListener> listeners = new CopyOnWriteArrayList<>();
    private final LeaseholdXAResource xaResource;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile UnitOfWork xaUnit;
    private volatile UnitOfWork localUnit;
    private volatile boolean destroyed;
    private PrintWriter logWriter;

    LeaseholdManagedConnection(LeaseholdManagedConnectionFactory factory, LeaseholdRuntime runtime) {
        this.factory = factory;
        this.runtime = runtime;
        this.rm = runtime.resourceManager();
        this.xaResource = new LeaseholdXAResource(this, rm);
    }

    LeaseholdManagedConnectionFactory factory() {
        return factory;
    }

    ResourceManager rm() {
        return rm;
    }

    ReentrantLock lock() {
        return lock;
    }

    void xaUnit(UnitOfWork u) {
        xaUnit = u;
    }

    /** The unit of work a handle's calls belong to: the XA branch, else the local transaction, else none (null). */
    UnitOfWork transactionUnit() {
        UnitOfWork u = xaUnit;
        return u != null ? u : localUnit;
    }

    void localUnit(UnitOfWork u) {
        localUnit = u;
    }

    UnitOfWork localUnit() {
        return localUnit;
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
        LeaseConnectionImpl handle = new LeaseConnectionImpl(this);
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
        xaUnit = null;
        UnitOfWork local = localUnit;
        if (local != null) {
            rm.rollbackLocal(local);
            localUnit = null;
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
        return new LeaseholdLocalTransaction(this);
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
