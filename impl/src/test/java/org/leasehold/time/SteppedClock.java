package org.leasehold.time;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.concurrent.atomic.AtomicLong;

/** A real clock that a test steps by hand: {@code base} plus a step that {@link #step} moves at once. */
public final class SteppedClock extends Clock {
    private final Clock base;
    private final AtomicLong stepMicros = new AtomicLong();

    public SteppedClock(Clock base) {
        this.base = base;
    }

    /** Steps the clock by {@code d} (negative: back), as an operator or NTP would. */
    public void step(Duration d) {
        stepMicros.addAndGet(Micros.of(d));
    }

    @Override
    public ZoneId getZone() {
        return base.getZone();
    }

    @Override
    public Clock withZone(ZoneId zone) {
        throw new UnsupportedOperationException("a stepped clock stays in UTC");
    }

    @Override
    public Instant instant() {
        return base.instant().plusNanos(stepMicros.get() * 1_000L);
    }
}
