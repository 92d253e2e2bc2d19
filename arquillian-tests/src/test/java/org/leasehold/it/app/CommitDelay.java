package org.leasehold.it.app;

import java.util.concurrent.TimeUnit;

import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

/**
 * A test resource that makes its transaction's commit phase slow: enlisted after the adapter and before a database,
 * its {@code commit} waits a few milliseconds, so the database's branch commits that much after the adapter's. The
 * window between the two commits is then wide enough for the next holder of a lease to read the database in it every
 * time, not by chance. It holds no data and recovers nothing.
 */
public final class CommitDelay implements XAResource {
    private final long delayMillis;

    public CommitDelay(long delayMillis) {
        this.delayMillis = delayMillis;
    }

    @Override
    public int prepare(Xid xid) {
        return XA_OK;
    }

    @Override
    public void commit(Xid xid, boolean onePhase) {
        // The window itself, not a wait for a condition: the other branches' order around it is what is tested.
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis);
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(left);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public void start(Xid xid, int flags) {
        // Nothing to associate.
    }

    @Override
    public void end(Xid xid, int flags) {
        // Nothing to dissociate.
    }

    @Override
    public void rollback(Xid xid) {
        // Nothing to undo.
    }

    @Override
    public void forget(Xid xid) {
        // Nothing remembered.
    }

    @Override
    public Xid[] recover(int flag) {
        return new Xid[0];
    }

    @Override
    public boolean isSameRM(XAResource other) {
        return other == this;
    }

    @Override
    public int getTransactionTimeout() {
        return 0;
    }

    @Override
    public boolean setTransactionTimeout(int seconds) {
        return false;
    }
}
