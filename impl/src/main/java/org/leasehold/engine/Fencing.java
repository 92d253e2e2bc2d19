package org.leasehold.engine;

import java.time.Instant;
import java.util.List;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.time.Micros;

/**
 * What keeps a writer above every earlier writer of a name: each grant's generation, floor and writable-from, and the
 * floors that ended holdings leave behind (a published watermark, an expired deadline plus grace, a re-take's implied
 * watermark).
 *
 * <p>Every method runs under the locks of the shards of the names it touches.
 */
final class Fencing {
    private static final System.Logger LOG = System.getLogger(EmbeddedLeaseService.class.getName());

    private final Stripes stripes;
    private final long idHigh;
    private final long grace;
    private final long clockError;
    private final int historyPerName;
    private final Waits waits;

    Fencing(Stripes stripes, long idHigh, long grace, long clockError, int historyPerName, Waits waits) {
        this.stripes = stripes;
        this.waits = waits;
        this.idHigh = idHigh;
        this.grace = grace;
        this.clockError = clockError;
        this.historyPerName = historyPerName;
    }

    /** The generation base of a life whose time base is {@code timeBase}: its milliseconds shifted by 20 bits. */
    static long generationBase(long timeBase) {
        return Math.max(0, Math.floorDiv(timeBase, 1_000L)) << 20;
    }

    /**
     * The floor a name starts with in a life with time base {@code timeBase} that grants from {@code availableFrom}.
     *
     * <p>Every lease an earlier incarnation granted had a deadline (so a watermark) below its last grant plus the
     * maximum lease; that was before this start, or before the horizon it recorded. With a quiet period shorter than
     * that, the operator chose to trust that no earlier incarnation was granting. The recorded bound is above every
     * floor and deadline it granted: new floors start there (never later than the first grant).
     *
     * @param previousBound the bound the previous incarnation's time mark recorded, or {@link Long#MIN_VALUE} if none
     */
    static long initialFloor(long timeBase, long quiet, long maxLease, long availableFrom, long previousBound) {
        long floor = Micros.plus(timeBase, Math.min(quiet, maxLease));
        if (previousBound != Long.MIN_VALUE) {
            floor = Math.max(floor, Math.min(previousBound, availableFrom));
        }
        return floor;
    }

    /** Grants {@code w} on {@code states} (already decided grantable and cleaned). */
    Lease grant(Waiter w, NameState[] states, long now, long deadline) {
        long floor = Long.MIN_VALUE;
        for (NameState st : states) {
            floor = Math.max(floor, st.floor);
        }
        Holding h = new Holding(w.holder, w.mode, w.kind, w.age, now, deadline, floor, w.names, w.principal);
        Instant grantedAt = Micros.toInstant(now);
        LeaseGrant[] grants = new LeaseGrant[states.length];
        for (int i = 0; i < states.length; i++) {
            grants[i] = addHolder(states[i], stripes.shardOf(states[i].name), h, i, now, grantedAt);
        }
        List<LeaseGrant> list = grants.length == 1 ? List.of(grants[0]) : List.of(grants);
        Lease lease = new Lease(w.holder, w.mode, w.kind, grantedAt, Micros.toInstant(deadline), list);
        h.lease = lease;
        return lease;
    }

    /** Makes {@code h} a holder of {@code st} (its name number {@code i}) and returns that name's grant. */
    LeaseGrant addHolder(NameState st, Stripes.Shard s, Holding h, int i, long now, Instant grantedAt) {
        long gen = ++st.generation;
        CorrelationId id = new CorrelationId(idHigh, (++s.idCounter << 8) | s.index);
        h.generations[i] = gen;
        h.ids[i] = id;
        st.holders.add(h);
        st.lastTouched = now;
        return new LeaseGrant(st.name, gen, id, st.floorInstant(), st.writableFromInstant(now, grantedAt),
                st.predecessor());
    }

    /**
     * {@code h} no longer holds {@code name}: older requests there no longer wait for its holder ({@link Waits}). A
     * re-taken holding is not forgotten: its holder holds the name again at once, and the requests still wait for it.
     */
    private void forget(Holding h, String name, int status) {
        if (status != Holding.RETAKEN) {
            waits.forget(h.holder, name);
        }
    }

    /** Removes holdings that ended (expired, broken, re-taken) from a name, folding what they leave behind. */
    void clean(NameState st, long now) {
        List<Holding> holders = st.holders;
        for (int i = holders.size() - 1; i >= 0; i--) {
            Holding h = holders.get(i);
            int status = h.status();
            if (status == Holding.ACTIVE && h.deadline > now) {
                continue;
            }
            holders.remove(i);
            forget(h, st.name, status);
            int idx = h.indexOf(st.name);
            switch (status) {
                case Holding.ACTIVE -> {
                    if (h.kind == LeaseKind.FULL) {
                        // Unrelinquished: anything it wrote is below its deadline, and may still land until its
                        // buckets are sealed, so the next holder writes above the deadline, after the grace.
                        st.raiseFloor(h.deadline);
                        st.raiseWritableFrom(Micros.plus(h.deadline, grace));
                    }
                    ended(st, h, idx, Ending.EXPIRED, h.deadline, Long.MIN_VALUE, null);
                }
                case Holding.BROKEN -> ended(st, h, idx, Ending.BROKEN, h.endedAt, Long.MIN_VALUE, null);
                case Holding.RETAKEN -> {
                    long wm = h.impliedWatermark;
                    if (wm != Long.MIN_VALUE) {
                        st.raiseFloor(wm);
                    }
                    ended(st, h, idx, Ending.RETAKEN, h.endedAt, wm, null);
                }
                default -> LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-1901 internal: released holding of {0} "
                        + "still listed", st.name);
            }
        }
    }

    /**
     * The watermark a released full lease publishes, in micros ({@link Long#MIN_VALUE} for none): within [floor,
     * deadline) of {@code h}, and none for a tentative lease.
     */
    static long watermark(Holding h, Lease lease, Instant watermark) throws InvalidLeaseRequestException {
        if (watermark == null) {
            return Long.MIN_VALUE;
        }
        if (h.kind == LeaseKind.TENTATIVE) {
            throw new InvalidLeaseRequestException(Reason.WATERMARK_ON_TENTATIVE, lease.describe()
                    + " is tentative, so nothing was written under it and it publishes no watermark: "
                    + "release it with a null watermark, or upgrade before writing");
        }
        long wm = Micros.of(watermark);
        if (wm < h.floor || wm >= h.deadline) {
            throw new InvalidLeaseRequestException(Reason.WATERMARK_OUT_OF_RANGE, "the watermark " + watermark
                    + " is outside [floor " + Micros.toInstant(h.floor) + ", deadline "
                    + Micros.toInstant(h.deadline) + ") of " + lease.describe()
                    + ": publish the highest timestamp written under the lease, or null if none");
        }
        return wm;
    }

    /** Folds a released holding (name number {@code i}) into {@code st}: its watermark raises the floor. */
    void relinquished(NameState st, Holding h, int i, long wm, String metadata, long now) {
        st.holders.remove(h);
        forget(h, st.name, Holding.RELEASED);
        if (wm != Long.MIN_VALUE) {
            st.raiseFloor(wm);
        }
        ended(st, h, i, Ending.RELINQUISHED, now, wm, metadata);
    }

    /**
     * The watermark assumed for a full lease its own identity takes again: the previous incarnation published none,
     * and wrote only timestamps it chose before now (it is gone), so at most now plus the clock error, and always
     * below its deadline.
     */
    long impliedWatermark(Holding h, long now) {
        return Math.max(h.floor, Math.min(h.deadline - 1, now + clockError));
    }

    private void ended(NameState st, Holding h, int idx, Ending ending, long at, long watermark, String metadata) {
        st.ended(h.ids[idx], h.generations[idx], h.holder, ending, at, watermark, metadata, historyPerName);
    }
}
