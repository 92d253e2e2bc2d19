package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.time.SteppedClock;
import org.leasehold.time.SystemTimeSource;

/**
 * The {@code interval} flush policy forces what was acknowledged within its interval of elapsed time, even when the
 * writer's clock is stepped back an hour right after the append (a real directory, the real clock stepped by the
 * test). Before, the force waited for the clock to read the time it was scheduled for, an hour later, so a machine
 * crash in that hour could lose what the policy promises to lose at most an interval of.
 */
class FlushIntervalClockStepTest {

    @Test
    void acknowledgedMessagesAreForcedWithinTheIntervalThoughTheClockSteppedBack() throws Exception {
        Path root = freshDir("flush-interval-clock-step");
        try (SystemTimeSource wall = new SystemTimeSource("flush-step-wall")) {
            SteppedClock clock = new SteppedClock(wall.clock());
            try (SystemTimeSource time = new SystemTimeSource(clock, "flush-step");
                    FileBagStore store = FileBagStore.open(config(root).flushPolicy(FlushPolicy.interval(
                            Duration.ofMillis(100))).build(), time)) {
                Instant now = time.now();
                LeaseStamp l = lease("acct/1", 1, now.minusSeconds(60), now.plusSeconds(7_200));
                long before = store.stats().forces();
                store.append(req("log", List.of(l), "acknowledged, not yet forced"));
                clock.step(Duration.ofHours(-1));
                long forces = before;
                for (int i = 0; i < 200 && forces == before; i++) {
                    Thread.sleep(50);
                    forces = store.stats().forces();
                }
                assertTrue(forces > before, "the data file forced within 10 s (the interval is 100 ms) although the "
                        + "clock stepped back an hour: " + before + " forces before, " + forces + " after");
                assertEquals(List.of("acknowledged, not yet forced"), texts(store, ReadRequest.all("log")));
            }
        }
    }
}
