package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;

/** Every range of {@link EngineConfig#validate()} at both sides of each bound, with the message a user reads. */
class EngineConfigTest {
    private static final EngineConfig DEFAULTS = EngineConfig.defaults();

    private static void accepted(UnaryOperator<EngineConfig> change) {
        EngineConfig c = change.apply(DEFAULTS);
        assertSame(c, c.validate());
    }

    private static String refused(UnaryOperator<EngineConfig> change) {
        EngineConfig c = change.apply(DEFAULTS);
        return assertThrows(IllegalArgumentException.class, c::validate).getMessage();
    }

    @Test
    void theDefaultsAreValidAndTheQuietPeriodDefaultsToTheLongestLeasePlusGrace() {
        assertSame(DEFAULTS, DEFAULTS.validate());
        assertEquals(Duration.ofSeconds(12), DEFAULTS.effectiveQuietPeriod());
        assertEquals(Duration.ofSeconds(3), DEFAULTS.withQuietPeriod(Duration.ofSeconds(3)).effectiveQuietPeriod());
    }

    @Test
    void durationsAreCheckedAtTheirBounds() {
        accepted(c -> c.withMaxLeaseDuration(Duration.ofNanos(1000)));
        accepted(c -> c.withMaxLeaseDuration(Duration.ofDays(1)));
        assertEquals("maxLeaseDuration is PT0S; it must be a positive duration",
                refused(c -> c.withMaxLeaseDuration(Duration.ZERO)));
        assertEquals("maxLeaseDuration is PT24H0.000001S; leases are meant to be short: use at most one day "
                + "(the default is 10 s)", refused(c -> c.withMaxLeaseDuration(Duration.ofDays(1).plusNanos(1000))));
        accepted(c -> c.withGrace(Duration.ZERO));
        assertEquals("grace is PT-0.001S; it must be zero or positive",
                refused(c -> c.withGrace(Duration.ofMillis(-1))));
        accepted(c -> c.withClockErrorBound(Duration.ZERO));
        assertEquals("clockErrorBound is PT-0.001S; it must be zero or positive",
                refused(c -> c.withClockErrorBound(Duration.ofMillis(-1))));
        accepted(c -> c.withQuietPeriod(Duration.ZERO));
        assertEquals("quietPeriod is PT-0.001S; it must be zero or positive",
                refused(c -> c.withQuietPeriod(Duration.ofMillis(-1))));
        accepted(c -> c.withIdleRetention(Duration.ofMillis(1)));
        assertEquals("idleRetention is PT0S; it must be a positive duration",
                refused(c -> c.withIdleRetention(Duration.ZERO)));
    }

    @Test
    void countsAreCheckedAtTheirBounds() {
        accepted(c -> c.withMaxNamesPerRequest(1));
        accepted(c -> c.withMaxNamesPerRequest(EngineConfig.NAMES_PER_REQUEST_LIMIT));
        assertEquals("maxNamesPerRequest is 0; use 1 to 1000", refused(c -> c.withMaxNamesPerRequest(0)));
        assertEquals("maxNamesPerRequest is 1001; use 1 to 1000", refused(c -> c.withMaxNamesPerRequest(1001)));
        accepted(c -> c.withHistoryPerName(1));
        assertEquals("historyPerName is 0; use at least 1 entry (the oldest is dropped first)",
                refused(c -> c.withHistoryPerName(0)));
        accepted(c -> c.withMaxMetadataChars(0));
        assertEquals("maxMetadataChars is -1; use 0 or more", refused(c -> c.withMaxMetadataChars(-1)));
        accepted(c -> c.withMaxWaitersPerName(1));
        assertEquals("maxWaitersPerName is 0; use at least 1", refused(c -> c.withMaxWaitersPerName(0)));
    }

    @Test
    void shardsArePowersOfTwoFromOneTo256() {
        for (int shards = 1; shards <= 256; shards *= 2) {
            int s = shards;
            accepted(c -> c.withShards(s));
        }
        for (int shards : new int[] {0, -256, 3, 6, 255, 257, 384, 512}) {
            assertEquals("shards is " + shards + "; use a power of two from 1 to 256",
                    refused(c -> c.withShards(shards)));
        }
    }

    @Test
    void eachWitherChangesOnlyItsOwnComponent() {
        EngineConfig c = DEFAULTS.withServiceId("s").withMaxLeaseDuration(Duration.ofSeconds(7))
                .withGrace(Duration.ofSeconds(1)).withClockErrorBound(Duration.ofMillis(9))
                .withQuietPeriod(Duration.ofSeconds(4)).withMaxNamesPerRequest(5).withHistoryPerName(6)
                .withMaxMetadataChars(7).withMaxWaitersPerName(8).withShards(16)
                .withIdleRetention(Duration.ofMinutes(2));
        assertEquals(new EngineConfig("s", Duration.ofSeconds(7), Duration.ofSeconds(1), Duration.ofMillis(9),
                Duration.ofSeconds(4), 5, 6, 7, 8, 16, Duration.ofMinutes(2)), c);
    }
}
