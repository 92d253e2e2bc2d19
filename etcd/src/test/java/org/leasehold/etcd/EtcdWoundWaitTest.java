package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;

/**
 * Wound-wait across fronts: a queued request is filed in etcd under its holder, so an older request decided by one
 * service sees that a younger tentative holder waits at another service (and breaks it), and one that found it waiting
 * for nothing is decided again when that holder starts waiting anywhere. On a clock that never moves no timer fires,
 * so only the watch can wake the older request: without it the test runs out of time.
 */
class EtcdWoundWaitTest {
    private static final Duration LONG = Duration.ofMinutes(10);
    private static EtcdCluster cluster;

    private final ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);

    @BeforeAll
    static void startMember() {
        cluster = EtcdCluster.start("wound", 1);
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    private static EtcdConfig config(String prefix, String id) {
        return EtcdFixture.config(cluster, prefix, id);
    }

    private static LeaseRequest tentative(HolderId who, Instant startedAt, String name) {
        return LeaseRequest.builder(who, name).tentative().startedAt(startedAt).leaseFor(LONG).waitFor(LONG).build();
    }

    @Test
    void aHolderStartingToWaitAtAnotherFrontIsBrokenByTheOlderRequestItBlocks() throws Exception {
        String prefix = "wound/" + UUID.randomUUID() + "/";
        HolderId older = new HolderId("app-a", "tx-older");
        HolderId younger = new HolderId("app-b", "tx-younger");
        Instant t0 = time.now();
        try (EtcdLeaseService a = new EtcdLeaseService(config(prefix, "a"), time);
                EtcdLeaseService b = new EtcdLeaseService(config(prefix, "b"), time);
                Client etcd = Client.builder().endpoints(cluster.endpoints().toArray(new java.net.URI[0])).build()) {
            Lease youngFirst = b.acquire(tentative(younger, t0.plusMillis(5), "x/1"));
            Lease oldFirst = b.acquire(tentative(older, t0, "x/2"));
            // The younger holder waits for nothing: the older request, at the other front, waits for it.
            CompletableFuture<Lease> oldSecond = a.acquireAsync(tentative(older, t0, "x/1"));
            awaitWaiters(a, "x/1", 1);
            Thread.sleep(200);
            assertFalse(oldSecond.isDone(), "the older request waits for a younger holder that waits for nothing");
            assertEquals(1, filedUnder(etcd, prefix, older), "the waiting request is filed under its holder");

            // The younger one asks, at its own front, for the older one's name: a cycle. Only the watch can tell
            // front a (the clock never moves), and the older request breaks the younger holding.
            CompletableFuture<Lease> youngSecond = b.acquireAsync(tentative(younger, t0.plusMillis(5), "x/2"));
            Lease oldTaken = oldSecond.get(30, TimeUnit.SECONDS);
            assertEquals(Ending.BROKEN, oldTaken.grant("x/1").predecessor().ending());
            assertThrows(LeaseBrokenException.class, () -> b.upgrade(youngFirst, null));
            assertFalse(youngSecond.isDone(), "the younger request waits for the older transaction");
            assertEquals(0, filedUnder(etcd, prefix, older), "a granted request is no longer filed");
            assertEquals(1, filedUnder(etcd, prefix, younger));

            a.release(a.upgrade(oldTaken, null), null, null);
            b.release(b.upgrade(oldFirst, null), null, null);
            Lease youngTaken = youngSecond.get(30, TimeUnit.SECONDS);
            assertEquals(younger, youngTaken.holder());
            b.release(youngTaken, null, null);
            assertEquals(0, filedUnder(etcd, prefix, younger), "nothing is left filed once every request is granted");

            // A request that gives up (cancelled) is withdrawn from under its holder too.
            Lease held = a.acquire(LeaseRequest.builder(older, "x/3").leaseFor(LONG).build());
            CompletableFuture<Lease> cancelled = b.acquireAsync(tentative(younger, t0.plusMillis(5), "x/3"));
            awaitWaiters(a, "x/3", 1);
            assertEquals(1, filedUnder(etcd, prefix, younger));
            cancelled.cancel(false);
            for (int i = 0; i < 3000 && filedUnder(etcd, prefix, younger) > 0; i++) {
                Thread.sleep(10);
            }
            assertEquals(0, filedUnder(etcd, prefix, younger), "a withdrawn request is no longer filed");
            a.release(held, null, null);
        }
    }

    private static long filedUnder(Client etcd, String prefix, HolderId holder) throws Exception {
        ByteSequence key = ByteSequence.from(prefix + "h/" + EtcdStore.holderPart(holder) + "\0", StandardCharsets.UTF_8);
        return etcd.getKVClient().get(key, GetOption.builder().isPrefix(true).withCountOnly(true).build())
                .get(15, TimeUnit.SECONDS).getCount();
    }

    private static void awaitWaiters(LeaseService service, String name, int n) throws Exception {
        for (int i = 0; i < 3000; i++) {
            if (service.inspect(name, 1).stream().anyMatch(s -> s.waiters().size() >= n)) {
                return;
            }
            Thread.sleep(10);
        }
        throw new AssertionError(n + " request(s) never queued for " + name);
    }
}
