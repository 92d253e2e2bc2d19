package org.leasehold.lease;

import java.time.Instant;

/**
 * One name of a granted {@link Lease}.
 *
 * @param name          the lease name
 * @param generation    the fencing token: strictly greater than every earlier grant of this name, also across
 *                      restarts of the service
 * @param correlationId this grant's id, linked from the next holder's witness
 * @param floor         the holder must write timestamps strictly above this: the highest watermark of previous
 *                      holders, or the deadline of a predecessor that expired without releasing
 * @param writableFrom  the holder may write from this instant on: the predecessor's deadline plus grace after an
 *                      unrelinquished expiry, otherwise the grant time
 * @param predecessor   the previous holder, as the witness records it
 * @param witness       the service's signed witness of this grant (renewal, upgrade), or null if the service signs
 *                      none; not part of equality (a renewed grant equals the grant it renews)
 */
public record LeaseGrant(String name, long generation, CorrelationId correlationId, Instant floor, Instant writableFrom,
        Predecessor predecessor, GrantWitness witness) {

    /** A grant without a witness. */
    public LeaseGrant(String name, long generation, CorrelationId correlationId, Instant floor, Instant writableFrom,
            Predecessor predecessor) {
        this(name, generation, correlationId, floor, writableFrom, predecessor, null);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LeaseGrant g && g.name.equals(name) && g.generation == generation
                && java.util.Objects.equals(g.correlationId, correlationId) && java.util.Objects.equals(g.floor, floor)
                && java.util.Objects.equals(g.writableFrom, writableFrom)
                && java.util.Objects.equals(g.predecessor, predecessor);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(name, generation, correlationId, floor, writableFrom, predecessor);
    }

    /** This grant with {@code w} as its witness. */
    public LeaseGrant withWitness(GrantWitness w) {
        return new LeaseGrant(name, generation, correlationId, floor, writableFrom, predecessor, w);
    }
}
