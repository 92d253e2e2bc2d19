package org.leasehold.adapter;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStore;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.connector.NoLeaseHeldException;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.store.WriteRule;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The resource manager behind every managed connection of one configuration: it turns units of work into lease
 * operations and bag-store writes, and transaction branches into the two-phase flow.
 *
 * <ul>
 *   <li>prepare: upgrade every tentative lease to full (in canonical order), renew if little time is left, vote
 *       rollback with a reason if that fails, then record the branch (lease stamps and messages) in the journal;
 *       {@code XA_RDONLY} when it wrote nothing;
 *   <li>commit: write the messages as one frame with {@code floor < t < deadline}, then release every lease with
 *       {@code t} as watermark once the whole JTA transaction has completed (an interposed synchronization's
 *       {@code afterCompletion}, so that the other resources' branches have committed too; at most
 *       {@code InDoubtHoldMillis} later), or at once where the container offers no synchronization; if a lease was
 *       lost, or the write refused, nothing is written and the branch reports a heuristic rollback, never silently;
 *   <li>rollback: release without moving the watermark;
 *   <li>recover: the journal's prepared, undecided branches. In embedded mode this server alone grants the log's
 *       leases, so at start it holds the leases of every such branch again ({@link #reinstatePrepared}) and recovery
 *       commits or rolls them back as the transaction manager decides. Otherwise (remote mode, or after the in-doubt
 *       hold) their leases are gone, so commit finds out whether the frame was already written (then the branch is
 *       committed, once) and otherwise reports a heuristic rollback.
 * </ul>
 */
final class ResourceManager {
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final LeaseService leases;
    private final BagStore store;
    private final PrepareJournal journal;
    private final TimeSource time;
    private final Renewer renewer;
    private final AdapterMetrics metrics;
    private final String process;
    private final Map<XidKey, UnitOfWork> branches = new ConcurrentHashMap<>();
    private final AtomicLong localCounter = new AtomicLong();
    private final ClockCheck clocks;
    /** Prepared branches of an earlier run whose leases this one holds again, until the transaction manager decides. */
    private final Set<XidKey> reinstated = ConcurrentHashMap.newKeySet();
    /** Branches already reported in the log, as {@code xid + " " + state}: each state of a branch is told once. */
    private final Set<String> reported = ConcurrentHashMap.newKeySet();

    ResourceManager(AdapterConfig config, LeaseService leases, BagStore store, PrepareJournal journal, TimeSource time,
            Renewer renewer, AdapterMetrics metrics, String process, ClockCheck clocks) {
        this.config = config;
        this.leases = leases;
        this.store = store;
        this.journal = journal;
        this.time = time;
        this.renewer = renewer;
        this.metrics = metrics;
        this.process = process;
        this.clocks = clocks;
    }

    AdapterConfig config() {
        return config;
    }

    AdapterMetrics metrics() {
        return metrics;
    }

    String log() {
        return config.log();
    }

    /** What the journal holds for {@code xid} (for tests and diagnostics). */
    PrepareJournal.Entry journalEntry(XidKey xid) {
        return journal.get(xid);
    }

    // ------------------------------------------------------------------------------------------------ units

    UnitOfWork begin(XidKey xid) throws XAException {
        UnitOfWork u = new UnitOfWork(xid, HolderId.transaction(process, xid.toString()), time.now(), true);
        if (branches.putIfAbsent(xid, u) != null) {
            throw xa(XAException.XAER_DUPID, "branch " + xid + " is already known to this resource manager");
        }
        return u;
    }

    UnitOfWork branch(XidKey xid) throws XAException {
        UnitOfWork u = branches.get(xid);
        if (u == null) {
            throw xa(XAException.XAER_NOTA, "branch " + xid + " is not known to this resource manager");
        }
        return u;
    }

    UnitOfWork beginLocal() {
        return new UnitOfWork(null, new HolderId(process, "local/" + localCounter.incrementAndGet()), time.now(), true);
    }

    UnitOfWork beginAuto() {
        return new UnitOfWork(null, new HolderId(process, "connection/" + localCounter.incrementAndGet()), time.now(),
                false);
    }

    // ------------------------------------------------------------------------------------------------ calls

    /**
     * Takes the leases {@code o} asks for, for {@code u}. Names {@code u} already holds (from an earlier acquire of the
     * same transaction, say a nested {@code @Leased} method) are kept as granted, not taken again; if it holds them
     * all, the lease holding the first name is returned.
     */
    Lease acquire(UnitOfWork u, LeaseOptions options) throws LeaseholdException {
        AdapterEvents.Acquire event = new AdapterEvents.Acquire();
        event.begin();
        long asked = event.isEnabled() ? time.nowMicros() : 0;
        int heldBefore = event.isEnabled() ? u.nameCount() : 0;
        Lease lease = null;
        String failure = null;
        try {
            lease = takeLeases(u, options);
            return lease;
        } catch (LeaseholdException | RuntimeException e) {
            failure = AdapterEvents.failure(e);
            throw e;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.log = config.log();
                event.names = AdapterEvents.names(options.names());
                event.mode = String.valueOf(options.mode());
                event.kind = (u.transactional ? LeaseKind.TENTATIVE : LeaseKind.FULL).name();
                event.holder = u.holder.toString();
                event.outcome = failure != null ? failure : u.nameCount() == heldBefore ? "held" : "granted";
                event.waitedMicros = (lease != null && failure == null && u.nameCount() != heldBefore
                        ? Micros.of(lease.grantedAt()) : time.nowMicros()) - asked;
                event.generation = lease != null ? lease.grants().get(0).generation() : -1;
                event.commit();
            }
        }
    }

    private Lease takeLeases(UnitOfWork u, LeaseOptions options) throws LeaseholdException {
        LeaseOptions o = options;
        checkUsable(u);
        if (u.state() != UnitOfWork.State.ACTIVE) {
            throw new ConnectorException(u + " is already " + u.state().name().toLowerCase(java.util.Locale.ROOT)
                    + ": take leases before the transaction completes");
        }
        // Names this unit already holds are not asked for again: the lease service would treat a second request by
        // the same holder as taking the name again, ending the first grant, and the unit's prepare would fail.
        List<String> wanted = new ArrayList<>(o.names().size());
        for (String name : o.names()) {
            Lease held = u.leaseOn(name);
            if (held == null) {
                wanted.add(name);
            } else if (!held.mode().equals(o.mode())) {
                throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.DUPLICATE_NAME, u
                        + " already holds '" + name + "' in mode " + held.mode() + " and cannot also take it in mode "
                        + o.mode() + ": ask for each name in one mode per transaction");
            }
        }
        if (wanted.isEmpty() && !o.names().isEmpty()) {
            return u.leaseOn(o.names().get(0));
        }
        if (wanted.size() < o.names().size()) {
            o = new LeaseOptions(wanted, o.mode(), o.maxWait(), o.leaseTime());
        }
        int total = u.nameCount() + o.names().size();
        if (total > config.maxNamesPerUnit()) {
            throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.TOO_MANY_NAMES, "this unit of work "
                    + "would hold " + total + " lease names; the adapter allows " + config.maxNamesPerUnit()
                    + " (MaxNamesPerUnit): take coarser names, or raise the limit");
        }
        LeaseRequest request = LeaseRequest.builder(u.holder, o.names()).mode(o.mode())
                .kind(u.transactional ? LeaseKind.TENTATIVE : LeaseKind.FULL).startedAt(u.startedAt)
                .leaseFor(o.leaseTime() != null ? o.leaseTime() : config.maxLease())
                .waitFor(o.maxWait() != null ? o.maxWait() : config.defaultWait()).build();
        String clockProblem = clocks.problem();
        if (clockProblem != null) {
            metrics.acquireFailed();
            throw new LeaseServiceUnavailableException(null, clockProblem);
        }
        long asked = time.nowMicros();
        Lease lease;
        try {
            lease = leases.acquire(request);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectorException("interrupted while waiting for leases on " + o.names());
        } catch (LeaseException e) {
            metrics.acquireFailed();
            throw e;
        }
        metrics.acquired(Micros.of(lease.grantedAt()) - asked);
        try {
            readyForSuccessor(lease);
        } catch (LeaseholdException | RuntimeException e) {
            releaseQuietly(lease, null);
            throw e;
        }
        u.add(lease);
        renewer.track(u, request.leaseTime() != null ? request.leaseTime() : config.maxLease());
        return lease;
    }

    /**
     * After a predecessor expired without releasing, the state its lease protects may still change until its buckets
     * are sealed: the store's {@link WriteRule} waits until they can be, and seals them, before the unit reads or writes.
     */
    private void readyForSuccessor(Lease lease) throws LeaseholdException {
        try {
            if (!WriteRule.readyForSuccessor(store, config.log(), lease, time)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectorException(e.getMessage());
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4002 sealed the buckets of an expired predecessor of {0} before "
                + "use", lease.names());
    }

    /**
     * Waits, as the store's {@link WriteRule} says, until this server's clock reaches the latest {@code writableFrom} of
     * {@code u}'s leases when a lease server's clock runs slightly ahead; further ahead, the bag store refuses the write.
     */
    private void awaitWritable(UnitOfWork u) throws ConnectorException {
        try {
            WriteRule.awaitWritable(u.leases(), config.maxClockError(), time);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectorException(e.getMessage() + " (" + u + ")");
        }
    }

    void append(UnitOfWork u, byte[][] payloads) throws LeaseholdException {
        checkUsable(u);
        if (payloads == null || payloads.length == 0) {
            throw new ConnectorException("append was given no message: pass one payload or more");
        }
        if (u.leases().isEmpty()) {
            throw new NoLeaseHeldException("append needs a lease held for this unit of work, and " + u + " holds none: "
                    + "acquire the leases the messages are written under first");
        }
        for (int i = 0; i < payloads.length; i++) {
            if (payloads[i] == null) {
                throw new ConnectorException("message " + i + " of the append is null: pass a payload (it may be empty)");
            }
        }
        if (u.transactional) {
            if (u.state() != UnitOfWork.State.ACTIVE) {
                throw new ConnectorException(u + " is already completing: append before the transaction ends");
            }
            for (byte[] p : payloads) {
                u.buffer(p.clone());
            }
            return;
        }
        Appended a = store.append(new AppendRequest(config.log(), u.stamps(), null, List.of(payloads)));
        u.written(a.timestamp());
        metrics.written(a.messages());
    }

    MessageStream read(ReadRequest request) throws LeaseholdException {
        return store.read(request);
    }

    /** Fails with {@link LeaseLostException} if the unit lost a lease. */
    void checkUsable(UnitOfWork u) throws LeaseLostException {
        String reason = u.lostReason();
        if (reason != null) {
            throw new LeaseLostException(u + " lost a lease: " + reason + ". Nothing was written; the transaction is "
                    + "rolled back; start it over");
        }
    }

    /** Ends a unit outside a transaction: release its leases with the last timestamp written as watermark. */
    void endAuto(UnitOfWork u) {
        u.state(UnitOfWork.State.ENDED);
        renewer.untrack(u);
        Instant wm = u.lastWritten();
        for (Lease l : u.leases()) {
            releaseQuietly(l, wm != null && !wm.isBefore(l.floor()) && wm.isBefore(l.deadline()) ? wm : null);
        }
    }

    // ------------------------------------------------------------------------------------------------ local

    void commitLocal(UnitOfWork u) throws LeaseholdException {
        try {
            String problem = upgradeAll(u);
            if (problem != null) {
                throw new LeaseLostException(problem);
            }
            write(u);
        } finally {
            finish(u);
        }
    }

    void rollbackLocal(UnitOfWork u) {
        releaseAll(u, null);
        finish(u);
    }

    // ------------------------------------------------------------------------------------------------ XA

    int prepare(XidKey xid) throws XAException {
        AdapterEvents.Prepare event = new AdapterEvents.Prepare();
        event.begin();
        UnitOfWork known = event.isEnabled() ? branches.get(xid) : null;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String vote = null;
        try {
            int v = prepareBranch(xid);
            vote = v == XAResource.XA_RDONLY ? "read-only" : "ok";
            return v;
        } catch (XAException e) {
            vote = AdapterEvents.xaOutcome(e);
            throw e;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.log = config.log();
                event.branch = xid.toString();
                event.leaseCount = leaseCount;
                event.messageCount = messageCount;
                event.vote = vote != null ? vote : "failed";
                event.commit();
            }
        }
    }

    private int prepareBranch(XidKey xid) throws XAException {
        UnitOfWork u = branch(xid);
        long t0 = System.nanoTime();
        try {
            if (u.lostReason() != null) {
                abandon(u);
                throw xa(XAException.XA_RBROLLBACK, u + " lost a lease before prepare: " + u.lostReason());
            }
            boolean readOnly = u.payloads().isEmpty();
            String problem = readOnly ? readOnlyProblem(u) : upgradeAll(u);
            if (problem != null) {
                throw rollbackVote(u, "prepare of " + u + " votes rollback: " + problem);
            }
            if (readOnly) {
                endWithoutWriting(u);
                metrics.readOnly();
                return XAResource.XA_RDONLY;
            }
            Instant at = time.now();
            try {
                journal.prepared(xid, at, u.stamps(), u.payloads(), u.journalHolding());
            } catch (IOException e) {
                abandon(u);
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

    /** Upgrades every tentative lease of {@code u} and makes sure enough time is left; null if all is well. */
    private String upgradeAll(UnitOfWork u) {
        String clockProblem = clocks.problem();
        if (clockProblem != null) {
            return clockProblem;
        }
        List<Lease> held = new ArrayList<>(u.leases());
        held.sort(Comparator.comparing(l -> l.grants().get(0).name()));
        for (Lease l : held) {
            try {
                Lease up = l.kind() == LeaseKind.TENTATIVE ? leases.upgrade(l, null) : l;
                u.replace(l, up);
                Duration left = Duration.between(time.now(), up.deadline());
                if (left.compareTo(config.minTimeLeftAtPrepare()) < 0) {
                    Lease renewed = leases.renew(up, time.now().plus(config.maxLease()), null);
                    u.replace(up, renewed);
                    if (Duration.between(time.now(), renewed.deadline()).compareTo(config.minTimeLeftAtPrepare()) < 0) {
                        return "the lease " + renewed.describe() + " ends at " + renewed.deadline() + ", less than "
                                + config.minTimeLeftAtPrepare().toMillis() + " ms away (MinTimeLeftAtPrepareMillis)";
                    }
                }
            } catch (LeaseBrokenException e) {
                return "a tentative lease was broken by an older transaction (" + e.getMessage() + ")";
            } catch (LeaseExpiredException e) {
                return "a lease expired before prepare (" + e.getMessage() + ")";
            } catch (LeaseException e) {
                return "a lease could not be upgraded (" + e.getMessage() + ")";
            }
        }
        return null;
    }

    void commit(XidKey xid, boolean onePhase) throws XAException {
        AdapterEvents.Commit event = new AdapterEvents.Commit();
        event.begin();
        UnitOfWork known = event.isEnabled() ? branches.get(xid) : null;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String outcome = null;
        try {
            commitBranch(xid, onePhase);
            outcome = "committed";
        } catch (XAException e) {
            outcome = AdapterEvents.xaOutcome(e);
            throw e;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.log = config.log();
                event.branch = xid.toString();
                event.onePhase = onePhase;
                event.leaseCount = leaseCount;
                event.messageCount = messageCount;
                event.outcome = outcome != null ? outcome : "failed";
                event.commit();
            }
        }
    }

    private void commitBranch(XidKey xid, boolean onePhase) throws XAException {
        UnitOfWork u = branches.get(xid);
        if (u == null) {
            if (onePhase) {
                throw xa(XAException.XAER_NOTA, "one-phase commit of unknown branch " + xid);
            }
            commitRecovered(xid);
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
            String lost = lostOrLate(u);
            if (lost != null) {
                heuristicRollback(u, lost);
            }
            try {
                write(u);
            } catch (WriteOutcomeUnknownException e) {
                outcome(xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
                metrics.heuristicHazard();
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4203 commit of {0}: the write's outcome is unknown: {1}",
                        u, e.getMessage());
                abandon(u);
                throw xa(XAException.XA_HEURHAZ, "commit of " + u + " may or may not have written its messages: "
                        + e.getMessage());
            } catch (LeaseholdException e) {
                heuristicRollback(u, "the bag store refused the commit's write: " + e.getMessage());
            }
            outcome(xid, PrepareJournal.Type.COMMITTED);
            metrics.twoPhaseCommitted();
            finish(u);
        } finally {
            metrics.committed(System.nanoTime() - t0);
        }
    }

    private void commitOnePhase(UnitOfWork u) throws XAException {
        if (u.lostReason() != null) {
            abandon(u);
            throw xa(XAException.XA_RBROLLBACK, u + " lost a lease: " + u.lostReason());
        }
        boolean readOnly = u.payloads().isEmpty();
        String problem = readOnly ? readOnlyProblem(u) : upgradeAll(u);
        if (problem != null) {
            throw rollbackVote(u, "one-phase commit of " + u + " rolled back: " + problem);
        }
        if (readOnly) {
            endWithoutWriting(u);
            metrics.readOnly();
            return;
        }
        try {
            write(u);
        } catch (WriteOutcomeUnknownException e) {
            abandon(u);
            metrics.heuristicHazard();
            throw xa(XAException.XA_HEURHAZ, "one-phase commit of " + u + " may or may not have written: "
                    + e.getMessage());
        } catch (LeaseholdException e) {
            abandon(u);
            throw xa(XAException.XA_RBROLLBACK, "one-phase commit of " + u + " rolled back: the bag store refused the "
                    + "write: " + e.getMessage());
        }
        metrics.onePhaseCommitted();
        finish(u);
    }

    /** Ends {@code u} without writing, counts and logs the rollback ({@code LEASEHOLD-4216}): the vote to throw. */
    private XAException rollbackVote(UnitOfWork u, String why) {
        abandon(u);
        metrics.rolledBack();
        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4216 {0}", why);
        return xa(XAException.XA_RBROLLBACK, why);
    }

    /** The reason the unit cannot commit any more (a lost or ended lease), or null. */
    private String lostOrLate(UnitOfWork u) {
        if (u.lostReason() != null) {
            return u.lostReason();
        }
        Instant deadline = u.earliestDeadline();
        if (deadline != null && !time.now().isBefore(deadline)) {
            return "its lease ended at " + deadline + " before the commit (the server paused or the transaction "
                    + "manager was slow)";
        }
        return null;
    }

    private void heuristicRollback(UnitOfWork u, String why) throws XAException {
        if (u.xid != null) {
            outcome(u.xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
            reported.add(u.xid + " " + PrepareJournal.Type.HEURISTIC_ROLLBACK);
        }
        metrics.heuristicRollback();
        LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4201 heuristic rollback of {0}: {1}; nothing was written", u, why);
        abandon(u);
        throw xa(XAException.XA_HEURRB, "heuristic rollback of " + u + ": " + why + "; nothing was written");
    }

    /** Writes the unit's messages as one frame and releases its leases with the frame's timestamp. */
    private void write(UnitOfWork u) throws LeaseholdException {
        List<byte[]> payloads = u.payloads();
        if (payloads.isEmpty()) {
            releaseAll(u, null);
            return;
        }
        awaitWritable(u);
        Appended a = store.append(new AppendRequest(config.log(), u.stamps(), null, payloads));
        u.written(a.timestamp());
        metrics.written(a.messages());
        if (!holdUntilCompleted(u)) {
            releaseAll(u, a.timestamp());
        }
    }

    /**
     * Why a unit that writes nothing to the log cannot commit, or null. One that keeps its leases until its transaction
     * completes guards what the transaction writes elsewhere (a database), so its leases become full like a writer's:
     * a lease broken by an older transaction means another may have read or written that state meanwhile.
     */
    private String readOnlyProblem(UnitOfWork u) {
        return u.holdsUntilCompletion() ? upgradeAll(u) : null;
    }

    /**
     * A unit that writes nothing ends now, or, when its transaction will say that it completed, keeps its leases until
     * then: the transaction may have written under them elsewhere (a database), and the next holder must see that.
     */
    private void endWithoutWriting(UnitOfWork u) {
        if (!holdUntilCompleted(u)) {
            releaseAll(u, null);
        }
        finish(u);
    }

    /**
     * If {@code u}'s transaction will tell it when it has completed, marks it as completing and keeps its leases (the
     * renewer goes on) until then, or until {@code InDoubtHoldMillis} have passed; true if so.
     */
    private boolean holdUntilCompleted(UnitOfWork u) {
        if (!u.holdsUntilCompletion()) {
            return false;
        }
        u.state(UnitOfWork.State.COMPLETING);
        u.completionTimer(time.schedule(Micros.plus(time.nowMicros(), Micros.of(config.inDoubtHold())), () -> {
            if (u.endIf(UnitOfWork.State.COMPLETING)) {
                renewer.untrack(u);
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4209 the transaction of {0} did not complete within "
                        + "{1} ms (InDoubtHoldMillis) of this branch's commit; its leases are released now", u,
                        config.inDoubtHold().toMillis());
                releaseAll(u, u.lastWritten());
            }
        }));
        return true;
    }

    // ------------------------------------------------------------------------------------------------ completion

    /**
     * Ties the leases of {@code u}, a branch of the JTA transaction running on this thread, to the end of that whole
     * transaction: an interposed synchronization checks the leases before the two phases begin and releases them
     * after the transaction completed (every resource's branch), so no other holder takes a name while another
     * resource of the transaction, a database say, may still be committing what was done under it. Done once per
     * unit; without a registry (outside a container) or a transaction to register with, leases end with the branch.
     */
    void holdUntilCompletion(UnitOfWork u, TransactionSynchronizationRegistry tsr) {
        if (u.xid == null || tsr == null || u.holdsUntilCompletion()) {
            return;
        }
        try {
            tsr.registerInterposedSynchronization(new Completion(u, tsr));
            u.completionRegistered();
        } catch (IllegalStateException | UnsupportedOperationException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-4010 {0}: no synchronization with the transaction ({1}); "
                    + "its leases end with its branch", u, e.toString());
        }
    }

    /** The end of a unit's whole transaction, as the transaction manager tells it. */
    private final class Completion implements Synchronization {
        private final UnitOfWork u;
        private final TransactionSynchronizationRegistry tsr;

        Completion(UnitOfWork u, TransactionSynchronizationRegistry tsr) {
            this.u = u;
            this.tsr = tsr;
        }

        /**
         * Before the two phases: the unit's leases become full now, so a lease broken by an older transaction rolls
         * this one back with the reason, in the server log and in the exception the application gets, instead of as
         * a bare vote at prepare.
         */
        @Override
        public void beforeCompletion() {
            if (u.state() != UnitOfWork.State.ACTIVE || u.leases().isEmpty()) {
                return;
            }
            String problem = u.lostReason() != null ? u.lostReason() : upgradeAll(u);
            if (problem == null) {
                return;
            }
            u.lost(problem);
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4208 the transaction of {0} rolls back: {1}", u, problem);
            try {
                tsr.setRollbackOnly();
            } catch (IllegalStateException e) {
                // Already completing: the exception below and the vote at prepare roll it back.
            }
            throw new IllegalStateException(new LeaseLostException("the transaction rolls back: " + u + " lost a "
                    + "lease: " + problem + ". Nothing was written; start the transaction over"));
        }

        @Override
        public void afterCompletion(int status) {
            completed(u, status);
        }
    }

    /** The whole transaction of {@code u} completed with {@code status} ({@link Status}): release what it held. */
    void completed(UnitOfWork u, int status) {
        TimeSource.Timer timer = u.completionTimer();
        if (timer != null) {
            timer.cancel();
        }
        if (u.endIf(UnitOfWork.State.COMPLETING)) {
            renewer.untrack(u);
            releaseAll(u, u.lastWritten());
        } else if (u.state() == UnitOfWork.State.ACTIVE) {
            // The transaction ended without the transaction manager ending this branch (it never reached the two
            // phases): nothing was written under the leases, which are released.
            if (status == Status.STATUS_COMMITTED && !u.payloads().isEmpty()) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4215 the transaction of {0} committed without committing "
                        + "this branch: its {1} message(s) were not written", u, u.payloads().size());
            }
            abandon(u);
        }
        // PREPARED: the transaction manager has not decided this branch yet (it will, or recovery will); ENDED: the
        // branch released its leases when it ended (rolled back).
    }

    void rollback(XidKey xid) throws XAException {
        AdapterEvents.Rollback event = new AdapterEvents.Rollback();
        event.begin();
        UnitOfWork known = event.isEnabled() ? branches.get(xid) : null;
        boolean prepared = known != null && known.state() == UnitOfWork.State.PREPARED;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String outcome = null;
        try {
            rollbackBranch(xid);
            outcome = "rolled back";
        } catch (XAException e) {
            outcome = AdapterEvents.xaOutcome(e);
            throw e;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.log = config.log();
                event.branch = xid.toString();
                event.prepared = prepared;
                event.leaseCount = leaseCount;
                event.messageCount = messageCount;
                event.outcome = outcome != null ? outcome : "failed";
                event.commit();
            }
        }
    }

    private void rollbackBranch(XidKey xid) throws XAException {
        UnitOfWork u = branches.get(xid);
        if (u == null) {
            rollbackRecovered(xid);
            return;
        }
        boolean prepared = u.state() == UnitOfWork.State.PREPARED;
        releaseAll(u, null);
        finish(u);
        metrics.rolledBack();
        if (prepared) {
            outcome(xid, PrepareJournal.Type.ROLLED_BACK);
        }
    }

    Xid[] recover(int flags) throws XAException {
        if ((flags & XAResource.TMSTARTRSCAN) == 0) {
            return new Xid[0];
        }
        List<Xid> out = new ArrayList<>();
        List<Xid> newlyPrepared = new ArrayList<>();
        for (PrepareJournal.Entry e : journal.unresolved()) {
            if (branches.containsKey(e.xid()) && !reinstated.contains(e.xid())) {
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
                out.add(e.xid() + " prepared at " + e.preparedAt() + (reinstated.contains(e.xid())
                        ? ", its leases held again after a restart" : branches.containsKey(e.xid()) ? ""
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
                releaseAll(u, null);
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
            branches.put(e.xid(), u);
            reinstated.add(e.xid());
            renewer.track(u, config.maxLease());
            time.schedule(Micros.plus(time.nowMicros(), Micros.of(config.inDoubtHold())), () -> {
                if (u.state() == UnitOfWork.State.PREPARED && reinstated.remove(e.xid()) && branches.remove(e.xid(), u)) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4213 the transaction manager did not decide "
                            + "prepared branch {0} within {1} ms (InDoubtHoldMillis) of the restart; its leases are "
                            + "released, and committing it later is a heuristic rollback", e.xid(),
                            config.inDoubtHold().toMillis());
                    releaseAll(u, null);
                    u.state(UnitOfWork.State.ENDED);
                    renewer.untrack(u);
                }
            });
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4009 prepared branch {0} holds its leases {1} again after the "
                    + "restart, until the transaction manager decides it", e.xid(), u.leases().stream()
                    .map(Lease::describe).toList());
        }
    }

    void forget(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null || !e.heuristic()) {
            throw xa(XAException.XAER_NOTA, "forget of " + xid + ", which has no heuristic outcome here");
        }
        outcome(xid, PrepareJournal.Type.FORGOTTEN);
        reported.removeIf(r -> r.startsWith(xid + " "));
    }

    private void commitRecovered(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null) {
            throw xa(XAException.XAER_NOTA, "commit of " + xid + ", which is not known to this resource manager");
        }
        if (e.state() == PrepareJournal.Type.HEURISTIC_ROLLBACK) {
            throw xa(XAException.XA_HEURRB, "branch " + xid + " was already rolled back heuristically");
        }
        if (e.state() == PrepareJournal.Type.HEURISTIC_COMMIT) {
            throw xa(XAException.XA_HEURCOM, "branch " + xid + " was already committed heuristically");
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
                write(u);
                outcome(xid, PrepareJournal.Type.COMMITTED);
                metrics.twoPhaseCommitted();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4012 recovered branch {0} took its leases back from the "
                        + "lease service, which held them in doubt, and committed", xid);
                return;
            } catch (WriteOutcomeUnknownException ex) {
                outcome(xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
                metrics.heuristicHazard();
                abandon(u);
                throw xa(XAException.XA_HEURHAZ, "commit of recovered branch " + xid + " may or may not have written "
                        + "its messages: " + ex.getMessage());
            } catch (LeaseholdException ex) {
                abandon(u);
                gone.append("the bag store refused the write: ").append(ex.getMessage());
            }
        }
        outcome(xid, PrepareJournal.Type.HEURISTIC_ROLLBACK);
        reported.add(xid + " " + PrepareJournal.Type.HEURISTIC_ROLLBACK);
        metrics.heuristicRollback();
        LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4202 heuristic rollback of recovered branch {0}: its leases "
                + "ended with the restart ({1}), so its {2} message(s) were not written", xid, gone,
                e.payloads().size());
        throw xa(XAException.XA_HEURRB, "heuristic rollback of recovered branch " + xid + ": its leases ended with "
                + "the restart (" + gone + "), so its messages were not written");
    }

    /** The leases a journal entry recorded, as values the lease service knows them by (same holder and generations). */
    private List<Lease> recordedLeases(PrepareJournal.Entry e) {
        PrepareJournal.Holding held = e.holding();
        HolderId holder = held != null ? held.holder() : HolderId.transaction(process, e.xid().toString());
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
                releaseAll(u, null);
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

    private void rollbackRecovered(XidKey xid) throws XAException {
        PrepareJournal.Entry e = journal.get(xid);
        if (e == null) {
            throw xa(XAException.XAER_NOTA, "rollback of " + xid + ", which is not known to this resource manager");
        }
        if (e.state() == PrepareJournal.Type.PREPARED && alreadyWritten(e)) {
            outcome(xid, PrepareJournal.Type.HEURISTIC_COMMIT);
            reported.add(xid + " " + PrepareJournal.Type.HEURISTIC_COMMIT);
            metrics.heuristicCommit();
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4205 rollback of recovered branch {0}, but its messages were "
                    + "written before the restart: heuristic commit", xid);
            throw xa(XAException.XA_HEURCOM, "branch " + xid + " had written its messages before the restart");
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
            throw xa(XAException.XAER_RMERR, "could not read the log to recover branch " + e.xid() + ": " + ex);
        }
    }

    private void outcome(XidKey xid, PrepareJournal.Type type) {
        try {
            journal.outcome(xid, type, time.now());
        } catch (IOException e) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4206 could not record outcome {0} of branch {1} in the "
                    + "journal: {2}; recovery will decide it again from the log", type, xid, e.toString());
        }
    }

    // ------------------------------------------------------------------------------------------------ helpers

    private void releaseAll(UnitOfWork u, Instant watermark) {
        for (Lease l : u.leases()) {
            Instant wm = watermark != null && l.kind() == LeaseKind.FULL && !watermark.isBefore(l.floor())
                    && watermark.isBefore(l.deadline()) ? watermark : null;
            releaseQuietly(l, wm);
        }
    }

    private void abandon(UnitOfWork u) {
        releaseAll(u, null);
        finish(u);
    }

    /** The branch is over for the transaction manager; its leases too, unless it keeps them until completion. */
    private void finish(UnitOfWork u) {
        if (u.state() != UnitOfWork.State.COMPLETING) {
            u.state(UnitOfWork.State.ENDED);
            renewer.untrack(u);
        }
        if (u.xid != null) {
            branches.remove(u.xid, u);
            reinstated.remove(u.xid);
        }
    }

    private void releaseQuietly(Lease l, Instant watermark) {
        try {
            leases.release(l, watermark, watermark == null ? null : "log=" + config.log());
        } catch (LeaseBrokenException | LeaseExpiredException e) {
            // Already over: nothing to release. An expiry after a successful write is harmless (t < deadline).
        } catch (LeaseServiceUnavailableException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4207 could not release {0}: {1}; it expires at {2}",
                    l.describe(), e.getMessage(), l.deadline());
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4207 could not release {0}: {1}; it expires at {2}",
                    l.describe(), e.getMessage(), l.deadline());
        }
    }

    static XAException xa(int code, String message) {
        XAException e = new XAException(message);
        e.errorCode = code;
        return e;
    }
}
