package org.leasehold.remote;

import java.time.Duration;

import org.leasehold.time.Micros;

/**
 * Estimates a server's clock offset NTP-style from samples {@code (t0, s, t1)}: local send time, server time in the
 * reply, local receive time. The server read its clock somewhere in {@code [t0, t1]}, so {@code offset = s - (t0 +
 * t1) / 2} with error at most {@code (t1 - t0) / 2}. Of the samples taken, the one with the smallest error (after
 * adding drift since it was taken) wins, unless a new sample's range does not overlap the estimate's: the true offset
 * lies in every sample's range, so the estimate is then wrong (a clock was stepped since it was taken), and the new
 * sample replaces it whatever its error. Thread-safe.
 */
final class ClockSync {
    /** Allowed drift between the two clocks, in parts per million. */
    static final long DRIFT_PPM = 200;

    /** The error bound reported before any sample: a century, i.e. unknown. */
    static final Duration UNKNOWN = Duration.ofDays(36_500);

    private long offsetMicros;
    private long errorMicros = Long.MAX_VALUE;
    private long sampledAt;

    /** Folds in a sample; returns true if it improved the estimate, or replaced one it contradicts. */
    synchronized boolean sample(long t0, long serverMicros, long t1) {
        if (t1 < t0) {
            return false;
        }
        long rttHalf = (t1 - t0 + 1) / 2;
        long offset = serverMicros - (t0 + (t1 - t0) / 2);
        // A step of either clock since the estimate was taken shows as a sample that cannot agree with it; keeping the
        // smaller error would keep an offset that is no longer true (and a clock stepped beyond the bound unnoticed).
        long kept = currentError(t1);
        if (errorMicros == Long.MAX_VALUE || rttHalf <= kept || Math.abs(offset - offsetMicros) > rttHalf + kept) {
            offsetMicros = offset;
            errorMicros = rttHalf;
            sampledAt = t1;
            return true;
        }
        return false;
    }

    synchronized boolean hasSample() {
        return errorMicros != Long.MAX_VALUE;
    }

    synchronized long offsetMicros() {
        return offsetMicros;
    }

    /** The error bound at local time {@code now}: the sample's error plus drift since. */
    synchronized long currentError(long now) {
        if (errorMicros == Long.MAX_VALUE) {
            return Long.MAX_VALUE;
        }
        return errorMicros + Math.max(0, now - sampledAt) * DRIFT_PPM / 1_000_000L;
    }

    synchronized ClockOffset snapshot(long now) {
        if (errorMicros == Long.MAX_VALUE) {
            return new ClockOffset(Duration.ZERO, UNKNOWN, Micros.toInstant(now));
        }
        return new ClockOffset(Duration.ofNanos(offsetMicros * 1_000L), Duration.ofNanos(currentError(now) * 1_000L),
                Micros.toInstant(sampledAt));
    }
}
