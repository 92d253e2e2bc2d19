package org.leasehold.simulation;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;

import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * A machine's clock: true time plus an offset, drifting at a rate in parts per million from the start of the run. It
 * never goes back (the drift is far above -1). Its timers are events of the {@link Scheduler}, run on its thread at
 * the true time the clock reaches them.
 */
final class SimClock implements TimeSource {
    private final Scheduler scheduler;
    private final long origin;
    private final long offset;
    private final double drift;
    private final Clock clock = new Local();

    /**
     * @param offset µs this clock is ahead of true time at {@code origin}
     * @param ppm    drift, parts per million (positive: runs fast)
     */
    SimClock(Scheduler scheduler, long origin, long offset, double ppm) {
        this.scheduler = scheduler;
        this.origin = origin;
        this.offset = offset;
        this.drift = ppm / 1e6;
    }

    long localOf(long trueTime) {
        return trueTime + offset + (long) Math.floor(drift * (trueTime - origin));
    }

    /** The first true time at which this clock reads at least {@code local}. */
    long trueTimeOf(long local) {
        long t = origin + (long) Math.floor((local - offset - origin) / (1 + drift));
        while (localOf(t) < local) {
            t++;
        }
        while (t > Long.MIN_VALUE && localOf(t - 1) >= local) {
            t--;
        }
        return t;
    }

    @Override
    public Clock clock() {
        return clock;
    }

    @Override
    public long nowMicros() {
        return localOf(scheduler.now());
    }

    @Override
    public Instant now() {
        return Micros.toInstant(nowMicros());
    }

    @Override
    public Timer schedule(long atMicros, Runnable task) {
        Scheduler.Event e = scheduler.at(trueTimeOf(atMicros), task);
        return e::cancel;
    }

    private final class Local extends Clock {
        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("a simulated clock is UTC only");
        }

        @Override
        public Instant instant() {
            return Micros.toInstant(nowMicros());
        }
    }
}
