package org.leasehold.adapter;

import java.io.IOException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.BagStore;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Recovery and the journal's view of branches: records branch outcomes, answers the transaction manager's recovery
 * scan and the admin view, holds the leases of prepared branches again at an embedded start
 * ({@link #reinstatePrepared}), and commits or rolls back branches of an earlier run. In embedded mode this server
 * alone grants the log's leases, so recovery commits or rolls back a reinstated branch as the transaction manager
 * decides. Otherwise (remote mode, or after the in-doubt hold) a branch's leases are gone unless the lease service
 * held them in doubt, so commit takes them back or finds out whether the frame was already written (then the branch
 * is committed, once), and otherwise reports a heuristic rollback.
 */
final class Recovery {
    /** Logs as the resource manager it is a part of, under the logger operators know. */
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final LeaseService leases;
    private final BagStore store;
    private final PrepareJournal journal;
    private final TimeSource time;
    private final AdapterMetrics metrics;
    private final Units units;
    private final Settlement settlement;
    /** Branches already reported in the log, as {@code xid + " " + state}: each state of a branch is told once. */
    private final Set<String> reported = ConcurrentHashMap.newKeySet();

    Recovery(AdapterConfig config, LeaseService leases, BagStore store, PrepareJournal journal, TimeSource time,
            AdapterMetrics metrics, Units units, Settlement settlement) {
        this.config = config;
        this.leases = leases;
        this.store = store;
        this.journal = journal;
        this.time = time;
        this.metrics = metrics;
        this.units = units;
        this.settlement = settlement;
    }

    /** What the journal holds for {@code xid}. */
    PrepareJournal.Entry journalEntry(XidKey xid) {
        return journal.get(xid);
    }

    /** Notes that the heuristic outcome {@code type} of {@code xid} was logged already (when it was decided). */
    void reported(XidKey xid, PrepareJournal.Type type) {
        reported.add(xid + " " + type);
    }

    /** The journal's unresolved branches for the transaction manager's recovery scan. */
    Xid[] recover(int flags) throws XAException {
        if ((flags & XAResource.TMSTARTRSCAN) == 0) {
            return new Xid[0];
        }
        List<Xid> out = new ArrayList<>();
        List<Xid> newlyPrepared = new ArrayList<>();
        for (PrepareJournal.Entry e : journal.unresolved()) {
            if (units.known(e.xid()) != null && !units.isReinstated(e.xid())) {
                continue; // a branch of this run, still between its prepare and its commit
            }
            out.add(e.xid());
            if (!reported.add(e.xid() + " " + e.state())) {
                continue;
            }
            if (e.heuristic()) {
                // Decided in an earlier run (this run's decisions were logged when made): told once per run.
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4204 branch {0} ended with a heuristic outcome ({1}); "
                        + "it is reported to the transaction manager until it forgets it", e.xid(),
                        e.state() == PrepareJournal.Type.HEURISTIC_ROLLBACK ? "rolled back" : "committed");
            } else {
                newlyPrepared.add(e.xid());
            }
        }
        if (!newlyPrepared.isEmpty()) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4211 recovery found {0} prepared branch(es) in the journal, "
                    + "for the transaction manager to decide: {1}", newlyPrepared.size(), newlyPrepared);
        }
        return out.toArray(new Xid[0]);
    }

    /** The branches with a heuristic outcome that the transaction manager has not forgotten yet, for the admin view. */
    List<String> heuristicBranches() {
        List<String> out = new ArrayList<>();
        for (PrepareJournal.Entry e : journal.unresolved()) {
            if (e.heuristic()) {
                out.add(e.xid() + " " + (e.state() == PrepareJournal.Type.HEURISTIC_ROLLBACK ? "heuristic rollback"
                        : "heuristic commit") + " (prepared at " + e.preparedAt() + ")");
            }
        }
        return out;
    }

    /** Prepared branches awaiting the transaction manager's decision (of this run or recovered), for the admin view. */
    List<String> preparedBranches() {
        List<String> out = new ArrayList<>();
        for (PrepareJournal.Entry e : journal.unresolved()) {
            if (e.undecided()) {
                out.add(e.xid() + " prepared at " + e.preparedAt() + (units.isReinstated(e.xid())
                        ? ", its leases held again after a restart" : units.known(e.xid()) != null ? ""
                                : ", before a restart: its leases are not held by this server (its commit takes them "
                                        + "back if the lease service still holds them for it)"));
            }
        }
        return out;
    }

    /**
     * Embedded mode, at start, before the engine serves anyone: holds again the leases of every branch the journal
     * holds as prepared and undecided whose frame is not written yet, so that recovery can commit it (writing its
     * messages once) or roll it back, as the transaction manager decides. Nobody else can have taken those names in
     * between: this server's engine alone grants the log's leases. A branch whose leases cannot be held again (a
     * conflicting reinstated branch) is left to recovery as before: a heuristic rollback. The leases are held until
     * the decision, or for {@code InDoubtHoldMillis}.
     */
    void reinstatePrepared(EmbeddedLeaseService engine) {
        for (PrepareJournal.Entry e : journal.unresolved()) {
            if (!e.undecided() || e.leases().isEmpty()) {
                continue;
            }
            try {
                if (alreadyWritten(e)) {
                    continue; // commit finds the frame and ends the branch committed, once
                }
            } catch (XAException ex) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4217 prepared branch {0} could not be checked against the "
                        + "log ({1}); its leases are not held again", e.xid(), ex.getMessage());
                continue;
            }
            List<Lease> recorded = recordedLeases(e);
            UnitOfWork u = new UnitOfWork(e.xid(), recorded.get(0).holder(), e.preparedAt(), true);
            try {
                for (Lease l : recorded) {
                    u.add(engine.reinstate(l));
                }
            } catch (LeaseException | RuntimeException ex) {
                settlement.releaseAll(u, null);
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4212 the leases of prepared branch {0} could not be held "
                        + "again after the restart ({1}); if the transaction manager commits it, it is a heuristic "
                        + "rollback", e.xid(), ex.getMessage());
                continue;
            }
            for (byte[] p : e.payloads()) {
                u.buffer(p);
            }
            u.preparedAt(e.preparedAt());
            u.state(UnitOfWork.State.PREPARED);
            units.reinstated(u);
            units.keep(u, config.maxLease());
            time.schedule(Micros.plus(time.nowMicros(), Micros.of(config.inDoubtHold())), () -> {
                if (units.dropReinstated(u)) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4213 the transaction manager did not decide "
                            + "prepared branch {0} within {1} ms (InDoubtHoldMillis) of the restart; its leases are "
                            + "released, and committing it later is a heuristic rollback", e.xid(),
                            config.inDoubtHold().toMillis());
                    settlement.releaseAll(u, null);
                    u.state(UnitOfWork.State.ENDED);
                    units.stopKeeping(u);
                }
            });
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4009 prepared branch {0} holds its leases {1} again after the "
                    + "restart, until the transaction manager decides it", e.xid(), u.leases().stream()
                    .map(Lease::describe).toList());
        }
    }

    /** Forgets the heuristic outcome of {@code xid}. */
    void forget(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null || !e.heuristic()) {
            throw XaBranches.xa(XAException.XAER_NOTA, "forget of " + xid + ", which has no heuristic outcome here");
        }
        outcome(xid, PrepareJournal.Type.FORGOTTEN);
        reported.removeIf(r -> r.startsWith(xid + " "));
    }

    /** Commits {@code xid}, a branch this run does not know (one of an earlier run, from the journal). */
    void commitRecovered(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null) {
            throw XaBranches.xa(XAException.XAER_NOTA, "commit of " + xid + ", which is not known to this resource manager");
        }
        if (e.state() == PrepareJournal.Type.HEURISTIC_ROLLBACK) {
            throw XaBranches.xa(XAException.XA_HEURRB, "branch " + xid + " was already rolled back heuristically");
        }
        if (e.state() == PrepareJournal.Type.HEURISTIC_COMMIT) {
            throw XaBranches.xa(XAException.XA_HEURCOM, "branch " + xid + " was already committed heuristically");
        }
        if (alreadyWritten(e)) {
            outcome(xid, PrepareJournal.Type.COMMITTED);
            metrics.twoPhaseCommitted();
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4003 recovered branch {0} had written its messages before "
                    + "the restart: committed once", xid);
            return;
        }
        StringBuilder gone = new StringBuilder();
        UnitOfWork u = takeBack(e, gone);
        if (u != null) {
            try {
                settlement.writeAndRelease(u);
                outcome(xid, PrepareJournal.Type.COMMITTED);
                metrics.twoPhaseCommitted();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4012 recovered branch {0} took its leases back from the "
                        + "lease service, which held them in doubt, and committed", xid);
                return;
            } catch (WriteOutcomeUnknownException ex) {
                outcome(xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
                metrics.heuristicHazard();
                settlement.abandon(u);
                throw XaBranches.xa(XAException.XA_HEURHAZ, "commit of recovered branch " + xid + " may or may not have written "
                        + "its messages: " + ex.getMessage());
            } catch (LeaseholdException ex) {
                settlement.abandon(u);
                gone.append("the bag store refused the write: ").append(ex.getMessage());
            }
        }
        outcome(xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
        reported.add(xid + " " + PrepareJournal.Type.HEURISTIC_ROLLBACK);
        metrics.heuristicRollback();
        LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4202 heuristic rollback of recovered branch {0}: its leases "
                + "ended with the restart ({1}), so its {2} message(s) were not written", xid, gone,
                e.payloads().size());
        throw XaBranches.xa(XAException.XA_HEURRB, "heuristic rollback of recovered branch " + xid + ": its leases ended with "
                + "the restart (" + gone + "), so its messages were not written");
    }

    /** The leases a journal entry recorded, as values the lease service knows them by (same holder and generations). */
    private List<Lease> recordedLeases(PrepareJournal.Entry e) {
        PrepareJournal.Holding held = e.holding();
        HolderId holder = held != null ? held.holder() : HolderId.transaction(units.process(), e.xid().toString());
        List<Lease> out = new ArrayList<>(e.leases().size());
        for (int i = 0; i < e.leases().size(); i++) {
            LeaseStamp s = e.leases().get(i);
            LeaseMode mode = held != null ? held.modes().get(i) : LeaseMode.EXCLUSIVE;
            CorrelationId id = held != null ? held.ids().get(i) : CorrelationId.NONE;
            out.add(new Lease(holder, mode, LeaseKind.FULL, e.preparedAt(), s.deadline(),
                    List.of(new LeaseGrant(s.name(), s.generation(), id, s.floor(), s.writableFrom(), null))));
        }
        return out;
    }

    /**
     * Takes back, by renewing them, the leases a prepared branch of an earlier run recorded, which the lease service
     * may still hold for it (in doubt); a unit ready to write, or null (with the reason in {@code gone}) when any of
     * them is gone, after releasing those it took.
     */
    private UnitOfWork takeBack(PrepareJournal.Entry e, StringBuilder gone) {
        List<Lease> recorded = recordedLeases(e);
        if (recorded.isEmpty()) {
            gone.append("the branch recorded no lease");
            return null;
        }
        UnitOfWork u = new UnitOfWork(e.xid(), recorded.get(0).holder(), e.preparedAt(), true);
        for (Lease l : recorded) {
            try {
                u.add(leases.renew(l, time.now().plus(config.maxLease()), null));
            } catch (LeaseException | RuntimeException ex) {
                gone.append(ex.getMessage());
                settlement.releaseAll(u, null);
                return null;
            }
        }
        for (byte[] p : e.payloads()) {
            u.buffer(p);
        }
        u.preparedAt(e.preparedAt());
        u.state(UnitOfWork.State.PREPARED);
        return u;
    }

    /** Rolls back {@code xid}, a branch this run does not know (one of an earlier run, from the journal). */
    void rollbackRecovered(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null) {
            throw XaBranches.xa(XAException.XAER_NOTA, "rollback of " + xid + ", which is not known to this resource manager");
        }
        if (e.state() == PrepareJournal.Type.PREPARED && alreadyWritten(e)) {
            outcome(xid, PrepareJournal.Type.HEURISTIC_COMMIT);
            reported.add(xid + " " + PrepareJournal.Type.HEURISTIC_COMMIT);
            metrics.heuristicCommit();
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4205 rollback of recovered branch {0}, but its messages were "
                    + "written before the restart: heuristic commit", xid);
            throw XaBranches.xa(XAException.XA_HEURCOM, "branch " + xid + " had written its messages before the restart");
        }
        if (e.state() == PrepareJournal.Type.PREPARED) {
            // Leases the lease service still holds for the branch (in doubt) are free for others at once.
            for (Lease l : recordedLeases(e)) {
                try {
                    leases.release(l, null, null);
                } catch (LeaseException | RuntimeException ex) {
                    // Gone already: nothing to free.
                }
            }
        }
        outcome(xid, PrepareJournal.Type.ROLLED_BACK);
    }

    /** Whether this writer already wrote the branch's frame: a frame under exactly its lease generations. */
    private boolean alreadyWritten(PrepareJournal.Entry e) throws XAException {
        if (e.leases().isEmpty()) {
            return false;
        }
        Set<String> want = new HashSet<>();
        Set<String> names = new HashSet<>();
        Instant from = null;
        for (LeaseStamp s : e.leases()) {
            want.add(s.name() + "@" + s.generation());
            names.add(s.name());
            from = from == null || s.floor().isBefore(from) ? s.floor() : from;
        }
        ReadRequest r = new ReadRequest(config.log(), from, null, names, true, true);
        try (MessageStream messages = store.read(r)) {
            Message m;
            while ((m = messages.next()) != null) {
                if (!m.writer().equals(store.writerId())) {
                    continue;
                }
                Set<String> got = new HashSet<>();
                for (StampedLease l : m.leases()) {
                    got.add(l.name() + "@" + l.generation());
                }
                if (got.equals(want)) {
                    return true;
                }
            }
            return false;
        } catch (org.leasehold.bag.UnknownLogException ex) {
            return false;
        } catch (BagStoreException ex) {
            throw XaBranches.xa(XAException.XAER_RMERR, "could not read the log to recover branch " + e.xid() + ": " + ex);
        }
    }

    /** Records the outcome of branch {@code xid} in the journal; a failure to is logged. */
    void outcome(XidKey xid, PrepareJournal.Type type) {
        try {
            journal.outcome(xid, type, time.now());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4206 could not record outcome {0} of branch {1} in the "
                    + "journal: {2}; recovery will decide it again from the log", type, xid, e.toString());
        }
    }
}
