package org.leasehold.adapter;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStore;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.connector.NoLeaseHeldException;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The calls a connection makes on behalf of its unit of work: acquire leases, append messages (buffered in a
 * transaction, written at once outside one), read the log, end the unit of a connection outside a transaction, and
 * commit or roll back a local transaction.
 */
final class UnitCalls {
    private final AdapterConfig config;
    private final LeaseService leases;
    private final BagStore store;
    private final TimeSource time;
    private final AdapterMetrics metrics;
    private final ClockCheck clocks;
    private final Units units;
    private final Settlement settlement;
    private final WriteReadiness readiness;

    UnitCalls(AdapterConfig config, LeaseService leases, BagStore store, TimeSource time, AdapterMetrics metrics,
            ClockCheck clocks, Units units, Settlement settlement, WriteReadiness readiness) {
        this.config = config;
        this.leases = leases;
        this.store = store;
        this.time = time;
        this.metrics = metrics;
        this.clocks = clocks;
        this.units = units;
        this.settlement = settlement;
        this.readiness = readiness;
    }

    /**
     * Takes the leases {@code options} asks for, for {@code u}. Names {@code u} already holds (from an earlier acquire
     * of the same transaction, say a nested {@code @Leased} method) are kept as granted, not taken again; if it holds
     * them all, the lease holding the first name is returned. {@code principal} (null: none known) is the one the
     * container signed the calling handle on as; an embedded engine names it in the lease's witnesses, a lease server
     * names the one its credentials prove instead.
     */
    Lease acquire(UnitOfWork u, LeaseOptions options, String principal) throws LeaseholdException {
        LeaseOptions o = options;
        checkUsable(u);
        if (u.state() != UnitOfWork.State.ACTIVE) {
            throw new ConnectorException(u + " is already " + u.state().name().toLowerCase(Locale.ROOT)
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
                .waitFor(o.maxWait() != null ? o.maxWait() : config.defaultWait()).build().withPrincipal(principal);
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
            readiness.readyForSuccessor(lease);
        } catch (LeaseholdException | RuntimeException e) {
            settlement.releaseQuietly(lease, null);
            throw e;
        }
        u.add(lease);
        units.keep(u, request.leaseTime() != null ? request.leaseTime() : config.maxLease());
        return lease;
    }

    /** Buffers {@code payloads} for {@code u}'s commit (a transaction), or writes them now (outside one). */
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
        Appended a = store.append(new AppendRequest(config.log(), settlement.stamps(u), null, List.of(payloads)));
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
        units.stopKeeping(u);
        Instant wm = u.lastWritten();
        for (Lease l : u.leases()) {
            settlement.releaseQuietly(l, wm != null && !wm.isBefore(l.floor()) && wm.isBefore(l.deadline()) ? wm : null);
        }
    }

    /** Commits a local transaction: its leases made full, its messages written as one frame, its leases released. */
    void commitLocal(UnitOfWork u) throws LeaseholdException {
        try {
            String problem = settlement.upgradeAll(u);
            if (problem != null) {
                throw new LeaseLostException(problem);
            }
            settlement.writeAndRelease(u);
        } finally {
            units.finish(u);
        }
    }

    void rollbackLocal(UnitOfWork u) {
        settlement.abandon(u);
    }
}
