package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Duration;
import java.util.List;
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
 * A change committed while a service's new watch is being created: the waiting service's watch breaks, it asks etcd
 * for a new one and decides its queued request again (the name is still held: the request stays queued), and the
 * holder releases before etcd creates the new watch, which therefore starts after the release and never reports it.
 * The queued request must still be granted: the service decides every queued request again once etcd confirms the
 * watch. A watch etcd never confirms is replaced after the call timeout. The same gap opens at a service's start,
 * whose first watch etcd creates only after the connection's TLS handshake and authentication (the likely cause of
 * one CI run of {@code EtcdSecuredTest} on a loaded machine, in which a queued request was not granted after the
 * release): the first watch, held back while a request queues and the holder releases, is treated as any new watch.
 * The services' clock stands still, so no timer wakes anything: only the watch (or the decisions that follow its
 * creation) can grant the request. Before, the request waited for a change it would never see.
 */
class EtcdWatchGapTest {
    private static final Duration LONG = Duration.ofMinutes(10);
    private static EtcdCluster cluster;

    @BeforeAll
    static void startMember() {
        cluster = EtcdCluster.start("watch-gap", 1);
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    private static EtcdConfig config(String prefix, String id) {
        URI member = cluster.endpoints().get(0);
        return EtcdConfig.parse("etcd:" + member.getAuthority() + "?prefix=" + prefix + "&serviceId=" + id
                + "&maxLease=10m&grace=0ms&clockError=0ms&sessionTtl=60s&callTimeout=2s");
    }

    @Test
    void aReleaseCommittedBeforeTheNewWatchIsCreatedStillWakesTheQueuedRequest() throws Exception {
        releaseWhileTheNewWatchIsHeld(true);
    }

    @Test
    void aWatchEtcdNeverConfirmsIsReplacedAndTheQueuedRequestGranted() throws Exception {
        releaseWhileTheNewWatchIsHeld(false);
    }

    @Test
    void aReleaseCommittedBeforeTheFirstWatchIsCreatedStillWakesTheQueuedRequest() throws Exception {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String prefix = "gap/" + UUID.randomUUID() + "/";
        WatchGate gate = new WatchGate();
        gate.holdNextCreate();
        try (EtcdLeaseService holders = new EtcdLeaseService(config(prefix, "holders"), time);
                EtcdLeaseService waiters = new EtcdLeaseService(config(prefix, "waiters"), time, List.of(gate))) {
            assertTrue(gate.awaitHeld(20), "the service asks for its first watch as it starts");
            Lease held = holders.acquire(LeaseRequest.builder(new HolderId("h", "tx"), "g/1").leaseFor(LONG).build());
            CompletableFuture<Lease> queued = waiters.acquireAsync(LeaseRequest.builder(new HolderId("w", "tx"), "g/1")
                    .leaseFor(LONG).waitFor(LONG).build());
            assertEquals(1, holders.inspect("g/1", 1).get(0).waiters().size(), "the request is queued");
            holders.release(held, null, null);
            gate.letHeldGo();

            Lease granted = queued.get(60, TimeUnit.SECONDS);
            assertTrue(granted.grant("g/1").generation() > held.grant("g/1").generation(), "a later generation");
            assertEquals(EtcdFixture.START, time.now(), "the services' clock never moved");
            assertEquals(2, cluster.awaitWatchers(0, 2), "one watch per service");
            waiters.release(granted, null, null);
        }
    }

    /**
     * Breaks the waiting service's watch, holds its new watch's create request until after the holder released, then
     * lets it reach etcd ({@code letGo}) or never does (the service must give it up after its call timeout).
     */
    private static void releaseWhileTheNewWatchIsHeld(boolean letGo) throws Exception {
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String prefix = "gap/" + UUID.randomUUID() + "/";
        WatchGate gate = new WatchGate();
        try (EtcdLeaseService holders = new EtcdLeaseService(config(prefix, "holders"), time);
                EtcdLeaseService waiters = new EtcdLeaseService(config(prefix, "waiters"), time, List.of(gate))) {
            assertEquals(2, cluster.awaitWatchers(0, 2), "each service's first watch is created");
            Lease held = holders.acquire(LeaseRequest.builder(new HolderId("h", "tx"), "g/1").leaseFor(LONG).build());
            // acquireAsync returns once the request is queued in etcd.
            CompletableFuture<Lease> queued = waiters.acquireAsync(LeaseRequest.builder(new HolderId("w", "tx"), "g/1")
                    .leaseFor(LONG).waitFor(LONG).build());
            assertEquals(1, holders.inspect("g/1", 1).get(0).waiters().size(), "the request is queued");

            long callsBefore = gate.keyValueCallsDone();
            gate.holdNextCreate();
            gate.breakWatch();
            assertTrue(gate.awaitHeld(20), "the service asks for a new watch after its watch broke");
            // The service decides its request again after the failure: it reads the name, still held.
            assertTrue(gate.awaitKeyValueCallsAbove(callsBefore, 20), "the request is decided again after the fault");
            assertFalse(queued.isDone(), "the name is still held: the request still waits");

            holders.release(held, null, null);
            if (letGo) {
                gate.letHeldGo();
            }

            Lease granted = queued.get(60, TimeUnit.SECONDS);
            assertEquals("w", granted.holder().process());
            assertTrue(granted.grant("g/1").generation() > held.grant("g/1").generation(), "a later generation");
            assertFalse(holders.check("g/1", held.grant("g/1").generation()), "the released holder is fenced");
            assertEquals(EtcdFixture.START, time.now(), "the services' clock never moved");
            assertEquals(2, cluster.awaitWatchers(0, 2), "one watch per service: none left over from the fault");
            waiters.release(granted, null, null);
        }
    }
}
