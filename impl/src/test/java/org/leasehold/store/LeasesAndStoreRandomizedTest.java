package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Leases and the store in one JVM, randomized, on one manual clock: worker threads take leases on random names
 * through three stores (three writers), read what the names hold, write under them, and release with watermarks;
 * some abandon their lease, some pause past their deadline between choosing a timestamp and writing and then try to
 * write. A successor of an expired lease seals the predecessor's buckets before reading. At the end the independent
 * checker reads the sealed log and proves, from the stored bytes:
 * <ul>
 *   <li>(3) every message lies strictly between its grant's floor and deadline;
 *   <li>(4) every acknowledged message is stored, no refused one is, nothing unknown is;
 *   <li>(5) every message a holder wrote was seen by every later holder of the name (nothing became visible late);
 *   <li>(6) the store's reader and the checker agree on the order, and per name generations never go back.
 * </ul>
 */
class LeasesAndStoreRandomizedTest {
    private static final String LOG = "ledger";
    private static final int NAMES = 8;
    private static final int WORKERS = 6;
    private static final Duration STEP = Duration.ofMillis(100);
    private static final Instant STOP_AT = T0.plusSeconds(300);

    /** Threads that wait for the clock say so, so the driver moves time only when everyone waits. */
    private static final class Quiescence {
        private int active;

        synchronized void busy() {
            active++;
        }

        synchronized void idle() {
            active--;
            notifyAll();
        }

        synchronized void awaitIdle(long millis) throws InterruptedException {
            long end = System.nanoTime() + millis * 1_000_000L;
            while (active > 0) {
                long left = (end - System.nanoTime()) / 1_000_000L;
                if (left <= 0) {
                    return;
                }
                wait(left);
            }
        }
    }

    private record Grant(long floor, long deadline) {
    }

    private final ManualTimeSource time = new ManualTimeSource(T0);
    private final Quiescence q = new Quiescence();
    private final Map<String, Grant> grants = new ConcurrentHashMap<>();
    private final Map<String, Set<String>> seen = new ConcurrentHashMap<>();
    private final Set<String> submitted = ConcurrentHashMap.newKeySet();
    private final Set<String> acked = ConcurrentHashMap.newKeySet();
    private final Set<String> refused = ConcurrentHashMap.newKeySet();
    private final Set<String> unknown = ConcurrentHashMap.newKeySet();
    private final AtomicInteger pauses = new AtomicInteger();
    private final AtomicInteger abandoned = new AtomicInteger();
    private final AtomicInteger successors = new AtomicInteger();
    private final AtomicInteger released = new AtomicInteger();
    private final ThreadLocal<Instant> pauseUntil = new ThreadLocal<>();
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());

    /** Blocks (idle) until the manual clock reaches {@code at}. */
    private void waitUntil(Instant at) throws InterruptedException {
        if (!time.now().isBefore(at)) {
            return;
        }
        CountDownLatch l = new CountDownLatch(1);
        // Busy again from the moment the clock fires (on the driver's thread), not when this thread wakes up.
        time.schedule(Micros.of(at), () -> {
            q.busy();
            l.countDown();
        });
        q.idle();
        l.await();
    }

    private final StoreHooks hooks = new StoreHooks() {
        @Override
        public void afterEncode(AppendRequest request, long timestamp) {
            Instant until = pauseUntil.get();
            if (until != null) {
                pauseUntil.remove();
                try {
                    waitUntil(until);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    };

    @Test
    void leasesAndStoreKeepInvariantsThreeToSix() throws Exception {
        Path root = freshDir("leases-randomized");
        EngineConfig ec = EngineConfig.defaults().withQuietPeriod(Duration.ZERO).withMaxLeaseDuration(
                Duration.ofSeconds(6));
        List<FileBagStore> stores = new ArrayList<>();
        try (EmbeddedLeaseService leases = new EmbeddedLeaseService(ec, time)) {
            for (int i = 0; i < 3; i++) {
                stores.add(FileBagStore.open(StoreFixture.config(root).maxLeaseDuration(Duration.ofSeconds(6))
                        .metronome(i == 0).build(), time, hooks));
            }
            List<Thread> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                int id = w;
                q.busy();
                Thread t = new Thread(() -> {
                    try {
                        work(id, leases, stores, new Random(1234L + id));
                    } catch (Throwable e) {
                        failures.add(e);
                    } finally {
                        q.idle();
                    }
                }, "worker-" + w);
                workers.add(t);
                t.start();
            }
            while (workers.stream().anyMatch(Thread::isAlive)) {
                // Time moves only when every worker waits for it (a long bound guards against a hang).
                q.awaitIdle(5_000);
                time.advance(STEP);
                if (!time.now().isBefore(STOP_AT)) {
                    stop.set(true);
                }
            }
            assertEquals(List.of(), failures, "worker failures");

            // Seal everything, then prove the invariants from the stored bytes.
            time.advance(Duration.ofSeconds(5));
            FileBagStore any = stores.get(1);
            any.sealThrough(LOG, T0.minusSeconds(15), time.now().minusSeconds(3));
            check(root, any);
        } finally {
            for (FileBagStore s : stores) {
                s.close();
            }
        }
    }

    private void work(int id, EmbeddedLeaseService leases, List<FileBagStore> stores, Random rnd) throws Exception {
        int iteration = 0;
        while (!stop.get()) {
            iteration++;
            FileBagStore store = stores.get(rnd.nextInt(stores.size()));
            Set<String> names = new HashSet<>();
            int count = 1 + rnd.nextInt(2);
            while (names.size() < count) {
                names.add("acct/" + rnd.nextInt(NAMES));
            }
            HolderId me = new HolderId("jvm", "worker-" + id + "/" + iteration);
            Lease lease;
            java.util.concurrent.CompletableFuture<Lease> f = leases.acquireAsync(LeaseRequest.builder(me, names)
                    .leaseFor(Duration.ofSeconds(5)).waitFor(Duration.ofSeconds(8)).build());
            // Busy again from the moment of the grant (or refusal), whichever thread completes it.
            java.util.concurrent.CompletableFuture<Lease> woken = f.whenComplete((x, e) -> q.busy());
            q.idle();
            try {
                lease = woken.get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof LeaseBusyException) {
                    continue;
                }
                throw e;
            }
            for (LeaseGrant g : lease.grants()) {
                grants.put(g.name() + "#" + g.generation(), new Grant(Micros.of(g.floor()), Micros.of(lease.deadline())));
            }
            // A successor of an expired lease waits until the predecessor's buckets are due and seals them.
            Instant ready = store.writableFrom(LOG, lease);
            boolean expiredPredecessor = false;
            for (LeaseGrant g : lease.grants()) {
                expiredPredecessor |= g.predecessor().ending() == Ending.EXPIRED;
            }
            waitUntil(ready);
            if (!time.now().isBefore(lease.deadline().minusMillis(500))) {
                continue; // No time left to work under it; it expires.
            }
            if (expiredPredecessor) {
                store.sealForSuccessor(LOG, lease);
                successors.incrementAndGet();
            }
            Set<String> mine = read(store, names);
            for (LeaseGrant g : lease.grants()) {
                seen.put(g.name() + "#" + g.generation(), mine);
            }

            int action = rnd.nextInt(12);
            List<LeaseStamp> stamps = LeaseStamp.of(lease);
            Instant watermark = null;
            int writes = 1 + rnd.nextInt(2);
            for (int k = 0; k < writes; k++) {
                if (action == 0 && k == writes - 1) {
                    // Pause between choosing the timestamp and writing, until past the deadline.
                    pauseUntil.set(lease.deadline().plusMillis(rnd.nextInt(4_000)));
                    pauses.incrementAndGet();
                }
                Appended a = append(store, stamps, "w" + id + "-" + iteration + "-" + k + "|" + String.join(",",
                        new java.util.TreeSet<>(names)));
                if (a != null && (watermark == null || a.timestamp().isAfter(watermark))) {
                    watermark = a.timestamp();
                }
                if (rnd.nextBoolean()) {
                    waitUntil(time.now().plusMillis(100));
                }
            }
            if (action == 0) {
                assertNull(pauseUntil.get());
                continue; // The paused holder's lease is over; its release would be refused.
            }
            if (action == 1) {
                abandoned.incrementAndGet();
                continue; // Never released: it expires, and its successor must seal.
            }
            try {
                leases.release(lease, watermark, "log=" + LOG);
                released.incrementAndGet();
            } catch (LeaseException e) {
                // Expired while writing (the clock moved on meanwhile): the next holder treats it as expired.
            }
        }
    }

    private Appended append(FileBagStore store, List<LeaseStamp> stamps, String id) {
        submitted.add(id);
        try {
            Appended a = store.append(AppendRequest.of(LOG, stamps, id.getBytes(StandardCharsets.UTF_8)));
            acked.add(id);
            return a;
        } catch (WriteOutcomeUnknownException e) {
            unknown.add(id);
        } catch (BagStoreException e) {
            refused.add(id);
        }
        return null;
    }

    private Set<String> read(FileBagStore store, Set<String> names) throws BagStoreException {
        Set<String> ids = new HashSet<>();
        try {
            try (MessageStream s = store.read(ReadRequest.all(LOG).underAnyOf(names))) {
                Message m;
                while ((m = s.next()) != null) {
                    ids.add(new String(m.payload(), StandardCharsets.UTF_8));
                }
            }
        } catch (org.leasehold.bag.UnknownLogException e) {
            // Nothing written yet.
        }
        return ids;
    }

    private void check(Path root, FileBagStore store) throws Exception {
        LogChecker.Result c = LogChecker.check(root.resolve(LOG));
        assertEquals(List.of(), c.violations());
        assertTrue(c.allSealed());
        List<LogChecker.Msg> ordered = c.ordered();
        Set<String> stored = new HashSet<>();
        for (LogChecker.Msg m : ordered) {
            assertTrue(stored.add(m.text()), "stored once: " + m.text());
        }

        // Invariant 4.
        for (String a : acked) {
            assertTrue(stored.contains(a), "acknowledged " + a + " is stored");
        }
        for (String r : refused) {
            assertTrue(!stored.contains(r), "refused " + r + " is not stored");
        }
        assertTrue(submitted.containsAll(stored));

        // Invariant 3.
        for (LogChecker.Msg m : ordered) {
            for (LogChecker.Lease l : m.leases()) {
                Grant g = grants.get(l.name() + "#" + l.generation());
                assertTrue(g != null, "a grant exists for " + l.name() + "#" + l.generation());
                assertTrue(g.floor() < m.timestamp() && m.timestamp() < g.deadline(), "floor < t < deadline for "
                        + m.text() + " under " + l.name() + "#" + l.generation());
            }
        }

        // Invariant 5: everything a holder wrote was seen by every later holder of the same name.
        Map<String, List<Long>> holdersByName = new HashMap<>();
        for (String key : seen.keySet()) {
            int hash = key.indexOf('#');
            holdersByName.computeIfAbsent(key.substring(0, hash), k -> new ArrayList<>())
                    .add(Long.parseLong(key.substring(hash + 1)));
        }
        int proofs = 0;
        for (LogChecker.Msg m : ordered) {
            for (LogChecker.Lease l : m.leases()) {
                for (long later : holdersByName.getOrDefault(l.name(), List.of())) {
                    if (later > l.generation()) {
                        assertTrue(seen.get(l.name() + "#" + later).contains(m.text()), m.text() + " (" + l.name() + "#"
                                + l.generation() + ") was not seen by the later holder " + l.name() + "#" + later);
                        proofs++;
                    }
                }
            }
        }

        // Invariant 6: one order for everyone; lease order per name.
        List<String> viaStore = new ArrayList<>();
        try (MessageStream s = store.read(ReadRequest.all(LOG).sealedOnly())) {
            Message m;
            while ((m = s.next()) != null) {
                viaStore.add(new String(m.payload(), StandardCharsets.UTF_8));
            }
        }
        assertEquals(ordered.stream().map(LogChecker.Msg::text).toList(), viaStore);
        Map<String, Long> lastGen = new HashMap<>();
        for (LogChecker.Msg m : ordered) {
            for (LogChecker.Lease l : m.leases()) {
                Long prev = lastGen.put(l.name(), l.generation());
                assertTrue(prev == null || prev <= l.generation(), "generations of " + l.name() + " go back at "
                        + m.text());
            }
        }

        System.out.printf("randomized: %d stored, %d acknowledged, %d refused, %d unknown; %d pauses, %d abandoned, "
                + "%d successors sealed, %d released; %d visibility proofs%n", stored.size(), acked.size(),
                refused.size(), unknown.size(), pauses.get(), abandoned.get(), successors.get(), released.get(), proofs);
        assertTrue(acked.size() > 50 && pauses.get() > 3 && abandoned.get() > 3 && successors.get() > 3
                && !refused.isEmpty() && proofs > 50, "the run exercised every path");
    }
}
