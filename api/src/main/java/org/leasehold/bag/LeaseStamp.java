package org.leasehold.bag;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

import org.leasehold.lease.Ending;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;

/**
 * The facts of one lease name that an append needs to apply the write rule: the message's timestamp must lie in
 * {@code (floor, deadline)}, the clock must have reached {@code writableFrom}, and when the previous holder's lease
 * expired unrelinquished, its buckets must be sealed first. The name, generation and witness are stored with the
 * message; floor, deadline and the rest are only checked.
 *
 * @param name                 the lease name
 * @param generation           the grant's generation (fencing token)
 * @param floor                timestamps must be strictly above it
 * @param deadline             timestamps must be strictly below it
 * @param writableFrom         no write before this instant
 * @param predecessorExpiredAt the deadline of the previous holder if its lease expired unrelinquished, else null
 * @param witness              the frame witness of the grant (docs/FORMAT.md), or empty if the lease service signs none
 */
public record LeaseStamp(String name, long generation, Instant floor, Instant deadline, Instant writableFrom,
        Instant predecessorExpiredAt, byte[] witness) {

    /** How long {@link #of(Lease)} waits for a witness's signature. */
    public static final java.time.Duration WITNESS_WAIT = java.time.Duration.ofSeconds(10);

    public LeaseStamp {
        Objects.requireNonNull(name, "LeaseStamp.name");
        Objects.requireNonNull(floor, "LeaseStamp.floor");
        Objects.requireNonNull(deadline, "LeaseStamp.deadline");
        Objects.requireNonNull(writableFrom, "LeaseStamp.writableFrom");
        witness = witness == null ? new byte[0] : witness.clone();
    }

    /** The witness bytes (a copy). */
    @Override
    public byte[] witness() {
        return witness.clone();
    }

    /** The witness length without copying it. */
    public int witnessLength() {
        return witness.length;
    }

    /**
     * One stamp per name of {@code lease}, with the lease's deadline, each grant's floor and writable time, and its
     * witness with the proof ({@link org.leasehold.lease.GrantWitness#await}: waits for the batch signature if it
     * has not come yet; an embedded engine's signer then signs the batch without waiting out its linger).
     *
     * @throws IllegalArgumentException if the lease is tentative: nothing may be written under it before it is
     *                                  upgraded to a full lease
     * @throws IllegalStateException    if the witness's signature does not come within {@link #WITNESS_WAIT}
     */
    public static List<LeaseStamp> of(Lease lease) {
        if (lease.kind() == LeaseKind.TENTATIVE) {
            throw new IllegalArgumentException("the " + lease.describe() + " is tentative: upgrade it to a full lease "
                    + "before writing under it");
        }
        List<LeaseStamp> stamps = new ArrayList<>(lease.grants().size());
        for (LeaseGrant g : lease.grants()) {
            Instant expired = g.predecessor() != null && g.predecessor().ending() == Ending.EXPIRED
                    ? g.predecessor().endedAt() : null;
            stamps.add(new LeaseStamp(g.name(), g.generation(), g.floor(), lease.deadline(), g.writableFrom(), expired,
                    g.witness() == null ? null : g.witness().await(WITNESS_WAIT)));
        }
        return Collections.unmodifiableList(stamps);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LeaseStamp s && s.name.equals(name) && s.generation == generation && s.floor.equals(floor)
                && s.deadline.equals(deadline) && s.writableFrom.equals(writableFrom)
                && Objects.equals(s.predecessorExpiredAt, predecessorExpiredAt)
                && java.util.Arrays.equals(s.witness, witness);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, generation, floor, deadline);
    }

    @Override
    public String toString() {
        return "LeaseStamp[" + name + " gen " + generation + ", (" + floor + ", " + deadline + "), writableFrom "
                + writableFrom + (predecessorExpiredAt != null ? ", predecessor expired at " + predecessorExpiredAt : "")
                + ", witness " + witness.length + " B]";
    }
}
