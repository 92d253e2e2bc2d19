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

    /**
     * Runs {@code task} once, after {@code delayMicros} of elapsed time: for what waits a while rather than for a time
     * of the clock (a call's timeout, a periodic measurement). On the real clock the wait is measured by a monotonic
     * timer, so a clock stepped back or forward meanwhile neither delays nor hastens it, where a task scheduled with
     * {@link #schedule} for the same moment would run only once the clock reads its time (an hour late after a step
     * back of an hour). On a test source that moves only when told to, elapsed time is that source's time: this is
     * {@link #schedule} at now plus {@code delayMicros}, which is also this default.
     */
    default Timer scheduleAfter(long delayMicros, Runnable task) {
        return schedule(Micros.plus(nowMicros(), delayMicros), task);
    }

    /** A scheduled task that can be cancelled. */
    interface Timer {
        /** Cancels the task if it has not run; harmless otherwise. */
        void cancel();
    }
}
