package org.leasehold.remote;

import java.time.Duration;
import java.time.Instant;

/**
 * How far a server's clock is from this client's, as last measured: {@code serverTime ≈ localTime + offset}, within
 * {@code ± errorBound}. The bound is half the round trip of the best recent sample plus an allowance for drift since
 * it was taken (200 ppm).
 *
 * @param offset     server time minus local time
 * @param errorBound how wrong {@code offset} may be
 * @param measuredAt local time of the sample
 */
public record ClockOffset(Duration offset, Duration errorBound, Instant measuredAt) {

    /** Converts a local instant to the server's time. */
    public Instant toServer(Instant local) {
        return local.plus(offset);
    }

    /** Converts a server instant to local time. */
    public Instant toLocal(Instant server) {
        return server.minus(offset);
    }
}
