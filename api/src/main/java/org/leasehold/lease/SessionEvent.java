package org.leasehold.lease;

import java.time.Instant;

/**
 * What happened to a lease that is kept alive by renewals on the application's behalf (Chubby's session events).
 *
 * @param type   what happened
 * @param lease  the lease as last granted or renewed
 * @param at     when the keeper noticed, in service time (as the keeper estimates it)
 * @param detail for people: why (the renewal failure, or how long the outage lasted)
 */
public record SessionEvent(Type type, Lease lease, Instant at, String detail) {

    /** The events, in the order a lease can go through them. */
    public enum Type {
        /**
         * A renewal failed (the service is unreachable or restarting) and the lease's deadline is approaching: the
         * holder should stop starting new work under it. Renewals go on until the deadline.
         */
        JEOPARDY,
        /** A renewal succeeded after {@link #JEOPARDY}: the lease survived the outage, with a later deadline. */
        SAFE,
        /**
         * The lease is lost: its deadline passed without a successful renewal, or the service said it is over
         * (expired, broken, re-taken). Nothing may be written under it any more. Final.
         */
        EXPIRED
    }
}
