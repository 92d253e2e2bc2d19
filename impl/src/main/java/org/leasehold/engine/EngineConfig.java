package org.leasehold.engine;

import java.time.Duration;

import org.leasehold.config.Check;

/**
 * Settings of an {@link EmbeddedLeaseService}. Every value is checked by {@link #validate()}, which says what is
 * wrong and what would be accepted.
 *
 * @param serviceId          stable identity of this service; null picks a random one
 * @param maxLeaseDuration   the longest lease granted (requests are clamped to it); default 10 s
 * @param grace              how long after an unrelinquished expiry the next holder waits before writing; default 2 s
 * @param clockErrorBound    bound on clock error between processes, used when an identity re-takes its own lease;
 *                           default 500 ms
 * @param quietPeriod        after start, grant nothing for this long; null means {@code maxLeaseDuration + grace},
 *                           the safe value (shorter is safe only if no previous incarnation can have granted a lease)
 * @param maxNamesPerRequest the most names one request may carry; default and maximum 1,000
 * @param historyPerName     how many metadata entries each name keeps (oldest dropped first); default 16
 * @param maxMetadataChars   the longest metadata string accepted; default 4,096
 * @param maxWaitersPerName  the longest queue per name; further waiting requests are refused; default 10,000
 * @param shards             internal lock stripes, a power of two up to 256; default 64
 * @param idleRetention      an idle name (no holder, no waiter) is forgotten after this long; its floor and
 *                           generation survive as a per-shard bound; default 5 min
 */
public record EngineConfig(String serviceId, Duration maxLeaseDuration, Duration grace, Duration clockErrorBound,
        Duration quietPeriod, int maxNamesPerRequest, int historyPerName, int maxMetadataChars, int maxWaitersPerName,
        int shards, Duration idleRetention) {

    /** The hard upper bound of {@link #maxNamesPerRequest}. */
    public static final int NAMES_PER_REQUEST_LIMIT = 1_000;

    /** The defaults. */
    public static EngineConfig defaults() {
        return new EngineConfig(null, Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMillis(500), null,
                NAMES_PER_REQUEST_LIMIT, 16, 4_096, 10_000, 64, Duration.ofMinutes(5));
    }

    /** The quiet period in effect: as configured, or {@code maxLeaseDuration + grace}. */
    public Duration effectiveQuietPeriod() {
        return quietPeriod != null ? quietPeriod : maxLeaseDuration.plus(grace);
    }

    /** Checks every value. */
    public EngineConfig validate() {
        Check.positiveAtMost("maxLeaseDuration", maxLeaseDuration, Duration.ofDays(1),
                "leases are meant to be short: use at most one day (the default is 10 s)");
        Check.notNegative("grace", grace);
        Check.notNegative("clockErrorBound", clockErrorBound);
        if (quietPeriod != null) {
            Check.notNegative("quietPeriod", quietPeriod);
        }
        Check.inRange("maxNamesPerRequest", maxNamesPerRequest, 1, NAMES_PER_REQUEST_LIMIT, "");
        Check.atLeast("historyPerName", historyPerName, 1, " entry (the oldest is dropped first)");
        Check.atLeast("maxMetadataChars", maxMetadataChars, 0, "");
        Check.atLeast("maxWaitersPerName", maxWaitersPerName, 1, "");
        if (shards < 1 || shards > 256 || Integer.bitCount(shards) != 1) {
            throw Check.invalid("shards", shards, "use a power of two from 1 to 256");
        }
        Check.positive("idleRetention", idleRetention);
        return this;
    }

    public EngineConfig withServiceId(String v) {
        return new EngineConfig(v, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withMaxLeaseDuration(Duration v) {
        return new EngineConfig(serviceId, v, grace, clockErrorBound, quietPeriod, maxNamesPerRequest, historyPerName,
                maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withGrace(Duration v) {
        return new EngineConfig(serviceId, maxLeaseDuration, v, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withClockErrorBound(Duration v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, v, quietPeriod, maxNamesPerRequest, historyPerName,
                maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withQuietPeriod(Duration v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, v, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withMaxNamesPerRequest(int v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, v, historyPerName,
                maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withHistoryPerName(int v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest, v,
                maxMetadataChars, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withMaxMetadataChars(int v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, v, maxWaitersPerName, shards, idleRetention);
    }

    public EngineConfig withMaxWaitersPerName(int v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, maxMetadataChars, v, shards, idleRetention);
    }

    public EngineConfig withShards(int v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, v, idleRetention);
    }

    public EngineConfig withIdleRetention(Duration v) {
        return new EngineConfig(serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, shards, v);
    }
}
