package org.leasehold.time;

import java.time.Duration;
import java.time.Instant;

/** Conversions between {@link Instant}s and the microseconds since the epoch that logic and stored records use. */
public final class Micros {
    private Micros() {
    }

    /** Microseconds since the epoch, truncating nanoseconds. */
    public static long of(Instant instant) {
        return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1_000);
    }

    /** The instant of {@code micros} since the epoch. */
    public static Instant toInstant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /** A duration in microseconds, saturating at {@link Long#MAX_VALUE}. */
    public static long of(Duration duration) {
        try {
            return Math.addExact(Math.multiplyExact(duration.getSeconds(), 1_000_000L), duration.getNano() / 1_000);
        } catch (ArithmeticException e) {
            return duration.isNegative() ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    /** {@code a + b}, saturating instead of overflowing. */
    public static long plus(long a, long b) {
        long r = a + b;
        if (((a ^ r) & (b ^ r)) < 0) {
            return a < 0 ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
        return r;
    }
}
