package org.leasehold.adapter;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import javax.transaction.xa.XAException;

import org.leasehold.lease.HolderId;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.TimeSource;

/**
 * The units of work of one resource manager: creates them (with their holder ids), finds the transaction branches
 * among them by xid, keeps their leases alive on the {@link LeaseKeeper} while they live, and ends them.
 */
final class Units {
    private final String process;
    private final TimeSource time;
    private final LeaseKeeper keeper;
    private final SessionEvents events;
    private final Map<XidKey, UnitOfWork> branches = new ConcurrentHashMap<>();
    private final AtomicLong localCounter = new AtomicLong();
    /** Prepared branches of an earlier run whose leases this one holds again, until the transaction manager decides. */
    private final Set<XidKey> reinstated = ConcurrentHashMap.newKeySet();

    Units(String process, TimeSource time, LeaseKeeper keeper, SessionEvents events) {
        this.process = process;
        this.time = time;
        this.keeper = keeper;
        this.events = events;
    }

    /** The id this server's units hold leases under. */
    String process() {
        return process;
    }

    /** A new branch {@code xid}, known from now on. */
    UnitOfWork begin(XidKey xid) throws XAException {
        UnitOfWork u = new UnitOfWork(xid, HolderId.transaction(process, xid.toString()), time.now(), true);
        if (branches.putIfAbsent(xid, u) != null) {
            throw XaBranches.xa(XAException.XAER_DUPID, "branch " + xid + " is already known to this resource manager");
        }
        return u;
    }

    /** The known branch {@code xid}; fails with {@code XAER_NOTA} if there is none. */
    UnitOfWork branch(XidKey xid) throws XAException {
        UnitOfWork u = branches.get(xid);
        if (u == null) {
            throw XaBranches.xa(XAException.XAER_NOTA, "branch " + xid + " is not known to this resource manager");
        }
        return u;
    }

    /** The known branch {@code xid}, or null. */
    UnitOfWork known(XidKey xid) {
        return branches.get(xid);
    }

    UnitOfWork beginLocal() {
        return new UnitOfWork(null, new HolderId(process, "local/" + localCounter.incrementAndGet()), time.now(), true);
    }

    UnitOfWork beginAuto() {
        return new UnitOfWork(null, new HolderId(process, "connection/" + localCounter.incrementAndGet()), time.now(),
                false);
    }

    /** Makes {@code u}, a prepared branch of an earlier run whose leases this run holds again, known. */
    void reinstated(UnitOfWork u) {
        branches.put(u.xid, u);
        reinstated.add(u.xid);
    }

    boolean isReinstated(XidKey xid) {
        return reinstated.contains(xid);
    }

    /** Forgets the reinstated branch {@code u} if it is still undecided and known; true if it did. */
    boolean dropReinstated(UnitOfWork u) {
        return u.state() == UnitOfWork.State.PREPARED && reinstated.remove(u.xid) && branches.remove(u.xid, u);
    }

    /** Starts (or keeps) renewing {@code u}'s leases, each for {@code leaseTime}. */
    void keep(UnitOfWork u, Duration leaseTime) {
        synchronized (u) {
            LeaseKeeper.Keeping k = u.keeping();
            if (k == null || !k.isLive()) {
                u.keeping(keeper.keepAll(u, leaseTime, events.watcher(u)));
            }
        }
    }

    /** Stops renewing {@code u}'s leases. */
    void stopKeeping(UnitOfWork u) {
        LeaseKeeper.Keeping k;
        synchronized (u) {
            k = u.keeping();
            u.keeping(null);
        }
        if (k != null) {
            k.stop();
        }
    }

    /** The branch is over for the transaction manager; its leases too, unless it keeps them until completion. */
    void finish(UnitOfWork u) {
        if (u.state() != UnitOfWork.State.COMPLETING) {
            u.state(UnitOfWork.State.ENDED);
            stopKeeping(u);
        }
        if (u.xid != null) {
            branches.remove(u.xid, u);
            reinstated.remove(u.xid);
        }
    }
}
