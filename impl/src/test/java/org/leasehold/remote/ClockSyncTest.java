package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;

import org.junit.jupiter.api.Test;

/**
 * The NTP-style estimate of a server's clock offset: the sample with the smallest error wins while samples agree, and
 * a sample that contradicts the estimate (a clock stepped since it was taken) replaces it, whatever its error.
 */
class ClockSyncTest {
    private static final long SECOND = 1_000_000;

    @Test
    void theSampleWithTheSmallestErrorWinsWhileSamplesAgree() {
        ClockSync c = new ClockSync();
        assertEquals(ClockSync.UNKNOWN, c.snapshot(0).errorBound());
        // Sent at 1 s, answered 100 µs later; the server read 1 s + 50 µs + 20 µs: offset 20 µs, error 50 µs.
        assertTrue(c.sample(SECOND, SECOND + 70, SECOND + 100));
        assertEquals(20, c.offsetMicros());
        // A slower answer that agrees (offset 300 µs ± 1 ms) does not replace it.
        assertFalse(c.sample(2 * SECOND, 2 * SECOND + 1_300, 2 * SECOND + 2_000));
        assertEquals(20, c.offsetMicros());
        assertEquals(50 + 200, c.currentError(SECOND + 100 + SECOND), "the error grows by 200 ppm of the time since");
        // A faster one replaces it.
        assertTrue(c.sample(3 * SECOND, 3 * SECOND + 25, 3 * SECOND + 10));
        assertEquals(20, c.offsetMicros());
        assertEquals(Duration.ofNanos(5_000), c.snapshot(3 * SECOND + 10).errorBound());
    }

    @Test
    void aSampleThatContradictsTheEstimateReplacesItWhateverItsErrorAfterALocalClockStep() {
        ClockSync c = new ClockSync();
        assertTrue(c.sample(SECOND, SECOND + 50, SECOND + 100));
        assertEquals(0, c.offsetMicros());
        // The local clock is stepped back 690 ms. A second later (real time), a slow sample: sent at local 1.31 s,
        // answered 1 ms later, the server reading 2 s + 500 µs. Its range, 690 ms ± 500 µs, cannot contain the
        // offset the fast sample gave (0 ± 250 µs by now): the fast one is wrong, and the estimate follows the step.
        long t0 = 2 * SECOND - 690_000;
        assertTrue(c.sample(t0, 2 * SECOND + 500, t0 + 1_000));
        assertEquals(690_000, c.offsetMicros());
        assertEquals(Duration.ofNanos(500_000), c.snapshot(t0 + 1_000).errorBound());
        // The same for a step forward of 1 s, seen through an even slower sample.
        long u0 = 3 * SECOND - 690_000 + SECOND;
        assertTrue(c.sample(u0, 3 * SECOND + 5_000, u0 + 10_000));
        assertEquals(-SECOND + 690_000, c.offsetMicros());
        assertEquals(Duration.ofNanos(5_000_000), c.snapshot(u0 + 10_000).errorBound());
    }

    @Test
    void aSampleThatOverlapsTheEstimateByAMicrosecondDoesNotReplaceIt() {
        ClockSync c = new ClockSync();
        assertTrue(c.sample(SECOND, SECOND + 50, SECOND + 100));
        // At the same instant, a range of 600 µs ± 550 µs reaches down to 50 µs, the estimate's edge (0 ± 50 µs).
        long t0 = SECOND + 100 - 1_100;
        assertFalse(c.sample(t0, t0 + 550 + 600, SECOND + 100));
        assertEquals(0, c.offsetMicros());
        // One microsecond further and the two cannot both hold.
        assertTrue(c.sample(t0, t0 + 550 + 601, SECOND + 100));
        assertEquals(601, c.offsetMicros());
    }
}
