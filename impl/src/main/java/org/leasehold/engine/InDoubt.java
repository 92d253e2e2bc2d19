package org.leasehold.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseNames;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Keeps the leases of transactions in doubt: renews a held lease for a holder that may be unable to, and reinstates
 * the full leases an earlier incarnation granted to a branch that was prepared when it stopped.
 *
 * <p>Each operation, and each renewal its timer makes, holds the locks of all the lease's shards.
 */
final class InDoubt {
    private static final System.Logger LOG = System.getLogger(EmbeddedLeaseService.class.getName());

    private final TimeSource time;
    private final Stripes stripes;
    private final Gate gate;
    private final Fencing fencing;
    private final Holders holders;
    private final long maxLease;
    private final String serviceId;

    InDoubt(TimeSource time, Stripes stripes, Gate gate, Fencing fencing, Holders holders, long maxLease,
            String serviceId) {
        this.time = time;
        this.stripes = stripes;
        this.gate = gate;
        this.fencing = fencing;
        this.holders = holders;
        this.maxLease = maxLease;
        this.serviceId = serviceId;
    }

    /** A lease held in doubt as it now stands, and the principal it was granted to (null where none is known). */
    record Held(Lease lease, String principal) {
    }

    /** See {@link EmbeddedLeaseService#holdInDoubt}. */
    Held hold(Lease lease, Instant until) throws LeaseException {
        if (until == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "holding a lease in doubt needs an end");
        }
        int[] ls = stripes.of(lease);
        stripes.lockAll(ls);
        try {
            long now = time.nowMicros();
            gate.ensureOpen();
            gate.ensureUnfenced(now);
            Holding h = holders.find(lease, now);
            if (h.kind != LeaseKind.FULL) {
                throw new InvalidLeaseRequestException(Reason.NOT_FULL, lease.describe() + " is tentative: only a full "
                        + "lease (one that may be written under) is held in doubt; upgrade it first");
            }
            long end = Micros.of(until);
            if (end <= now) {
                throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the end of the hold " + until
                        + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
            }
            boolean scheduled = h.heldUntil > now;
            h.heldUntil = Math.min(end, Micros.plus(now, Micros.of(EmbeddedLeaseService.MAX_IN_DOUBT_HOLD)));
            if (!scheduled) {
                scheduleKeep(h, ls);
            }
            return new Held(h.lease, h.principal);
        } finally {
            stripes.unlockAll(ls);
        }
    }

    /** Renews a held-in-doubt lease when half its time is left, as its holder would. */
    private void scheduleKeep(Holding h, int[] ls) {
        time.schedule(Math.max(h.grantedAt, h.deadline - maxLease / 2), () -> keepInDoubt(h, ls));
    }

    private void keepInDoubt(Holding h, int[] ls) {
        stripes.lockAll(ls);
        try {
            long now = time.nowMicros();
            if (gate.closed() || h.status() != Holding.ACTIVE || h.deadline <= now || h.heldUntil <= now) {
                return; // released, ended, or the hold is over: the lease ends at its deadline
            }
            if (gate.fencedAt(now)) {
                // Renewing nothing now, as for a holder: try again soon, and the lease ends at its deadline if the
                // engine does not grant again before.
                time.schedule(Micros.plus(now, Math.max(1_000L, maxLease / 10)), () -> keepInDoubt(h, ls));
                return;
            }
            long d = Math.min(Micros.plus(now, maxLease), h.heldUntil);
            if (d > h.deadline) {
                h.deadline = d;
                h.lease = new Lease(h.holder, h.mode, h.kind, h.lease.grantedAt(), Micros.toInstant(d),
                        h.lease.grants());
            }
            if (h.heldUntil > h.deadline) {
                scheduleKeep(h, ls);
            }
        } finally {
            stripes.unlockAll(ls);
        }
    }

    /** See {@link EmbeddedLeaseService#reinstate}. */
    Lease reinstate(Lease earlier) throws LeaseException {
        int[] idx = stripes.of(earlier);
        if (earlier.kind() != LeaseKind.FULL) {
            throw new IllegalArgumentException("only a full lease can be reinstated, not " + earlier.describe()
                    + ": a tentative lease was never written under");
        }
        List<LeaseGrant> grants = new ArrayList<>(earlier.grants());
        grants.sort(Comparator.comparing(LeaseGrant::name));
        String[] names = new String[grants.size()];
        long floor = Long.MIN_VALUE;
        for (int i = 0; i < names.length; i++) {
            names[i] = grants.get(i).name();
            LeaseNames.check(names[i]);
            floor = Math.max(floor, Micros.of(grants.get(i).floor()));
        }
        stripes.lockAll(idx);
        try {
            gate.ensureOpen();
            long now = time.nowMicros();
            gate.ensureUnfenced(now); // owned, and below the time mark's horizon: the new deadline is within its bound
            NameState[] states = new NameState[names.length];
            for (int i = 0; i < names.length; i++) {
                states[i] = stripes.stateOf(names[i], now);
                fencing.clean(states[i], now);
                for (Holding other : states[i].holders) {
                    if (Admission.conflicts(other, earlier.mode())) {
                        throw new LeaseBusyException(names[i], Micros.toInstant(other.deadline), "'"
                                + LeaseNames.printable(names[i]) + "' is held by " + other.holder + " until "
                                + Micros.toInstant(other.deadline) + ", so the earlier lease " + earlier.describe()
                                + " cannot be reinstated");
                    }
                }
            }
            long deadline = Micros.plus(now, maxLease);
            Holding h = new Holding(earlier.holder(), earlier.mode(), LeaseKind.FULL, Micros.of(earlier.grantedAt()), now,
                    deadline, floor, names, null);
            for (int i = 0; i < names.length; i++) {
                NameState st = states[i];
                LeaseGrant g = grants.get(i);
                h.generations[i] = g.generation();
                h.ids[i] = g.correlationId();
                st.generation = Math.max(st.generation, g.generation());
                st.holders.add(h);
                st.lastTouched = now;
            }
            Lease lease = new Lease(earlier.holder(), earlier.mode(), LeaseKind.FULL, Micros.toInstant(now),
                    Micros.toInstant(deadline), grants);
            h.lease = lease;
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1005 lease service {0} reinstated {1} of an earlier "
                    + "incarnation, now until {2}", serviceId, lease.describe(), lease.deadline());
            return lease;
        } finally {
            stripes.unlockAll(idx);
        }
    }
}
