package org.leasehold.time;

import java.time.Clock;
import java.time.Instant;

/**
 * The clock and timers of one component. Logic never reads the wall clock directly; it asks its time source, so a
 * test can substitute {@link ManualTimeSource} and move time by hand.
 */
public interface TimeSource {

    /** The clock (UTC). */
    Clock clock();

    /** The current time in microseconds since the epoch. */
    default long nowMicros() {
        return Micros.of(clock().instant());
    }

    /** The current time. */
    default Instant now() {
        return clock().instant();
    }

    /**
     * Runs {@code task} once, as soon as the clock reads at least {@code atMicros}. Tasks must be short and must
     * not block: they run on a shared timer thread (or, for a manual source, on the thread that moves time).
     */
    Timer schedule(long atMicros, Runnable task);

    /** A scheduled task that can be cancelled. */
    interface Timer {
        /** Cancels the task if it has not run; harmless otherwise. */
        void cancel();
    }
}
