package org.leasehold.server;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicLong;

import org.leasehold.lease.GrantWitness;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.time.Micros;

/**
 * The principal each lease the server granted belongs to, by name and generation (a generation is granted once per
 * name, so the pair names one holding). Recorded before the grant is answered, so no caller can learn a grant before
 * its owner is known; its deadline moves with renewals and upgrades; forgotten when the lease is released through the
 * server and, for a lease that ends otherwise (expired, broken, taken again), once its deadline has passed, after
 * which the engine refuses every call on it as expired anyway. It therefore holds no more than the leases whose
 * deadline is still ahead (and those whose deadline passed since the last sweep: every grant sweeps up to
 * {@link #SWEEP_PER_GRANT} of them, so the sweeps keep ahead of the grants).
 *
 * <p>With each owner it keeps the witnesses of the lease's latest answers ({@link #RECENT_WITNESSES} at most: the
 * grant's, then each renewal's or upgrade's), so that the holder can ask for the proof of one it was sent without
 * ({@code ProofRequest}): the server signs a grant's or renewal's witness only when asked.
 */
final class GrantOwners {
    /** How many leases past their deadline a grant forgets at most (the sweep's share of each grant). */
    static final int SWEEP_PER_GRANT = 8;
    /**
     * How long after its deadline a lease is forgotten: long enough that a renewal the engine made just before the
     * deadline has told its new deadline here ({@link #moved}) before the sweep looks.
     */
    static final long MARGIN_MICROS = 1_000_000;
    /** How many of a lease's latest witnesses (its grant's, renewals', upgrades') its owner keeps for proof requests. */
    static final int RECENT_WITNESSES = 8;
    private static final GrantWitness[] NO_WITNESSES = new GrantWitness[0];

    /** One name's grant. */
    private record Key(String name, long generation) {
    }

    /** When an owner is due to be looked at again: its deadline then, made unique by a sequence number. */
    private record Due(long deadlineMicros, long seq) implements Comparable<Due> {
        @Override
        public int compareTo(Due o) {
            int c = Long.compare(deadlineMicros, o.deadlineMicros);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    /** A lease's owner. */
    private static final class Owner {
        private final String principal;
        private final List<Key> keys;
        /** The lease's deadline as last known (renewals and upgrades move it). */
        private volatile long deadlineMicros;
        /** Its place in the sweep's order; replaced when the sweep finds the deadline moved. */
        private volatile Due due;
        private volatile boolean ended;
        /** The witnesses of the lease's latest answers, the newest first (replaced whole, under this). */
        private volatile GrantWitness[] witnesses = NO_WITNESSES;

        private Owner(String principal, List<Key> keys, long deadlineMicros) {
            this.principal = principal;
            this.keys = keys;
            this.deadlineMicros = deadlineMicros;
        }

        /** Keeps the witnesses of {@code lease}, an answer about this owner's lease, before the older ones. */
        synchronized void remember(Lease lease) {
            GrantWitness[] old = witnesses;
            List<GrantWitness> now = new ArrayList<>(RECENT_WITNESSES);
            for (LeaseGrant g : lease.grants()) {
                if (g.witness() != null && now.size() < RECENT_WITNESSES) {
                    now.add(g.witness());
                }
            }
            if (now.isEmpty()) {
                return;
            }
            for (int i = 0; i < old.length && now.size() < RECENT_WITNESSES; i++) {
                if (!now.contains(old[i])) {
                    now.add(old[i]);
                }
            }
            witnesses = now.toArray(NO_WITNESSES);
        }
    }

    private final Map<Key, Owner> owners = new ConcurrentHashMap<>();
    private final ConcurrentSkipListMap<Due, Owner> byDeadline = new ConcurrentSkipListMap<>();
    private final AtomicLong seq = new AtomicLong();

    /** Records {@code lease} as granted to {@code principal}; first forgets some leases past their deadline. */
    void granted(String principal, Lease lease, long nowMicros) {
        sweep(nowMicros, SWEEP_PER_GRANT);
        List<Key> keys = new ArrayList<>(lease.grants().size());
        for (LeaseGrant g : lease.grants()) {
            keys.add(new Key(g.name(), g.generation()));
        }
        Owner o = new Owner(principal, List.copyOf(keys), Micros.of(lease.deadline()));
        o.remember(lease);
        o.due = new Due(o.deadlineMicros, seq.incrementAndGet());
        byDeadline.put(o.due, o);
        for (Key k : o.keys) {
            owners.put(k, o);
        }
    }

    /** The principal that generation {@code generation} of {@code name} was granted to; null if unknown here. */
    String principalOf(String name, long generation) {
        Owner o = owners.get(new Key(name, generation));
        return o == null ? null : o.principal;
    }

    /** The lease (as the engine answered a renewal or upgrade) has a new deadline. */
    void moved(Lease lease) {
        Owner o = ownerOf(lease);
        if (o != null) {
            o.deadlineMicros = Math.max(o.deadlineMicros, Micros.of(lease.deadline()));
            o.remember(lease);
        }
    }

    /**
     * The witness of generation {@code generation} of {@code name} whose statement is {@code statement}, among those
     * the lease's latest answers carried, if {@code principal} owns that lease; null otherwise (not granted here, or
     * to another principal, forgotten since it ended, or {@link #RECENT_WITNESSES} answers old).
     */
    GrantWitness witness(String principal, String name, long generation, byte[] statement) {
        Owner o = owners.get(new Key(name, generation));
        if (o == null || o.ended || !o.principal.equals(principal)) {
            return null;
        }
        for (GrantWitness w : o.witnesses) {
            if (w.hasStatement(statement)) {
                return w;
            }
        }
        return null;
    }

    /** The lease ended through the server (released): forget it. */
    void ended(Lease lease) {
        Owner o = ownerOf(lease);
        if (o != null) {
            forget(o);
        }
    }

    private Owner ownerOf(Lease lease) {
        for (LeaseGrant g : lease.grants()) {
            Owner o = owners.get(new Key(g.name(), g.generation()));
            if (o != null) {
                return o;
            }
        }
        return null;
    }

    private void forget(Owner o) {
        o.ended = true;
        byDeadline.remove(o.due, o);
        for (Key k : o.keys) {
            owners.remove(k, o);
        }
    }

    /**
     * Forgets up to {@code max} leases whose deadline is {@link #MARGIN_MICROS} or more before {@code nowMicros}; a
     * lease whose deadline moved meanwhile is put back in order instead.
     */
    void sweep(long nowMicros, int max) {
        long before = Micros.plus(nowMicros, -MARGIN_MICROS);
        for (int i = 0; i < max; i++) {
            Map.Entry<Due, Owner> first = byDeadline.firstEntry();
            if (first == null || first.getKey().deadlineMicros() > before) {
                return;
            }
            Owner o = first.getValue();
            if (!byDeadline.remove(first.getKey(), o)) {
                continue; // another thread took it
            }
            long deadline = o.deadlineMicros;
            if (deadline > before && !o.ended) {
                o.due = new Due(deadline, seq.incrementAndGet());
                byDeadline.put(o.due, o);
            } else {
                for (Key k : o.keys) {
                    owners.remove(k, o);
                }
            }
        }
    }

    /** Forgets everything (the engine was replaced: none of its grants is valid any more). */
    void clear() {
        byDeadline.clear();
        owners.clear();
    }

    /** Leases remembered now. */
    int size() {
        return byDeadline.size();
    }
}
