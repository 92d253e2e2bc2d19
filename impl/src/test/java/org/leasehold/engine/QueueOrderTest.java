package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.ManualTimeSource;

/**
 * Queues ordered by age: an older transaction is never queued behind a younger one, so a cycle of waits cannot pass
 * through a queue position (an old request behind a younger waiter, which waits for a holder, which waits for the old
 * request); requests that give no start keep their arrival order.
 */
class QueueOrderTest {
    private static final HolderId OLD = new HolderId("p", "old");
    private static final HolderId MID = new HolderId("p", "mid");
    private static final HolderId YOUNG = new HolderId("p", "young");

    private final ManualTimeSource time = new ManualTimeSource(EmbeddedFixture.START);
    private final EmbeddedLeaseService engine = new EmbeddedLeaseService(EngineConfig.defaults()
            .withQuietPeriod(Duration.ZERO), time);

    @AfterEach
    void close() {
        engine.close();
    }

    private static LeaseRequest tx(HolderId who, Instant start, String name) {
        return LeaseRequest.builder(who, name).tentative().startedAt(start).waitFor(Duration.ofSeconds(5)).build();
    }

    private List<HolderId> queue(String name) {
        return engine.inspect(name, 1).get(0).waiters().stream().map(w -> w.holder()).toList();
    }

    @Test
    void anOlderTransactionIsNotQueuedBehindAYoungerWaiterSoTheirWaitsFormNoCycle() throws Exception {
        Instant t0 = time.now();
        // old holds x; mid holds a; young waits for a (for mid, older than it).
        Lease oldX = engine.acquire(tx(OLD, t0, "cyc/x"));
        Lease midA = engine.acquire(tx(MID, t0.plusMillis(1), "cyc/a"));
        CompletableFuture<Lease> youngA = engine.acquireAsync(tx(YOUNG, t0.plusMillis(2), "cyc/a"));
        assertEquals(List.of(YOUNG), queue("cyc/a"));
        // mid asks for x, which old holds: mid is younger, so it waits for old.
        CompletableFuture<Lease> midX = engine.acquireAsync(tx(MID, t0.plusMillis(1), "cyc/x"));
        assertFalse(midX.isDone());
        // old asks for a. Queued behind young (arrival order), it would wait for young, which waits for mid, which
        // waits for old: only a time-out would end it. By age it is first, and wounds mid, the younger holder.
        CompletableFuture<Lease> oldA = engine.acquireAsync(tx(OLD, t0, "cyc/a"));
        Lease a = oldA.get(20, TimeUnit.SECONDS);
        assertEquals(OLD, a.holder());
        assertEquals(List.of(YOUNG), queue("cyc/a"), "young still waits, now for old");
        assertThrows(LeaseBrokenException.class, () -> engine.upgrade(midA, null), "mid was wounded");
        // old commits: upgrade, release; young then gets a, mid gets x (and fails at its prepare).
        engine.release(engine.upgrade(a, null), null, null);
        engine.release(engine.upgrade(oldX, null), null, null);
        assertEquals(YOUNG, youngA.get(20, TimeUnit.SECONDS).holder());
        assertEquals(MID, midX.get(20, TimeUnit.SECONDS).holder());
    }

    @Test
    void requestsWithoutAStartKeepTheirArrivalOrderAndAnOlderTransactionGoesAheadOfThem() throws Exception {
        Instant t0 = time.now();
        Lease held = engine.acquire(LeaseRequest.builder(OLD, "order/1").build());
        List<CompletableFuture<Lease>> waiting = new ArrayList<>();
        List<HolderId> arrivals = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            HolderId h = new HolderId("p", "w" + i);
            arrivals.add(h);
            waiting.add(engine.acquireAsync(LeaseRequest.builder(h, "order/1").waitFor(Duration.ofSeconds(30))
                    .build()));
            time.advance(Duration.ofMillis(1));
        }
        assertEquals(arrivals, queue("order/1"), "arrival order");
        // A transaction that started before all of them arrived goes ahead of them; one that started between the
        // second and the third arrival goes between them.
        CompletableFuture<Lease> early = engine.acquireAsync(LeaseRequest.builder(MID, "order/1").startedAt(t0
                .minusSeconds(1)).waitFor(Duration.ofSeconds(30)).build());
        CompletableFuture<Lease> between = engine.acquireAsync(LeaseRequest.builder(YOUNG, "order/1").startedAt(t0
                .plusMillis(1).plusNanos(500_000)).waitFor(Duration.ofSeconds(30)).build());
        assertEquals(List.of(MID, arrivals.get(0), arrivals.get(1), YOUNG, arrivals.get(2), arrivals.get(3)),
                queue("order/1"));
        // They are granted in that order, one release at a time.
        Lease current = held;
        List<CompletableFuture<Lease>> inOrder = List.of(early, waiting.get(0), waiting.get(1), between,
                waiting.get(2), waiting.get(3));
        for (CompletableFuture<Lease> next : inOrder) {
            engine.release(current, null, null);
            current = next.get(20, TimeUnit.SECONDS);
        }
        engine.release(current, null, null);
    }

    @Test
    void twoLeaseTransactionsInRandomOrderOnSeveralThreadsAllFinishWithoutTimingOut() throws Exception {
        // Each transaction takes two of three names one after the other, in its own order, then upgrades both
        // (prepare) and releases; a broken lease rolls it back and it starts again, younger. Before queues were
        // ordered by age, such cycles ended only when a wait ran out.
        String[] names = {"tr/0", "tr/1", "tr/2"};
        int threads = 6;
        int each = 40;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Integer>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            done.add(pool.submit(() -> {
                go.await();
                int rollbacks = 0;
                java.util.Random r = new java.util.Random(id);
                for (int n = 0; n < each; ) {
                    HolderId h = new HolderId("t" + id, "tx" + n + "-" + rollbacks);
                    Instant start = time.now().plusNanos(id * 1_000L + n * 10_000L + rollbacks);
                    int first = r.nextInt(3);
                    int second = (first + 1 + r.nextInt(2)) % 3;
                    Lease l1 = null;
                    Lease l2 = null;
                    try {
                        l1 = engine.acquire(tx(h, start, names[first]));
                        l2 = engine.acquire(tx(h, start, names[second]));
                        Lease f1 = engine.upgrade(l1, null);
                        Lease f2 = engine.upgrade(l2, null);
                        engine.release(f1, null, null);
                        engine.release(f2, null, null);
                        n++;
                    } catch (LeaseBrokenException | StaleLeaseException e) {
                        // Wounded (or wounded and already forgotten: the name's history moved on): a rollback.
                        rollbacks++;
                        for (Lease l : new Lease[] {l1, l2}) {
                            if (l != null) {
                                try {
                                    engine.release(l, null, null);
                                } catch (Exception ignored) {
                                    // already broken: nothing to give back
                                }
                            }
                        }
                    }
                }
                return rollbacks;
            }));
        }
        go.countDown();
        pool.shutdown();
        // The clock never moves: a wait that could only end by running out would hang here.
        boolean finished = pool.awaitTermination(60, TimeUnit.SECONDS);
        StringBuilder state = new StringBuilder();
        for (String n : names) {
            var st = engine.inspect(n, 1).get(0);
            state.append('\n').append(n).append(" holders ").append(st.holders().stream().map(h -> h.holder() + " "
                    + h.kind()).toList()).append(" waiters ").append(st.waiters().stream().map(w -> w.holder() + " "
                    + w.names()).toList());
        }
        for (Future<Integer> f : done) {
            if (f.isDone()) {
                try {
                    f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    state.append("\nfailed: ").append(e.getCause());
                }
            }
        }
        assertEquals(true, finished, "every transaction finished; the names:" + state);
        for (Future<Integer> f : done) {
            f.get();
        }
    }
}
