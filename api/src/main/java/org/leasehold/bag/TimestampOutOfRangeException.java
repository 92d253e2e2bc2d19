package org.leasehold.bag;

import java.time.Instant;

/**
 * No acceptable timestamp exists for the append under its leases right now, or the one given is not acceptable.
 * Nothing was written. {@link #reason()} says why and {@link #retryAt()} when trying again could succeed.
 */
public class TimestampOutOfRangeException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    /** Why the timestamp was refused, for programs (the message is for people). */
    public enum Reason {
        /** The given timestamp is not strictly above the floor of every lease. */
        NOT_ABOVE_FLOOR,
        /** The timestamp is not strictly below the deadline of every lease: the lease is over (or nearly). */
        NOT_BELOW_DEADLINE,
        /** The clock has not reached a lease's {@code writableFrom} (or the successor's writable time) yet. */
        NOT_YET_WRITABLE,
        /** A lease's floor is further ahead of this process's clock than the maximum clock error. */
        FLOOR_AHEAD_OF_CLOCK,
        /** The given timestamp is further in the future than the maximum clock error. */
        IN_FUTURE,
        /** The timestamp lies outside the years the store can represent (1970 to 9999). */
        UNREPRESENTABLE,
        /**
         * The timestamp lies further from the latest signed time the leases' witnesses carry than the store's bound
         * ({@code signedTimeBound}, 1 s by default): this process's clock, or the one that chose the timestamp, is
         * off from the lease service's.
         */
        FAR_FROM_SIGNED_TIME
    }

    private final Reason reason;
    private final Instant timestamp;
    private final Instant retryAt;

    public TimestampOutOfRangeException(Reason reason, Instant timestamp, Instant retryAt, String message) {
        super(message);
        this.reason = reason;
        this.timestamp = timestamp;
        this.retryAt = retryAt;
    }

    public Reason reason() {
        return reason;
    }

    /** The refused timestamp (given, or the one the store would have chosen), or null. */
    public Instant timestamp() {
        return timestamp;
    }

    /** When a retry could succeed, or null if retrying under the same leases never will. */
    public Instant retryAt() {
        return retryAt;
    }
}
