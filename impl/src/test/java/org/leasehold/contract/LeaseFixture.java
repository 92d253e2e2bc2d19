package org.leasehold.contract;

import java.time.Duration;

import org.leasehold.lease.LeaseService;

/**
 * A lease service under test, with a way to move its time forward. For the embedded engine that is a manual clock;
 * for a service in another process it may be a test clock it exposes, or real waiting.
 */
public interface LeaseFixture extends AutoCloseable {

    LeaseService service();

    /** Moves the service's time forward by {@code d} and lets timers that became due run. */
    void advance(Duration d);

    /**
     * Blocks until the service's time reaches {@code t}. With a manual clock, some other thread must be moving
     * time forward.
     */
    void awaitTime(java.time.Instant t) throws InterruptedException;

    /** Restarts the service (a new incarnation with the same settings, no state); time keeps going. */
    void restart();

    @Override
    void close();

    /** The settings a contract test asks for. */
    record Settings(Duration maxLease, Duration grace, Duration quietPeriod, int historyPerName, int maxWaitersPerName) {
        public static Settings defaults() {
            return new Settings(Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ZERO, 4, 100);
        }

        public Settings withQuietPeriod(Duration d) {
            return new Settings(maxLease, grace, d, historyPerName, maxWaitersPerName);
        }
    }
}
