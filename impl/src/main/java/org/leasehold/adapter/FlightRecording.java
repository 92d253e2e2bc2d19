package org.leasehold.adapter;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Records the adapter's acquires and branch steps as flight recorder events ({@link AdapterEvents}): each step runs
 * inside its event, which is committed, with what the step did, when recording is on.
 */
final class FlightRecording {
    private final AdapterConfig config;
    private final TimeSource time;
    private final Units units;

    /** A step that may fail with {@code E}. */
    interface Step<T, E extends Exception> {
        T run() throws E;
    }

    /** A branch step that returns nothing. */
    interface BranchStep {
        void run() throws XAException;
    }

    FlightRecording(AdapterConfig config, TimeSource time, Units units) {
        this.config = config;
        this.time = time;
        this.units = units;
    }

    /** Runs {@code take}, the acquire of {@code options} for {@code u}, inside an acquire event. */
    Lease acquire(UnitOfWork u, LeaseOptions options, Step<Lease, LeaseholdException> take) throws LeaseholdException {
        AdapterEvents.Acquire event = new AdapterEvents.Acquire();
        event.begin();
        long asked = event.isEnabled() ? time.nowMicros() : 0;
        int heldBefore = event.isEnabled() ? u.nameCount() : 0;
        Lease lease = null;
        String failure = null;
        try {
            lease = take.run();
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

    /** Runs {@code prepare}, the prepare of branch {@code xid}, inside a prepare event. */
    int prepare(XidKey xid, Step<Integer, XAException> prepare) throws XAException {
        AdapterEvents.Prepare event = new AdapterEvents.Prepare();
        event.begin();
        UnitOfWork known = event.isEnabled() ? units.known(xid) : null;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String vote = null;
        try {
            int v = prepare.run();
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

    /** Runs {@code commit}, the commit of branch {@code xid}, inside a commit event. */
    void commit(XidKey xid, boolean onePhase, BranchStep commit) throws XAException {
        AdapterEvents.Commit event = new AdapterEvents.Commit();
        event.begin();
        UnitOfWork known = event.isEnabled() ? units.known(xid) : null;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String outcome = null;
        try {
            commit.run();
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

    /** Runs {@code rollback}, the rollback of branch {@code xid}, inside a rollback event. */
    void rollback(XidKey xid, BranchStep rollback) throws XAException {
        AdapterEvents.Rollback event = new AdapterEvents.Rollback();
        event.begin();
        UnitOfWork known = event.isEnabled() ? units.known(xid) : null;
        boolean prepared = known != null && known.state() == UnitOfWork.State.PREPARED;
        int leaseCount = known == null ? 0 : known.leases().size();
        int messageCount = known == null ? 0 : known.payloads().size();
        String outcome = null;
        try {
            rollback.run();
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
}
