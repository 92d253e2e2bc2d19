package org.leasehold.etcd;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * An {@link EtcdLeaseService} on a manual clock against a real etcd, under a key prefix of its own (so tests sharing
 * one etcd never see each other's names). A restart is a new service on the same prefix: the state stays in etcd.
 */
final class EtcdFixture implements LeaseFixture {
    static final Instant START = Instant.parse("2026-03-01T10:00:00Z");
    private static EtcdCluster single;

    private final ManualTimeSource time;
    private final EtcdConfig config;
    private EtcdLeaseService service;

    EtcdFixture(Settings settings, EtcdCluster cluster, ManualTimeSource time, Duration clockError) {
        this.time = time;
        this.config = EtcdConfig.defaults(cluster.endpoints()).withPrefix("test/" + UUID.randomUUID() + "/")
                .withTimes(settings.maxLease(), settings.grace(), clockError, settings.quietPeriod())
                .withLimits(settings.historyPerName(), settings.maxWaitersPerName())
                // Generous: a new service's first call sets up its connection, which can take seconds on a loaded
                // machine; nothing in the contract waits for a call to time out.
                .withCallTimeout(Duration.ofSeconds(15));
        this.service = new EtcdLeaseService(config, time);
    }

    /** A fixture on the one-member etcd shared by the tests of this JVM (started on first use). */
    static EtcdFixture onSingleMember(Settings settings) {
        return new EtcdFixture(settings, singleMember(), new ManualTimeSource(START), Duration.ZERO);
    }

    /**
     * The configuration the tests of one service pair use on {@code cluster}'s first member: leases up to 10 minutes,
     * no grace, no clock-error bound (one manual clock for every service), a generous call timeout.
     */
    static EtcdConfig config(EtcdCluster cluster, String prefix, String id) {
        return EtcdConfig.parse("etcd:" + cluster.endpoints().get(0).getAuthority() + "?prefix=" + prefix
                + "&serviceId=" + id + "&maxLease=10m&grace=0ms&clockError=0ms&sessionTtl=60s&callTimeout=15s");
    }

    static synchronized EtcdCluster singleMember() {
        if (single == null) {
            single = EtcdCluster.start("single", 1);
        }
        return single;
    }

    ManualTimeSource time() {
        return time;
    }

    EtcdConfig config() {
        return config;
    }

    @Override
    public LeaseService service() {
        return service;
    }

    @Override
    public void advance(Duration d) {
        time.advance(d);
    }

    @Override
    public void awaitTime(Instant t) throws InterruptedException {
        CountDownLatch latch = new CountDownLatch(1);
        time.schedule(Micros.of(t), latch::countDown);
        latch.await();
    }

    @Override
    public void restart() {
        service.close();
        service = new EtcdLeaseService(config, time);
    }

    @Override
    public void close() {
        service.close();
    }
}
