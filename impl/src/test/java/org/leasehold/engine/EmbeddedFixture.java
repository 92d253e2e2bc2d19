package org.leasehold.engine;

import java.time.Duration;
import java.time.Instant;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;

/** The embedded engine on a manual clock. */
public final class EmbeddedFixture implements LeaseFixture {
    public static final Instant START = Instant.parse("2026-03-01T10:00:00Z");

    private final ManualTimeSource time;
    private final EngineConfig config;
    private EmbeddedLeaseService service;

    public EmbeddedFixture(Settings settings) {
        this(settings, new ManualTimeSource(START));
    }

    public EmbeddedFixture(Settings settings, ManualTimeSource time) {
        this.time = time;
        this.config = EngineConfig.defaults().withMaxLeaseDuration(settings.maxLease()).withGrace(settings.grace())
                .withQuietPeriod(settings.quietPeriod()).withHistoryPerName(settings.historyPerName())
                .withMaxWaitersPerName(settings.maxWaitersPerName());
        this.service = new EmbeddedLeaseService(config, time);
    }

    public ManualTimeSource time() {
        return time;
    }

    @Override
    public LeaseService service() {
        return service;
    }

    public EmbeddedLeaseService engine() {
        return service;
    }

    @Override
    public void advance(Duration d) {
        time.advance(d);
    }

    @Override
    public void awaitTime(Instant t) throws InterruptedException {
        java.util.concurrent.CountDownLatch latch = new java.util.concurrent.CountDownLatch(1);
        time.schedule(org.leasehold.time.Micros.of(t), latch::countDown);
        latch.await();
    }

    @Override
    public void restart() {
        service.close();
        service = new EmbeddedLeaseService(config, time);
    }

    @Override
    public void close() {
        service.close();
    }
}
