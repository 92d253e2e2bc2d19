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
 */
public record LeaseGrant(String name, long generation, CorrelationId correlationId, Instant floor, Instant writableFrom,
        Predecessor predecessor) {
}
