package org.leasehold.adapter;

import java.io.IOException;
import java.time.Instant;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.TimeSource;

/**
 * The two-phase flow of transaction branches:
 * <ul>
 *   <li>prepare: upgrade every tentative lease to full (in canonical order), renew if little time is left, vote
 *       rollback with a reason if that fails, then record the branch (lease stamps and messages) in the journal;
 *       {@code XA_RDONLY} when it wrote nothing;
 *   <li>commit: write the messages as one frame with {@code floor < t < deadline}, then release every lease with
 *       {@code t} as watermark once the whole JTA transaction has completed ({@link Completion}), or at once where the
 *       container offers no synchronization; if a lease was lost, or the write refused, nothing is written and the
 *       branch reports a heuristic rollback, never silently;
 *   <li>rollback: release without moving the watermark;
 *   <li>recover and forget, and the commit or rollback of a branch of an earlier run: {@link Recovery}.
 * </ul>
 */
final class XaBranches {
    /** Logs as the resource manager it is a part of, under the logger operators know. */
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final LeaseService leases;
    private final PrepareJournal journal;
    private final TimeSource time;
    private final AdapterMetrics metrics;
    private final Units units;
    private final Settlement settlement;
    private final Completion completion;
    private final Recovery recovery;

    XaBranches(AdapterConfig config, LeaseService leases, PrepareJournal journal, TimeSource time,
            AdapterMetrics metrics, Units units, Settlement settlement, Completion completion, Recovery recovery) {
        this.config = config;
        this.leases = leases;
        this.journal = journal;
        this.time = time;
        this.metrics = metrics;
        this.units = units;
        this.settlement = settlement;
        this.completion = completion;
        this.recovery = recovery;
    }

    int prepare(XidKey xid) throws XAException {
        UnitOfWork u = units.branch(xid);
        long t0 = System.nanoTime();
        try {
            if (u.lostReason() != null) {
                settlement.abandon(u);
                throw xa(XAException.XA_RBROLLBACK, u + " lost a lease before prepare: " + u.lostReason());
            }
            boolean readOnly = u.payloads().isEmpty();
            String problem = readOnly ? settlement.readOnlyProblem(u) : settlement.upgradeAll(u);
            if (problem != null) {
                throw rollbackVote(u, "prepare of " + u + " votes rollback: " + problem);
            }
            if (readOnly) {
                completion.endWithoutWriting(u);
                metrics.readOnly();
                return XAResource.XA_RDONLY;
            }
            Instant at = time.now();
            try {
                journal.prepared(xid, at, u.stamps(), u.payloads(), u.journalHolding());
            } catch (IOException e) {
                settlement.abandon(u);
                throw xa(XAException.XAER_RMERR, "prepare of " + u + " could not record the branch in the journal "
                        + journal.file() + ": " + e);
            }
            u.preparedAt(at);
            u.state(UnitOfWork.State.PREPARED);
            if (!config.embedded()) {
                holdInDoubt(u);
            }
            return XAResource.XA_OK;
        } finally {
            metrics.prepared(System.nanoTime() - t0);
        }
    }

    /**
     * Remote mode: asks the lease service to keep the prepared branch's leases held for {@code InDoubtHoldMillis}, even
     * if this server stops renewing them (it crashed before the commit), so that the restarted server's recovery can
     * take them back and commit. A refusal does not fail the prepare: only a crash before the commit would then end in
     * a heuristic rollback, as it did before.
     */
    private void holdInDoubt(UnitOfWork u) {
        Instant until = time.now().plus(config.inDoubtHold());
        for (Lease l : u.leases()) {
            try {
                u.replace(l, leases.holdInDoubt(l, until));
            } catch (LeaseException | UnsupportedOperationException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4214 the lease service did not hold {0} in doubt for "
                        + "prepared {1}: {2}; should this server stop before the commit, the branch ends in a heuristic "
                        + "rollback", l.describe(), u, e.getMessage());
            }
        }
    }

    void commit(XidKey xid, boolean onePhase) throws XAException {
        UnitOfWork u = units.known(xid);
        if (u == null) {
            if (onePhase) {
                throw xa(XAException.XAER_NOTA, "one-phase commit of unknown branch " + xid);
            }
            recovery.commitRecovered(xid);
            return;
        }
        long t0 = System.nanoTime();
        try {
            if (onePhase) {
                commitOnePhase(u);
                return;
            }
            if (u.state() != UnitOfWork.State.PREPARED) {
                throw xa(XAException.XAER_PROTO, "commit of " + u + " before prepare");
            }
            String lost = settlement.lostOrLate(u);
            if (lost != null) {
                heuristicRollback(u, lost);
            }
            writeCommitting(u, false);
            recovery.outcome(xid, PrepareJournal.Type.COMMITTED);
            metrics.twoPhaseCommitted();
            units.finish(u);
        } finally {
            metrics.committed(System.nanoTime() - t0);
        }
    }

    private void commitOnePhase(UnitOfWork u) throws XAException {
        if (u.lostReason() != null) {
            settlement.abandon(u);
            throw xa(XAException.XA_RBROLLBACK, u + " lost a lease: " + u.lostReason());
        }
        boolean readOnly = u.payloads().isEmpty();
        String problem = readOnly ? settlement.readOnlyProblem(u) : settlement.upgradeAll(u);
        if (problem != null) {
            throw rollbackVote(u, "one-phase commit of " + u + " rolled back: " + problem);
        }
        if (readOnly) {
            completion.endWithoutWriting(u);
            metrics.readOnly();
            return;
        }
        writeCommitting(u, true);
        metrics.onePhaseCommitted();
        units.finish(u);
    }

    /**
     * Writes a committing branch's frame, its leases then held until its transaction completes or released. A write
     * whose outcome is unknown is a heuristic hazard; a refused write is a heuristic rollback after a prepare, a
     * rollback in a one-phase commit. Either way the branch has ended and its leases are released.
     */
    private void writeCommitting(UnitOfWork u, boolean onePhase) throws XAException {
        try {
            completion.written(u, settlement.write(u));
        } catch (WriteOutcomeUnknownException e) {
            if (!onePhase) {
                recovery.outcome(u.xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
            }
            metrics.heuristicHazard();
            if (!onePhase) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4203 commit of {0}: the write's outcome is unknown: {1}",
                        u, e.getMessage());
            }
            settlement.abandon(u);
            throw xa(XAException.XA_HEURHAZ, (onePhase ? "one-phase commit of " + u + " may or may not have written: "
                    : "commit of " + u + " may or may not have written its messages: ") + e.getMessage());
        } catch (LeaseholdException e) {
            if (!onePhase) {
                heuristicRollback(u, "the bag store refused the commit's write: " + e.getMessage());
            }
            settlement.abandon(u);
            throw xa(XAException.XA_RBROLLBACK, "one-phase commit of " + u + " rolled back: the bag store refused the "
                    + "write: " + e.getMessage());
        }
    }

    /** Ends {@code u} without writing, counts and logs the rollback ({@code LEASEHOLD-4216}): the vote to throw. */
    private XAException rollbackVote(UnitOfWork u, String why) {
        settlement.abandon(u);
        metrics.rolledBack();
        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4216 {0}", why);
        return xa(XAException.XA_RBROLLBACK, why);
    }

    private void heuristicRollback(UnitOfWork u, String why) throws XAException {
        if (u.xid != null) {
            recovery.outcome(u.xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
            recovery.reported(u.xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
        }
        metrics.heuristicRollback();
        LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4201 heuristic rollback of {0}: {1}; nothing was written", u, why);
        settlement.abandon(u);
        throw xa(XAException.XA_HEURRB, "heuristic rollback of " + u + ": " + why + "; nothing was written");
    }

    void rollback(XidKey xid) throws XAException {
        UnitOfWork u = units.known(xid);
        if (u == null) {
            recovery.rollbackRecovered(xid);
            return;
        }
        boolean prepared = u.state() == UnitOfWork.State.PREPARED;
        settlement.releaseAll(u, null);
        units.finish(u);
        metrics.rolledBack();
        if (prepared) {
            recovery.outcome(xid, PrepareJournal.Type.ROLLED_BACK);
        }
    }

    Xid[] recover(int flags) throws XAException {
        return recovery.recover(flags);
    }

    void forget(XidKey xid) throws XAException {
        recovery.forget(xid);
    }

    static XAException xa(int code, String message) {
        XAException e = new XAException(message);
        e.errorCode = code;
        return e;
    }
}
