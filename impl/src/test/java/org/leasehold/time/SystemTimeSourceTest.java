package org.leasehold.time;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The real time source's two kinds of timer under a clock stepped back: one for a time of the clock waits until the
 * clock reads it again (lease deadlines and the like are times of the clock), one after a delay runs after that much
 * elapsed time (a call's timeout, a periodic measurement), however the clock moves.
 */
class SystemTimeSourceTest {

    @Test
    void aTimerAfterADelayRunsOnElapsedTimeWhileOneForATimeOfTheClockWaitsForTheClock() throws Exception {
        try (SystemTimeSource wall = new SystemTimeSource("system-time-test-wall")) {
            SteppedClock clock = new SteppedClock(wall.clock());
            try (SystemTimeSource time = new SystemTimeSource(clock, "system-time-test")) {
                CountDownLatch afterDelay = new CountDownLatch(1);
                CountDownLatch atTime = new CountDownLatch(1);
                time.scheduleAfter(200_000, afterDelay::countDown);
                time.schedule(Micros.plus(time.nowMicros(), 200_000), atTime::countDown);
                clock.step(Duration.ofHours(-1));
                assertTrue(afterDelay.await(10, TimeUnit.SECONDS), "the timer after 200 ms ran although the clock "
                        + "stepped back an hour");
                // The other is due when the clock reads its time again, an hour from now: not after a second.
                assertFalse(atTime.await(1, TimeUnit.SECONDS), "a timer for a time of the clock waits for the clock");
            }
        }
    }

    @Test
    void aTimerAfterADelayCancelledDoesNotRunAndOneNotCancelledRunsOnce() throws Exception {
        try (SystemTimeSource time = new SystemTimeSource("system-time-test-cancel")) {
            CountDownLatch cancelled = new CountDownLatch(1);
            TimeSource.Timer t = time.scheduleAfter(300_000, cancelled::countDown);
            t.cancel();
            t.cancel(); // harmless
            int[] runs = new int[1];
            CountDownLatch ran = new CountDownLatch(1);
            time.scheduleAfter(0, () -> {
                runs[0]++;
                ran.countDown();
            });
            assertTrue(ran.await(10, TimeUnit.SECONDS), "a timer after no delay runs at once");
            assertFalse(cancelled.await(1, TimeUnit.SECONDS), "a cancelled timer does not run");
            assertEquals(1, runs[0]);
        }
    }

    @Test
    void onAManualSourceATimerAfterADelayIsDueWhenTimeHasMovedThatFar() {
        ManualTimeSource time = new ManualTimeSource(java.time.Instant.parse("2026-01-01T00:00:00Z"));
        int[] runs = new int[1];
        time.scheduleAfter(1_000_000, () -> runs[0]++);
        time.advance(Duration.ofMillis(999));
        assertEquals(0, runs[0]);
        time.advance(Duration.ofMillis(1));
        assertEquals(1, runs[0]);
    }
}
