package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.ManualTimeSource;

/**
 * A service whose watch broke starts a new one by real time, not by its own clock: here the services' clock never
 * moves after the start, the waiting service's connection to etcd drops once (a blip of the network, its watch
 * fails), and its queued request must still be granted when the holder releases. Before, the new watch was started
 * 200 ms of service time later, so a service on a clock that stood still (or had stepped back) kept no watch, and a
 * queued request waited for a change it would never see. Also the pace of a watch that keeps failing: retried at
 * once, then after 200 ms doubling up to 5 s, and reported as a warning only now and then.
 */
class EtcdWatchRetryTest {
    private static final Duration LONG = Duration.ofMinutes(10);
    private static EtcdCluster cluster;

    @BeforeAll
    static void startMember() {
        cluster = EtcdCluster.start("watch-retry", 1);
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    private static EtcdLeaseService service(URI endpoint, String prefix, String id, ManualTimeSource time) {
        return new EtcdLeaseService(EtcdConfig.parse("etcd:" + endpoint.getAuthority() + "?prefix=" + prefix
                + "&serviceId=" + id + "&maxLease=10m&grace=0ms&clockError=0ms&sessionTtl=60s"), time);
    }

    @Test
    void aQueuedRequestIsGrantedAfterItsServicesWatchBrokeWhileTheClockStoodStill() throws Exception {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String prefix = "retry/" + UUID.randomUUID() + "/";
        URI member = cluster.endpoints().get(0);
        try (TcpProxy network = new TcpProxy(member);
                EtcdLeaseService holders = service(member, prefix, "holders", time);
                EtcdLeaseService waiters = service(network.endpoint(), prefix, "waiters", time)) {
            Lease held = holders.acquire(LeaseRequest.builder(new HolderId("h", "tx"), "n/1").leaseFor(LONG).build());
            // acquireAsync returns once the request is queued in etcd.
            CompletableFuture<Lease> queued = waiters.acquireAsync(LeaseRequest.builder(new HolderId("w", "tx"), "n/1")
                    .leaseFor(LONG).waitFor(LONG).build());
            assertEquals(1, holders.inspect("n/1", 1).get(0).waiters().size(), "the request is queued");

            network.drop();
            holders.release(held, null, null);

            Lease granted = queued.get(60, TimeUnit.SECONDS);
            assertEquals("w", granted.holder().process());
            assertTrue(granted.grant("n/1").generation() > held.grant("n/1").generation(), "a later generation");
            assertFalse(holders.check("n/1", held.grant("n/1").generation()), "the released holder is fenced");
            assertEquals(EtcdFixture.START, time.now(), "the services' clock never moved");
            waiters.release(granted, null, null);
        }
    }

    @Test
    void aWatchThatKeepsFailingIsRetriedMoreSlowlyAndReportedLessOften() {
        long[] delays = new long[9];
        for (int n = 1; n <= delays.length; n++) {
            delays[n - 1] = EtcdLeaseService.retryDelayMillis(n);
        }
        assertArrayEquals(new long[] {0, 200, 400, 800, 1_600, 3_200, 5_000, 5_000, 5_000}, delays,
                "at once, then 200 ms doubling up to 5 s");
        assertEquals(5_000, EtcdLeaseService.retryDelayMillis(Integer.MAX_VALUE), "no overflow however long it lasts");
        for (int n = 1; n <= 3; n++) {
            assertEquals(System.Logger.Level.WARNING, EtcdStore.gapLevel(n), "failure " + n + " in a row is a warning");
        }
        for (int n = 4; n < 12; n++) {
            assertEquals(System.Logger.Level.DEBUG, EtcdStore.gapLevel(n), "failure " + n + " in a row is not");
        }
        assertEquals(System.Logger.Level.WARNING, EtcdStore.gapLevel(12), "every twelfth is again");
        assertEquals(System.Logger.Level.WARNING, EtcdStore.gapLevel(24));
        assertEquals(System.Logger.Level.DEBUG, EtcdStore.gapLevel(25));
    }
}
