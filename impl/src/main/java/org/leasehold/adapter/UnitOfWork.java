package org.leasehold.adapter;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.bag.LeaseStamp;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseMode;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.TimeSource;

/**
 * What one transaction branch (or local transaction, or connection outside a transaction) holds: its leases, the
 * messages it will write, and whether a lease was lost. Guarded by its own monitor; the lease keeper and the
 * connection thread both touch it. The keeper renews its leases together until it {@link #over() is over}.
 */
final class UnitOfWork implements LeaseKeeper.Holding {

    /**
     * Where the unit is in its life: {@code COMPLETING} is a branch that committed (its frame is written) and keeps its
     * leases until the whole transaction has completed, every other resource's branch included.
     */
    enum State { ACTIVE, PREPARED, COMPLETING, ENDED }

    /** The transaction branch, or null for a local transaction or a connection outside one. */
    final XidKey xid;
    final HolderId holder;
    /** Wound-wait age: when the unit began. */
    final Instant startedAt;
    /** Tentative leases and buffered messages (a transaction), or full leases and immediate writes. */
    final boolean transactional;

    private final List<Lease> leases = new ArrayList<>();
    private final List<byte[]> payloads = new ArrayList<>();
    private State state = State.ACTIVE;
    private String lost;
    private LeaseKeeper.Keeping keeping;
    private Instant lastWritten;
    private Instant preparedAt;
    private boolean completionRegistered;
    private TimeSource.Timer completionTimer;

    UnitOfWork(XidKey xid, HolderId holder, Instant startedAt, boolean transactional) {
        this.xid = xid;
        this.holder = holder;
        this.startedAt = startedAt;
        this.transactional = transactional;
    }

    @Override
    public synchronized List<Lease> leases() {
        return List.copyOf(leases);
    }

    synchronized int nameCount() {
        int n = 0;
        for (Lease l : leases) {
            n += l.grants().size();
        }
        return n;
    }

    /** The lease of this unit that covers {@code name}, or null. */
    synchronized Lease leaseOn(String name) {
        for (Lease l : leases) {
            for (LeaseGrant g : l.grants()) {
                if (g.name().equals(name)) {
                    return l;
                }
            }
        }
        return null;
    }

    synchronized void add(Lease lease) {
        leases.add(lease);
    }

    /** Replaces a lease by its renewed or upgraded value (same names and generations). */
    @Override
    public synchronized void replace(Lease before, Lease after) {
        int i = leases.indexOf(before);
        if (i >= 0) {
            leases.set(i, after);
        }
    }

    synchronized void buffer(byte[] payload) {
        payloads.add(payload);
    }

    synchronized List<byte[]> payloads() {
        return List.copyOf(payloads);
    }

    synchronized List<LeaseStamp> stamps() {
        List<LeaseStamp> all = new ArrayList<>();
        for (Lease l : leases) {
            all.addAll(LeaseStamp.of(l));
        }
        return all;
    }

    synchronized State state() {
        return state;
    }

    synchronized void state(State s) {
        state = s;
    }

    /** Moves to {@code ENDED} if the unit is in state {@code from}; true if it did (so exactly one caller ends it). */
    synchronized boolean endIf(State from) {
        if (state != from) {
            return false;
        }
        state = State.ENDED;
        return true;
    }

    /** The unit's transaction will tell it when it completes. */
    synchronized void completionRegistered() {
        completionRegistered = true;
    }

    synchronized void completionTimer(TimeSource.Timer t) {
        completionTimer = t;
    }

    /** The timer that ends the wait for the transaction's completion, or null. */
    synchronized TimeSource.Timer completionTimer() {
        return completionTimer;
    }

    /** Whether the unit's transaction tells it when it completes, so that its leases are held until then. */
    synchronized boolean holdsUntilCompletion() {
        return completionRegistered;
    }

    /** The holder, and per lease stamp ({@link #stamps()} order) the mode and correlation id, for the journal. */
    synchronized PrepareJournal.Holding journalHolding() {
        List<LeaseMode> modes = new ArrayList<>();
        List<CorrelationId> ids = new ArrayList<>();
        for (Lease l : leases) {
            for (LeaseGrant g : l.grants()) {
                modes.add(l.mode());
                ids.add(g.correlationId());
            }
        }
        return new PrepareJournal.Holding(holder, modes, ids);
    }

    synchronized void lost(String reason) {
        if (lost == null) {
            lost = reason;
        }
    }

    synchronized String lostReason() {
        return lost;
    }

    /** Ended, or lost a lease: its leases need no keeping any more. */
    @Override
    public synchronized boolean over() {
        return state == State.ENDED || lost != null;
    }

    /** The keeping of this unit's leases, while they are kept, else null. */
    synchronized LeaseKeeper.Keeping keeping() {
        return keeping;
    }

    synchronized void keeping(LeaseKeeper.Keeping k) {
        keeping = k;
    }

    synchronized void written(Instant t) {
        if (lastWritten == null || t.isAfter(lastWritten)) {
            lastWritten = t;
        }
    }

    synchronized Instant lastWritten() {
        return lastWritten;
    }

    synchronized void preparedAt(Instant t) {
        preparedAt = t;
    }

    synchronized Instant preparedAt() {
        return preparedAt;
    }

    /** The earliest deadline of the unit's leases, or null if it holds none. */
    synchronized Instant earliestDeadline() {
        Instant min = null;
        for (Lease l : leases) {
            if (min == null || l.deadline().isBefore(min)) {
                min = l.deadline();
            }
        }
        return min;
    }

    @Override
    public synchronized String toString() {
        return (xid != null ? "branch " + xid : transactional ? "local transaction" : "connection") + " of " + holder
                + " (" + leases.size() + " lease(s), " + payloads.size() + " message(s), " + state + ")";
    }
}
