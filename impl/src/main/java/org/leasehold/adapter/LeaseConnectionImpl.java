package org.leasehold.adapter;

import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.ConnectionClosedException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseLostException;

/**
 * The handle an application holds: thin, it delegates to its managed connection, fails once closed, and tells the
 * container when it is closed. Outside a transaction it owns its own unit of work, ended when it closes.
 */
final class LeaseConnectionImpl implements LeaseConnection {
    private volatile LeaseholdManagedConnection mc;
    private volatile boolean closed;
    private UnitOfWork auto;

    LeaseConnectionImpl(LeaseholdManagedConnection mc) {
        this.mc = mc;
    }

    LeaseholdManagedConnection managedConnection() {
        return mc;
    }

    void associate(LeaseholdManagedConnection to) {
        this.mc = to;
    }

    /** The container took the connection back: the handle is dead, and its own unit ends. */
    void invalidate() {
        endAuto();
        closed = true;
    }

    private LeaseholdManagedConnection open() throws ConnectionClosedException {
        LeaseholdManagedConnection m = mc;
        if (closed || m == null) {
            throw new ConnectionClosedException("this Leasehold connection is closed: get a new one from the factory");
        }
        return m;
    }

    private UnitOfWork unit(LeaseholdManagedConnection m) throws LeaseLostException {
        UnitOfWork u = m.transactionUnit();
        if (u == null) {
            if (auto == null) {
                auto = m.rm().beginAuto();
            }
            u = auto;
        }
        if (u.lostReason() != null) {
            markRollbackOnly(m, u);
        }
        m.rm().checkUsable(u);
        return u;
    }

    private static void markRollbackOnly(LeaseholdManagedConnection m, UnitOfWork u) {
        if (u.xid == null) {
            return;
        }
        jakarta.transaction.TransactionSynchronizationRegistry tsr = m.synchronizationRegistry();
        if (tsr != null) {
            try {
                tsr.setRollbackOnly();
            } catch (java.lang.IllegalStateException e) {
                // Not on the transaction's thread, or already completing: prepare votes rollback anyway.
            }
        }
    }

    @Override
    public String log() {
        return mc.rm().log();
    }

    @Override
    public Lease acquire(String... names) throws LeaseholdException {
        return acquire(LeaseOptions.of(names));
    }

    @Override
    public Lease acquire(LeaseOptions options) throws LeaseholdException {
        LeaseholdManagedConnection m = open();
        m.lock().lock();
        try {
            UnitOfWork u = unit(m);
            Lease lease = m.rm().acquire(u, options);
            if (u.xid != null && !u.holdsUntilCompletion()) {
                // Once per transaction branch: the registry is behind the adapter's lock, not for every acquire.
                m.rm().holdUntilCompletion(u, m.synchronizationRegistry());
            }
            return lease;
        } finally {
            m.lock().unlock();
        }
    }

    @Override
    public void append(byte[]... payloads) throws LeaseholdException {
        LeaseholdManagedConnection m = open();
        m.lock().lock();
        try {
            m.rm().append(unit(m), payloads);
        } finally {
            m.lock().unlock();
        }
    }

    @Override
    public List<Lease> leases() throws LeaseholdException {
        LeaseholdManagedConnection m = open();
        UnitOfWork u = m.transactionUnit();
        if (u == null) {
            u = auto;
        }
        return u == null ? List.of() : u.leases();
    }

    @Override
    public MessageStream read(ReadRequest request) throws LeaseholdException {
        return open().rm().read(request);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        endAuto();
        closed = true;
        LeaseholdManagedConnection m = mc;
        if (m != null) {
            m.closed(this);
        }
    }

    private void endAuto() {
        UnitOfWork u = auto;
        auto = null;
        LeaseholdManagedConnection m = mc;
        if (u != null && m != null) {
            m.rm().endAuto(u);
        }
    }
}
