package org.leasehold.server;

import java.time.Instant;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;

/**
 * The engine the server serves and the clock it runs on. In production that is one engine on the system clock for
 * the server's life. With a test clock, tests may replace the engine (a fresh service with new settings, or a
 * restart on the same clock); nothing else ever does.
 */
final class EngineHolder {
    private final boolean testClock;
    private volatile TimeSource time;
    private volatile EmbeddedLeaseService engine;
    private volatile EngineConfig config;

    EngineHolder(EngineConfig config, Instant testClockStart) {
        this.testClock = testClockStart != null;
        this.time = testClock ? new ManualTimeSource(testClockStart) : new SystemTimeSource("leasehold-engine-timer");
        this.config = config;
        this.engine = new EmbeddedLeaseService(config, time);
    }

    EmbeddedLeaseService engine() {
        return engine;
    }

    TimeSource time() {
        return time;
    }

    boolean testClock() {
        return testClock;
    }

    ManualTimeSource manual() {
        return (ManualTimeSource) time;
    }

    EngineConfig config() {
        return config;
    }

    /** Test clock only: a new engine with {@code newConfig}; the clock restarts at {@code start} unless null. */
    synchronized void reset(EngineConfig newConfig, Instant start) {
        if (!testClock) {
            throw new IllegalStateException("only a server on a test clock can be reset");
        }
        EmbeddedLeaseService old = engine;
        if (start != null) {
            time = new ManualTimeSource(start);
        }
        config = newConfig;
        engine = new EmbeddedLeaseService(newConfig, time);
        old.close();
    }

    void close() {
        engine.close();
        if (time instanceof SystemTimeSource s) {
            s.close();
        }
    }
}
