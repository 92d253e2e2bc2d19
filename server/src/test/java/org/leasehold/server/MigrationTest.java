package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.NameStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.ManualTimeSource;

/**
 * Migration from one server set to another (docs/SERVER.md): an old server, then two new ones started after it
 * (leases of up to 3 s, 200 ms grace). A client with {@code previousServers} holds every name on its old server and its new one
 * until the window ({@code migrationStartedAt} + old max lease + grace + clock error) ends, then only on the new. A
 * rollout in the three documented steps (old only; old and new; after the window, new only), with clients of every
 * kind contending on the same names, never grants a name to two holders at once, as {@link RecordedGrantChecker}
 * proves from what the clients recorded; without the overlap step two server sets do grant a name twice.
 */
class MigrationTest {
    /** Leases of up to 3 s: long enough that a loaded machine does not lose the lease between two steps of a test. */
    private static final String[] SHORT = {"--max-lease=3s", "--grace=200ms", "--quiet-period=0s"};
    private static ServerProcess old;
    private static ServerProcess newA;
    private static ServerProcess newB;

    @BeforeAll
    static void start() throws Exception {
        old = ServerProcess.start("migration-old", SHORT);
        // Started after the old server: the new servers' generations are higher.
        newA = ServerProcess.start("migration-new-a", SHORT);
        newB = ServerProcess.start("migration-new-b", SHORT);
    }

    @AfterAll
    static void stop() throws Exception {
        for (ServerProcess s : new ServerProcess[] {old, newA, newB}) {
            if (s != null) {
                s.close();
            }
        }
    }

    private static RemoteClientConfig.Builder newSet() {
        return RemoteClientConfig.builder(newA.address(), newB.address()).callTimeout(Duration.ofSeconds(10));
    }

    private static RemoteLeaseService oldOnly() {
        return new RemoteLeaseService(RemoteClientConfig.builder(old.address()).callTimeout(Duration.ofSeconds(10)).build());
    }

    private static RemoteLeaseService newOnly() {
        return new RemoteLeaseService(newSet().build());
    }

    private static RemoteLeaseService oldAndNew(Instant migrationStartedAt) {
        return new RemoteLeaseService(newSet().previousServers(List.of(old.address())).migrationStartedAt(migrationStartedAt)
                .build());
    }

    private static LeaseRequest now(HolderId who, String name) {
        return LeaseRequest.builder(who, name).leaseFor(Duration.ofSeconds(3)).build();
    }

    @Test
    void aMigratingClientLeasesOnBothSetsUntilTheWindowEndsThenOnlyOnTheNew() throws Exception {
        HolderId me = new HolderId("migrating", "t");
        HolderId other = new HolderId("other", "t");
        String name = "window/1";
        try (RemoteLeaseService o = oldOnly(); RemoteLeaseService n = newOnly();
                RemoteLeaseService both = oldAndNew(o.now())) {
            assertTrue(both.migrating());
            assertEquals(old.address(), both.serverFor(name), "the old set is authoritative during the migration");
            Lease during = both.acquire(now(me, name));
            long oldGeneration = during.grant(name).generation();
            assertTrue(o.check(name, oldGeneration), "the generation is the old server's");
            assertEquals(1, holders(o, name), "held on the old server");
            assertEquals(1, holders(n, name), "and on the new one");
            assertThrows(LeaseBusyException.class, () -> o.acquire(now(other, name)), "a client on the old set only waits");
            assertThrows(LeaseBusyException.class, () -> n.acquire(now(other, name)), "a client on the new set only waits");
            Lease renewed = both.renewFor(during, Duration.ofSeconds(3));
            assertFalse(renewed.deadline().isBefore(during.deadline()));
            both.release(renewed, null, null);
            assertEquals(0, holders(o, name), "released on the old server");
            assertEquals(0, holders(n, name), "and on the new one");

            // The window: migrationStartedAt + 3 s + 200 ms + at least 500 ms of clock error.
            awaitTrue(() -> !both.migrating(), 30, "the migration window ended");
            assertTrue(List.of(newA.address(), newB.address()).contains(both.serverFor(name)));
            Lease after = both.acquire(now(me, name));
            assertTrue(after.grant(name).generation() > oldGeneration, "the new servers' generations are higher");
            assertEquals(0, holders(o, name), "the old server is no longer used");
            assertEquals(1, holders(n, name));
            Lease onOld = o.acquire(now(other, name));
            o.release(onOld, null, null);
            assertThrows(LeaseBusyException.class, () -> n.acquire(now(other, name)));
            both.release(after, null, null);
        }
    }

    @Test
    void leasesLeftUnreleasedAcrossTheWindowAreForgottenOnceOver() throws Exception {
        // The client's own clock is a manual one, so that the window and the parts' keeping time pass at once. It
        // reads a fixed instant months before the servers' signed time, which the client's clock check would refuse:
        // this client allows it (the check itself is SignedClockTest's and SignedWireTest's).
        ManualTimeSource local = new ManualTimeSource(RemoteFixture.START);
        HolderId me = new HolderId("forgetful", "t");
        try (RemoteLeaseService o = oldOnly(); RemoteLeaseService n = newOnly();
                RemoteLeaseService both = new RemoteLeaseService(newSet().previousServers(List.of(old.address()))
                        .maxClockError(Duration.ofDays(36_500)).build(), local)) {
            assertTrue(both.migrating());
            Lease released = both.acquire(now(me, "forgotten/released"));
            both.acquire(now(me, "forgotten/abandoned"));
            assertEquals(2, both.migrationLeasesKept(), "both leases are held on both sets");
            both.release(released, null, null);
            assertEquals(1, both.migrationLeasesKept(), "a release forgets its parts");

            // The window (3 s + 200 ms + at least 500 ms), and its end noticed.
            local.advance(Duration.ofSeconds(4));
            assertFalse(both.migrating());
            assertEquals(1, both.migrationLeasesKept(), "a lease taken on both sets keeps its parts until it is over");
            assertEquals(1, holders(o, "forgotten/abandoned"), "held on the old server");
            assertEquals(1, holders(n, "forgotten/abandoned"), "and on the new one");

            // Over (3 s), and kept a minute past its deadline for a late release: then forgotten without a new lease.
            local.advance(Duration.ofSeconds(61));
            assertEquals(0, both.migrationLeasesKept(), "the abandoned lease's parts are forgotten once it is over");
        }
    }

    @Test
    void aRolloutFromOldToNewNeverGrantsANameTwice() throws Exception {
        List<ObjectNode> records = Collections.synchronizedList(new ArrayList<>());
        AtomicInteger grants = new AtomicInteger();
        ExecutorService pool = Executors.newCachedThreadPool();
        try (RemoteLeaseService a = oldOnly()) {
            // Step 1, then step 2 under way: clients on the old set only while others already run old and new (their
            // migration start is not set yet, so it lies ahead).
            List<Future<?>> phase = new ArrayList<>();
            try (RemoteLeaseService early = oldAndNew(a.now().plus(Duration.ofHours(1)))) {
                assertTrue(early.migrating());
                for (int t = 0; t < 2; t++) {
                    phase.add(pool.submit(worker(a, "old-only-" + t, 25, () -> false, records, grants)));
                    phase.add(pool.submit(worker(early, "old-new-early-" + t, 25, () -> false, records, grants)));
                }
                awaitAll(phase);
            }
            // Step 2 done: nobody is on the old set only any more. Every client runs old and new with the migration
            // start set to now; step 3 (clients on the new set only) begins after the window.
            Instant started = a.now();
            try (RemoteLeaseService b = oldAndNew(started); RemoteLeaseService c = oldAndNew(started);
                    RemoteLeaseService d = newOnly()) {
                assertTrue(b.migrating());
                phase.clear();
                for (int t = 0; t < 2; t++) {
                    // Across the end of the window, until 15 cycles after it.
                    RemoteLeaseService client = t == 0 ? b : c;
                    AtomicInteger afterWindow = new AtomicInteger();
                    phase.add(pool.submit(worker(client, "old-new-" + t, Integer.MAX_VALUE,
                            () -> !client.migrating() && afterWindow.incrementAndGet() > 15, records, grants)));
                }
                awaitTrue(() -> !b.migrating() && !c.migrating(), 60, "the migration window ended");
                for (int t = 0; t < 2; t++) {
                    phase.add(pool.submit(worker(d, "new-only-" + t, 25, () -> false, records, grants)));
                }
                awaitAll(phase);
            }
        } finally {
            pool.shutdownNow();
        }
        RecordedGrantChecker checker = new RecordedGrantChecker();
        for (int i = 0; i < records.size(); i++) {
            checker.add(records.get(i), "record " + i);
        }
        // Floors are not compared here: a new server does not learn the watermarks released only to the old one.
        List<String> violations = checker.check(false);
        System.out.println("migration rollout: " + grants + " grants, " + checker.grantCount() + " checked");
        assertEquals(List.of(), violations.subList(0, Math.min(10, violations.size())));
        assertTrue(grants.get() > 100, grants + " grants");
    }

    @Test
    void withoutTheOverlapStepTwoServerSetsGrantTheSameNameTwice() throws Exception {
        String name = "control/1";
        List<ObjectNode> records = new ArrayList<>();
        try (RemoteLeaseService o = oldOnly(); RemoteLeaseService n = newOnly()) {
            Lease onOld = o.acquire(now(new HolderId("old-only", "t"), name));
            Lease onNew = n.acquire(now(new HolderId("new-only", "t"), name));
            records.addAll(record("grant", onOld));
            records.addAll(record("grant", onNew));
            o.release(onOld, null, null);
            n.release(onNew, null, null);
        }
        RecordedGrantChecker checker = new RecordedGrantChecker();
        for (ObjectNode r : records) {
            checker.add(r, "control");
        }
        List<String> violations = checker.check(false);
        assertTrue(violations.stream().anyMatch(v -> v.startsWith("invariant 1")), violations.toString());
    }

    /** A thread's work: acquire (full, or tentative then upgrade) one of four names, hold briefly, release. */
    private static java.util.concurrent.Callable<Void> worker(RemoteLeaseService leases, String id, int cycles,
            BooleanSupplier done, List<ObjectNode> records, AtomicInteger grants) {
        return () -> {
            Random rnd = new Random(id.hashCode());
            for (int i = 0; i < cycles && !done.getAsBoolean(); i++) {
                String name = "rollout/" + rnd.nextInt(4);
                LeaseKind kind = rnd.nextBoolean() ? LeaseKind.TENTATIVE : LeaseKind.FULL;
                HolderId holder = new HolderId(id, "c" + i);
                Lease lease;
                Instant requestedAt = leases.now();
                try {
                    lease = leases.acquire(LeaseRequest.builder(holder, name).kind(kind).startedAt(requestedAt)
                            .leaseFor(Duration.ofMillis(300 + rnd.nextInt(400)))
                            .waitFor(Duration.ofMillis(rnd.nextInt(4) == 0 ? 0 : 200 + rnd.nextInt(800))).build());
                } catch (LeaseBusyException e) {
                    continue;
                }
                grants.incrementAndGet();
                // A lease taken on old and new servers reports its later part's grant time: the request time bounds
                // the grant of the generation it reports from below (see RecordedGrantChecker, invariant 2).
                for (ObjectNode r : record("grant", lease)) {
                    records.add(r.put("requestedAt", requestedAt.toString()));
                }
                try {
                    if (kind == LeaseKind.TENTATIVE) {
                        lease = leases.upgrade(lease, null);
                        records.addAll(record("upgrade", lease));
                    }
                    Thread.sleep(rnd.nextInt(50));
                    Instant ended = leases.release(lease, null, null);
                    for (ObjectNode r : record("release", lease)) {
                        records.add(r.put("endedAt", ended.toString()));
                    }
                } catch (LeaseBrokenException e) {
                    records.addAll(record("broken", lease));
                } catch (LeaseExpiredException e) {
                    records.addAll(record("expired", lease));
                }
            }
            return null;
        };
    }

    private static final ObjectMapper JSON = new ObjectMapper();

    private static List<ObjectNode> record(String event, Lease lease) {
        List<ObjectNode> out = new ArrayList<>();
        for (LeaseGrant g : lease.grants()) {
            out.add(JSON.createObjectNode().put("ev", event).put("name", g.name()).put("generation", g.generation())
                    .put("holder", lease.holder().toString()).put("mode", lease.mode().type().name())
                    .put("kind", lease.kind().name()).put("grantedAt", lease.grantedAt().toString())
                    .put("deadline", lease.deadline().toString()).put("floor", g.floor().toString())
                    .put("writableFrom", g.writableFrom().toString()));
        }
        return out;
    }

    private static int holders(RemoteLeaseService leases, String name) {
        for (NameStatus s : leases.inspect(name, 10)) {
            if (s.name().equals(name)) {
                return s.holders().size();
            }
        }
        return 0;
    }

    private static void awaitAll(List<Future<?>> futures) throws Exception {
        for (Future<?> f : futures) {
            f.get(10, TimeUnit.MINUTES);
        }
    }

    private static void awaitTrue(BooleanSupplier condition, int seconds, String what) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > until) {
                throw new AssertionError("not within " + seconds + " s: " + what);
            }
            Thread.sleep(20);
        }
    }
}
