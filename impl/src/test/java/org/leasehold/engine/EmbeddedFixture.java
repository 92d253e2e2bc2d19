package org.leasehold.engine;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.leasehold.audit.AuditSigner;
import org.leasehold.contract.LeaseFixture;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;

/** The embedded engine on a manual clock. */
public final class EmbeddedFixture implements LeaseFixture {
    public static final Instant START = Instant.parse("2026-03-01T10:00:00Z");
    private static final AtomicInteger ELSEWHERE = new AtomicInteger();

    /**
     * Makes {@code who}, a transaction started at {@code startedAt}, wait for a lease of {@code engine}: it asks for a
     * name a full lease of another holder keeps, and stays queued. Wound-wait breaks a younger tentative holding only
     * while its holder waits. Returns the waiting request.
     */
    static CompletableFuture<Lease> waitElsewhere(EmbeddedLeaseService engine, HolderId who, Instant startedAt)
            throws Exception {
        String name = "elsewhere/" + ELSEWHERE.incrementAndGet();
        engine.acquire(LeaseRequest.builder(new HolderId("elsewhere", name), name).build());
        CompletableFuture<Lease> waiting = engine.acquireAsync(LeaseRequest.builder(who, name).tentative()
                .startedAt(startedAt).waitFor(Duration.ofSeconds(30)).build());
        if (waiting.isDone() || engine.inspect(name, 1).get(0).waiters().isEmpty()) {
            throw new IllegalStateException(who + " did not queue for " + name + ": " + waiting);
        }
        return waiting;
    }

    private final ManualTimeSource time;
    private final EngineConfig config;
    private final AuditSigner signer;
    private EmbeddedLeaseService service;

    public EmbeddedFixture(Settings settings) {
        this(settings, new ManualTimeSource(START));
    }

    public EmbeddedFixture(Settings settings, ManualTimeSource time) {
        this(settings, time, null);
    }

    /** An engine whose witnesses {@code signer} signs (null: none), with the signer's service id. */
    public EmbeddedFixture(Settings settings, ManualTimeSource time, AuditSigner signer) {
        this.time = time;
        this.signer = signer;
        EngineConfig c = EngineConfig.defaults().withMaxLeaseDuration(settings.maxLease()).withGrace(settings.grace())
                .withQuietPeriod(settings.quietPeriod()).withHistoryPerName(settings.historyPerName())
                .withMaxWaitersPerName(settings.maxWaitersPerName());
        this.config = signer == null ? c : c.withServiceId(signer.serviceId());
        this.service = new EmbeddedLeaseService(config, time, null, signer);
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
        service = new EmbeddedLeaseService(config, time, null, signer);
    }

    @Override
    public void close() {
        service.close();
    }
}
