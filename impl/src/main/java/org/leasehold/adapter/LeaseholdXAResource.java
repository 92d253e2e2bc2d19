package org.leasehold.adapter;

import java.util.concurrent.locks.Lock;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * The transaction manager's view of a managed connection. Every call holds the managed connection's lock, so a
 * branch's association and its two-phase steps never interleave with the connection's own calls. The connection's
 * {@link ConnectionUnits} hold the association; branches live in the resource manager's {@link Units}, not here, so
 * the transaction manager may finish a branch through any connection of the same resource manager
 * ({@link #isSameRM}) or during recovery.
 */
final class LeaseholdXAResource implements XAResource {
    private final Lock lock;
    private final ConnectionUnits units;
    private final ResourceManager rm;
    private volatile int timeoutSeconds;

    LeaseholdXAResource(Lock lock, ConnectionUnits units, ResourceManager rm) {
        this.lock = lock;
        this.units = units;
        this.rm = rm;
    }

    @Override
    public void start(Xid xid, int flags) throws XAException {
        lock.lock();
        try {
            units.start(XidKey.of(xid), flags);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void end(Xid xid, int flags) throws XAException {
        lock.lock();
        try {
            units.end(XidKey.of(xid), flags);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int prepare(Xid xid) throws XAException {
        lock.lock();
        try {
            return rm.prepare(XidKey.of(xid));
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void commit(Xid xid, boolean onePhase) throws XAException {
        lock.lock();
        try {
            rm.commit(XidKey.of(xid), onePhase);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void rollback(Xid xid) throws XAException {
        lock.lock();
        try {
            rm.rollback(XidKey.of(xid));
        } finally {
            lock.unlock();
        }
    }

    @Override
    public Xid[] recover(int flags) throws XAException {
        lock.lock();
        try {
            return rm.recover(flags);
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void forget(Xid xid) throws XAException {
        lock.lock();
        try {
            rm.forget(XidKey.of(xid));
        } finally {
            lock.unlock();
        }
    }

    /** Same resource manager: the same bag store log with the same lease service. */
    @Override
    public boolean isSameRM(XAResource other) {
        return other instanceof LeaseholdXAResource o && o.rm == rm;
    }

    @Override
    public int getTransactionTimeout() {
        return timeoutSeconds;
    }

    @Override
    public boolean setTransactionTimeout(int seconds) {
        timeoutSeconds = seconds;
        return true;
    }
}
