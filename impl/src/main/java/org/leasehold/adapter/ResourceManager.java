package org.leasehold.adapter;

import java.util.List;

import jakarta.transaction.TransactionSynchronizationRegistry;

import javax.transaction.xa.XAException;
import javax.transaction.xa.Xid;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.BagStore;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.LeaseService;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.TimeSource;

/**
 * The resource manager behind every managed connection of one configuration: it turns units of work into lease
 * operations and bag-store writes, and transaction branches into the two-phase flow. It puts its parts together and
 * is the one door connections, XA resources and the runtime call through:
 * <ul>
 *   <li>{@link Units}: the units of work, the branches among them, and the keeping of their leases;
 *   <li>{@link UnitCalls}: acquire, append and read on behalf of a connection, and local transactions;
 *   <li>{@link XaBranches}: prepare, commit and rollback of transaction branches;
 *   <li>{@link Completion}: a branch's leases held until its whole transaction has completed;
 *   <li>{@link Recovery}: the journal's branches, their outcomes, and branches of an earlier run;
 *   <li>{@link Settlement}: upgrading, writing and releasing a unit's leases and messages;
 *   <li>{@link WriteReadiness}: sealing an expired predecessor, and waiting until leases are writable;
 *   <li>{@link FlightRecording}: the flight recorder events of acquires and branch steps.
 * </ul>
 */
final class ResourceManager {
    private final AdapterConfig config;
    private final AdapterMetrics metrics;
    private final Units units;
    private final UnitCalls calls;
    private final XaBranches branches;
    private final Completion completion;
    private final Recovery recovery;
    private final FlightRecording recording;

    ResourceManager(AdapterConfig config, LeaseService leases, BagStore store, PrepareJournal journal, TimeSource time,
            LeaseKeeper keeper, SessionEvents events, AdapterMetrics metrics, String process, ClockCheck clocks) {
        this.config = config;
        this.metrics = metrics;
        this.units = new Units(process, time, keeper, events);
        WriteReadiness readiness = new WriteReadiness(config, store, time);
        Settlement settlement = new Settlement(config, leases, store, time, metrics, clocks, units, readiness);
        this.calls = new UnitCalls(config, leases, store, time, metrics, clocks, units, settlement, readiness);
        this.completion = new Completion(config, time, units, settlement);
        this.recovery = new Recovery(config, leases, store, journal, time, metrics, units, settlement);
        this.branches = new XaBranches(config, leases, journal, time, metrics, units, settlement, completion,
                recovery);
        this.recording = new FlightRecording(config, time, units);
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

    /** The units of work, for the connections that choose which unit a call belongs to. */
    Units units() {
        return units;
    }

    /** What the journal holds for {@code xid} (for tests and diagnostics). */
    PrepareJournal.Entry journalEntry(XidKey xid) {
        return recovery.journalEntry(xid);
    }

    // ------------------------------------------------------------------------------------------------ calls

    /** See {@link UnitCalls#acquire}. */
    Lease acquire(UnitOfWork u, LeaseOptions options, String principal) throws LeaseholdException {
        return recording.acquire(u, options, () -> calls.acquire(u, options, principal));
    }

    void append(UnitOfWork u, byte[][] payloads) throws LeaseholdException {
        calls.append(u, payloads);
    }

    MessageStream read(ReadRequest request) throws LeaseholdException {
        return calls.read(request);
    }

    /** Fails with {@link LeaseLostException} if the unit lost a lease. */
    void checkUsable(UnitOfWork u) throws LeaseLostException {
        calls.checkUsable(u);
    }

    /** Ends a unit outside a transaction: release its leases with the last timestamp written as watermark. */
    void endAuto(UnitOfWork u) {
        calls.endAuto(u);
    }

    void commitLocal(UnitOfWork u) throws LeaseholdException {
        calls.commitLocal(u);
    }

    void rollbackLocal(UnitOfWork u) {
        calls.rollbackLocal(u);
    }

    /** See {@link Completion#holdUntilCompletion}. */
    void holdUntilCompletion(UnitOfWork u, TransactionSynchronizationRegistry tsr) {
        completion.holdUntilCompletion(u, tsr);
    }

    // ------------------------------------------------------------------------------------------------ XA

    int prepare(XidKey xid) throws XAException {
        return recording.prepare(xid, () -> branches.prepare(xid));
    }

    void commit(XidKey xid, boolean onePhase) throws XAException {
        recording.commit(xid, onePhase, () -> branches.commit(xid, onePhase));
    }

    void rollback(XidKey xid) throws XAException {
        recording.rollback(xid, () -> branches.rollback(xid));
    }

    Xid[] recover(int flags) throws XAException {
        return branches.recover(flags);
    }

    void forget(XidKey xid) throws XAException {
        branches.forget(xid);
    }

    // ------------------------------------------------------------------------------------------------ recovery

    /** See {@link Recovery#reinstatePrepared}. */
    void reinstatePrepared(EmbeddedLeaseService engine) {
        recovery.reinstatePrepared(engine);
    }

    /** The branches with a heuristic outcome that the transaction manager has not forgotten yet, for the admin view. */
    List<String> heuristicBranches() {
        return recovery.heuristicBranches();
    }

    /** Prepared branches awaiting the transaction manager's decision (of this run or recovered), for the admin view. */
    List<String> preparedBranches() {
        return recovery.preparedBranches();
    }
}
