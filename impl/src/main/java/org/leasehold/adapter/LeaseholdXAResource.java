package org.leasehold.adapter;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * The transaction manager's view of a managed connection. Every call holds the managed connection's lock, so a
 * branch's association and its two-phase steps never interleave with the connection's own calls. Branches live in
 * the {@link ResourceManager}, not here, so the transaction manager may finish a branch through any connection of
 * the same resource manager ({@link #isSameRM}) or during recovery.
 */
final class LeaseholdXAResource implements XAResource {
    private final LeaseholdManagedConnection mc;
    private final ResourceManager rm;
    private volatile int timeoutSeconds;

    LeaseholdXAResource(LeaseholdManagedConnection mc, ResourceManager rm) {
        this.mc = mc;
        this.rm = rm;
    }

    @Override
    public void start(Xid xid, int flags) throws XAException {
        mc.lock().lock();
        try {
            XidKey key = XidKey.of(xid);
            UnitOfWork u = (flags & (TMJOIN | TMRESUME)) != 0 ? rm.branch(key) : rm.begin(key);
            mc.xaUnit(u);
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public void end(Xid xid, int flags) throws XAException {
        mc.lock().lock();
        try {
            UnitOfWork u = rm.branch(XidKey.of(xid));
            if ((flags & TMFAIL) != 0) {
                u.lost("the transaction manager ended the branch with TMFAIL");
            }
            mc.xaUnit(null);
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public int prepare(Xid xid) throws XAException {
        mc.lock().lock();
        try {
            return rm.prepare(XidKey.of(xid));
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public void commit(Xid xid, boolean onePhase) throws XAException {
        mc.lock().lock();
        try {
            rm.commit(XidKey.of(xid), onePhase);
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public void rollback(Xid xid) throws XAException {
        mc.lock().lock();
        try {
            rm.rollback(XidKey.of(xid));
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public Xid[] recover(int flags) throws XAException {
        mc.lock().lock();
        try {
            return rm.recover(flags);
        } finally {
            mc.lock().unlock();
        }
    }

    @Override
    public void forget(Xid xid) throws XAException {
        mc.lock().lock();
        try {
            rm.forget(XidKey.of(xid));
        } finally {
            mc.lock().unlock();
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
