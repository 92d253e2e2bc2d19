package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.CompactOption;
import io.etcd.jetcd.options.GetOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;

/**
 * The watch that wakes queued requests, when etcd compacts its old revisions and when the watch breaks: requests
 * queued on one service (whose watch is the only thing that can wake them: the holders' deadlines are far away) are
 * granted in FIFO order as another service releases, with increasing generations and nothing granted twice, across a
 * compaction at the current revision while the waiting service was cut off, and across a restart of the only member.
 * Each service keeps exactly one watch on etcd afterwards (a failed watch is replaced, not doubled).
 */
class EtcdWatchFaultTest {
    private static final Duration LONG = Duration.ofMinutes(10);
    private static EtcdCluster cluster;

    private final ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
    private final AtomicBoolean running = new AtomicBoolean(true);
    private Thread driver;

    @BeforeAll
    static void startMember() {
        cluster = EtcdCluster.start("watch-faults", 1);
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    @BeforeEach
    void startClock() {
        // Service time runs about as fast as real time, so that the services' retry timers come due.
        driver = new Thread(() -> {
            while (running.get()) {
                time.advance(Duration.ofMillis(1));
                LockSupport.parkNanos(1_000_000);
            }
        }, "clock-driver");
        driver.setDaemon(true);
        driver.start();
    }

    @AfterEach
    void stopClock() throws InterruptedException {
        running.set(false);
        driver.join();
    }

    private EtcdLeaseService service(URI endpoint, String prefix, String id) {
        // Long leases and waits: only the watch (or a restarted watch's wake-up of every request) grants a waiter.
        return new EtcdLeaseService(EtcdConfig.parse("etcd:" + endpoint.getAuthority() + "?prefix=" + prefix
                + "&serviceId=" + id + "&maxLease=10m&grace=0ms&clockError=0ms&sessionTtl=60s"), time);
    }

    @Test
    void waitersAreGrantedInOrderAcrossACompactionTheyMissedWhileCutOff() throws Exception {
        String prefix = "compaction/" + UUID.randomUUID() + "/";
        URI member = cluster.endpoints().get(0);
        try (TcpProxy network = new TcpProxy(member);
                EtcdLeaseService holders = service(member, prefix, "holders");
                EtcdLeaseService waiters = service(network.endpoint(), prefix, "waiters");
                Client admin = Client.builder().endpoints(member).build()) {
            Lease first = holders.acquire(request("h", "c/1"));
            Lease kept = holders.acquire(request("k", "c/2"));
            List<CompletableFuture<Lease>> queued = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                // acquireAsync returns once the request is queued in etcd: the queue order is this order.
                queued.add(waiters.acquireAsync(LeaseRequest.builder(new HolderId("w" + i, "tx"), "c/1").leaseFor(LONG)
                        .waitFor(LONG).build()));
            }
            assertEquals(3, holders.inspect("c/1", 1).get(0).waiters().size(), "three requests queued");

            network.cut();
            holders.release(first, null, null);
            for (int i = 0; i < 3; i++) {
                holders.release(holders.acquire(request("churn", "c/3")), null, null);
            }
            long revision = admin.getKVClient().get(ByteSequence.from("x", StandardCharsets.UTF_8))
                    .get(30, TimeUnit.SECONDS).getHeader().getRevision();
            admin.getKVClient().compact(revision, CompactOption.DEFAULT).get(30, TimeUnit.SECONDS);
            ExecutionException old = assertThrows(ExecutionException.class, () -> admin.getKVClient()
                    .get(ByteSequence.from("x", StandardCharsets.UTF_8), GetOption.builder().withRevision(revision - 1)
                            .build()).get(30, TimeUnit.SECONDS));
            assertTrue(String.valueOf(old.getCause()).contains("compacted"), "revisions before " + revision
                    + " are gone: " + old.getCause());
            network.heal();

            long generation = first.grant("c/1").generation();
            for (int i = 0; i < 3; i++) {
                Lease granted = queued.get(i).get(60, TimeUnit.SECONDS);
                assertEquals("w" + i, granted.holder().process(), "FIFO: request " + i + " is granted " + i + "th");
                for (int later = i + 1; later < 3; later++) {
                    assertFalse(queued.get(later).isDone(), "request " + later + " waits while " + i + " holds");
                }
                long g = granted.grant("c/1").generation();
                assertTrue(g > generation, "generations increase: " + g + " after " + generation);
                assertFalse(holders.check("c/1", generation), "the previous holder no longer passes the check");
                assertTrue(holders.check("c/1", g), "the new one does");
                generation = g;
                // Released by the other service: only the waiting service's watch tells it.
                holders.release(granted, null, null);
            }
            Lease renewed = holders.renewFor(kept, LONG);
            assertEquals(kept.grant("c/2").generation(), renewed.grant("c/2").generation(),
                    "a holder holds across the compaction");
            assertTrue(holders.check("c/2", renewed.grant("c/2").generation()));
            awaitWatchers(2);
            holders.release(renewed, null, null);
        }
    }

    @Test
    void aWatchBrokenByARestartOfTheMemberResumesAndStaysSingle() throws Exception {
        String prefix = "restart/" + UUID.randomUUID() + "/";
        URI member = cluster.endpoints().get(0);
        try (EtcdLeaseService holders = service(member, prefix, "holders");
                EtcdLeaseService waiters = service(member, prefix, "waiters")) {
            Lease first = holders.acquire(request("h", "r/1"));
            CompletableFuture<Lease> queued = waiters.acquireAsync(LeaseRequest.builder(new HolderId("w", "tx"), "r/1")
                    .leaseFor(LONG).waitFor(LONG).build());
            cluster.kill(0);
            cluster.restart(0);
            retryWhileUnavailable(() -> holders.release(first, null, null));
            Lease granted = queued.get(60, TimeUnit.SECONDS);
            assertTrue(granted.grant("r/1").generation() > first.grant("r/1").generation());
            awaitWatchers(2);
            holders.release(granted, null, null);
        }
    }

    /** Waits (bounded) until the member counts {@code n} watches: one per service, none left over from failures. */
    private static void awaitWatchers(int n) throws InterruptedException {
        assertEquals(n, cluster.awaitWatchers(0, n), "watches on etcd: one per service");
    }

    private static LeaseRequest request(String process, String name) {
        return LeaseRequest.builder(new HolderId(process, "tx"), name).leaseFor(LONG).build();
    }

    private static void retryWhileUnavailable(Call call) throws Exception {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                call.run();
                return;
            } catch (LeaseServiceUnavailableException e) {
                if (System.nanoTime() > until) {
                    throw e;
                }
                Thread.sleep(100); // the client reconnecting in real time
            }
        }
    }

    private interface Call {
        void run() throws LeaseException;
    }
}
