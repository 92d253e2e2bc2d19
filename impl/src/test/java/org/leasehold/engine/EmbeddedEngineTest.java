package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;

/** What is particular to the embedded engine: memory bounds, restarts, interrupts, cross-name wake-ups. */
class EmbeddedEngineTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");
    private static final HolderId C = new HolderId("p", "c");

    private final ManualTimeSource time = new ManualTimeSource(EmbeddedFixture.START);
    private EmbeddedLeaseService engine = new EmbeddedLeaseService(
            EngineConfig.defaults().withQuietPeriod(Duration.ZERO).withIdleRetention(Duration.ofMinutes(1)), time);

    @AfterEach
    void close() {
        engine.close();
    }

    private static Instant plusMicros(Instant t, long micros) {
        return t.plusNanos(micros * 1_000);
    }

    @Test
    void idleNamesAreForgottenButTheirFloorAndGenerationSurvive() throws Exception {
        Lease a = engine.acquire(LeaseRequest.builder(A, "idle/1").build());
        Instant wm = plusMicros(a.grantedAt(), 42);
        engine.release(a, wm, null);
        engine.acquire(LeaseRequest.builder(B, "idle/2").leaseFor(Duration.ofSeconds(1)).build());
        assertEquals(2, engine.rememberedNames());
        time.advance(Duration.ofMinutes(3));
        assertEquals(0, engine.rememberedNames(), "idle names are forgotten, expired holders included");
        Lease again = engine.acquire(LeaseRequest.builder(C, "idle/1").build());
        assertTrue(again.grant("idle/1").generation() > a.grant("idle/1").generation());
        assertFalse(again.floor().isBefore(wm), "the floor of a forgotten name covers its last watermark");
        assertEquals(Ending.UNKNOWN, again.grant("idle/1").predecessor().ending());
    }

    @Test
    void aReinstatedLeaseKeepsItsGenerationsAndFloorsAndHoldsOffOthersBeforeTheQuietPeriodEnds() throws Exception {
        Lease before = engine.acquire(LeaseRequest.builder(A, "r/1", "r/2").build());
        engine.close();
        time.advance(Duration.ofSeconds(30));
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withIdleRetention(Duration.ofMinutes(1)), time);
        Lease again = engine.reinstate(before);
        assertEquals(before.grants(), again.grants(), "same generations, correlation ids and floors");
        assertEquals(time.now().plus(engine.config().maxLeaseDuration()), again.deadline());
        assertTrue(engine.check("r/1", before.grant("r/1").generation()), "a current full holder");
        time.advance(Duration.ofSeconds(5));
        Lease renewed = engine.renew(again, time.now().plusSeconds(10), null);
        time.advance(engine.config().effectiveQuietPeriod().minusSeconds(5));
        assertThrows(LeaseBusyException.class, () -> engine.acquire(LeaseRequest.builder(B, "r/2")
                .waitFor(Duration.ZERO).build()), "after the quiet period, still held: it was renewed");
        Instant wm = renewed.deadline().minusSeconds(1);
        engine.release(renewed, wm, "log=x");
        Lease next = engine.acquire(LeaseRequest.builder(B, "r/2").build());
        assertEquals(wm, next.floor(), "the reinstated holder's watermark is the next floor");
        assertTrue(next.grant("r/2").generation() > before.grant("r/2").generation());
    }

    @Test
    void reinstatingOverAConflictingHolderIsRefusedAndChangesNothing() throws Exception {
        Lease held = engine.acquire(LeaseRequest.builder(B, "r/x").build());
        Lease earlier = new Lease(A, LeaseMode.EXCLUSIVE, LeaseKind.FULL, time.now(), time.now().plusSeconds(5),
                List.of(new LeaseGrant("r/x", 7, new CorrelationId(1, 2), time.now(), time.now(), null)));
        LeaseBusyException e = assertThrows(LeaseBusyException.class, () -> engine.reinstate(earlier));
        assertTrue(e.getMessage().contains("cannot be reinstated"), e.getMessage());
        assertEquals(List.of(held.grant("r/x").generation()), engine.inspect("r/x", 1).get(0).holders().stream()
                .map(HolderStatus::generation).toList());
        Lease tentative = new Lease(A, LeaseMode.EXCLUSIVE, LeaseKind.TENTATIVE, time.now(), time.now().plusSeconds(5),
                earlier.grants());
        assertThrows(IllegalArgumentException.class, () -> engine.reinstate(tentative));
    }

    @Test
    void aLeaseHeldInDoubtOutlivesItsHoldersSilenceUntilTheHoldEnds() throws Exception {
        Lease lease = engine.acquire(LeaseRequest.builder(A, "doubt").build());
        Instant until = time.now().plusSeconds(60);
        assertEquals(lease, engine.holdInDoubt(lease, until), "the holder's view does not change");
        assertEquals(until, engine.inspect("doubt", 1).get(0).holders().get(0).inDoubtUntil());
        for (int i = 0; i < 11; i++) {
            time.advance(Duration.ofSeconds(5)); // nobody renews: the service does
            assertThrows(LeaseBusyException.class, () -> engine.acquire(LeaseRequest.builder(B, "doubt")
                    .waitFor(Duration.ZERO).build()));
            assertFalse(engine.inspect("doubt", 1).get(0).holders().get(0).deadline()
                    .isAfter(time.now().plus(engine.config().maxLeaseDuration())), "never beyond a maximum lease ahead");
        }
        // The holder, restarted, takes it back with the value it recorded, and ends it.
        Lease back = engine.renew(lease, time.now().plusSeconds(10), null);
        engine.release(back, back.deadline().minusSeconds(1), null);
        engine.acquire(LeaseRequest.builder(B, "doubt").waitFor(Duration.ZERO).build());
    }

    @Test
    void aLeaseHeldInDoubtEndsAtItsDeadlineAfterTheHold() throws Exception {
        Lease lease = engine.acquire(LeaseRequest.builder(A, "gone").build());
        Instant until = time.now().plusSeconds(30);
        engine.holdInDoubt(lease, until);
        time.advance(Duration.ofSeconds(29));
        Instant last = engine.inspect("gone", 1).get(0).holders().get(0).deadline();
        assertEquals(until, last, "renewed up to the hold's end, not beyond");
        time.advance(Duration.ofSeconds(2));
        Lease next = engine.acquire(LeaseRequest.builder(B, "gone").waitFor(Duration.ZERO).build());
        assertEquals(last, next.floor(), "an unrelinquished expiry: the floor is its deadline");
        assertEquals(last.plus(engine.config().grace()), next.writableFrom());
        assertThrows(LeaseExpiredException.class, () -> engine.renew(lease, time.now().plusSeconds(5), null));
    }

    @Test
    void onlyAFullLeaseIsHeldInDoubt() throws Exception {
        Lease tentative = engine.acquire(LeaseRequest.builder(A, "t").tentative().build());
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> engine.holdInDoubt(tentative, time.now().plusSeconds(30)));
        assertEquals(InvalidLeaseRequestException.Reason.NOT_FULL, e.reason());
        Lease full = engine.upgrade(tentative, null);
        assertEquals(InvalidLeaseRequestException.Reason.DEADLINE_IN_PAST, assertThrows(
                InvalidLeaseRequestException.class, () -> engine.holdInDoubt(full, time.now())).reason());
    }

    @Test
    void generationsStartFromTheStartTime() throws Exception {
        Lease a = engine.acquire(LeaseRequest.builder(A, "g").build());
        long base = EmbeddedFixture.START.toEpochMilli() << 20;
        assertTrue(a.grant("g").generation() > base);
        assertTrue(a.grant("g").generation() < base + (1L << 20));
    }

    @Test
    void closingFailsWaitingRequests() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "c").build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "c").waitFor(Duration.ofSeconds(5)).build());
        engine.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> b.get(5, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof LeaseServiceUnavailableException, String.valueOf(e.getCause()));
        assertThrows(LeaseServiceUnavailableException.class, () -> engine.acquire(LeaseRequest.builder(C, "d").build()));
    }

    @Test
    void interruptedWaitHoldsNothing() throws Exception {
        Lease a = engine.acquire(LeaseRequest.builder(A, "i").build());
        AtomicReference<Throwable> outcome = new AtomicReference<>();
        CountDownLatch done = new CountDownLatch(1);
        Thread t = new Thread(() -> {
            try {
                engine.acquire(LeaseRequest.builder(B, "i").waitFor(Duration.ofSeconds(5)).build());
            } catch (Throwable e) {
                outcome.set(e);
            }
            done.countDown();
        });
        t.start();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (engine.inspect("i", 1).get(0).waiters().isEmpty() && System.nanoTime() < until) {
            Thread.sleep(1);
        }
        t.interrupt();
        assertTrue(done.await(5, TimeUnit.SECONDS));
        assertTrue(outcome.get() instanceof InterruptedException, String.valueOf(outcome.get()));
        assertTrue(engine.inspect("i", 1).get(0).waiters().isEmpty());
        engine.release(a, null, null);
        engine.acquire(LeaseRequest.builder(C, "i").build());
    }

    @Test
    void breakingAMultiNameTentativeWakesWaitersOnItsOtherNames() throws Exception {
        Instant t0 = time.now();
        engine.acquire(LeaseRequest.builder(B, "x/a", "x/b").tentative().startedAt(t0.plusSeconds(1)).build());
        EmbeddedFixture.waitElsewhere(engine, B, t0.plusSeconds(1));
        CompletableFuture<Lease> c = engine.acquireAsync(LeaseRequest.builder(C, "x/b").startedAt(t0.plusSeconds(2))
                .waitFor(Duration.ofSeconds(5)).build());
        assertFalse(c.isDone());
        engine.acquire(LeaseRequest.builder(A, "x/a").tentative().startedAt(t0).build());
        Lease got = c.get(5, TimeUnit.SECONDS);
        assertEquals(Ending.BROKEN, got.grant("x/b").predecessor().ending());
    }

    /**
     * A holder said to wait at another service counts as waiting here: the older request that waits for its tentative
     * holding breaks it then (a cycle through the two services is possible), and not before; once its wait there has
     * ended, it is spared again.
     */
    @Test
    void aHolderWaitingAtAnotherServiceIsBrokenForAnOlderRequestWaitingHere() throws Exception {
        Instant t0 = time.now();
        Lease young = engine.acquire(LeaseRequest.builder(B, "far/1").tentative().startedAt(t0.plusSeconds(1))
                .build());
        CompletableFuture<Lease> old = engine.acquireAsync(LeaseRequest.builder(A, "far/1").tentative()
                .startedAt(t0).waitFor(Duration.ofSeconds(30)).build());
        assertFalse(old.isDone(), "the younger holder waits for nothing here: the older request waits for it");
        Lease other = engine.acquire(LeaseRequest.builder(C, "far/other").tentative().startedAt(t0).build());
        assertThrows(org.leasehold.lease.StaleLeaseException.class, () -> engine.waitingElsewhere(
                new Lease(B, other.mode(), other.kind(), other.grantedAt(), other.deadline(), other.grants())),
                "only with a lease its holder holds");
        assertFalse(old.isDone());
        Runnable over = engine.waitingElsewhere(young);
        Lease taken = old.get(5, TimeUnit.SECONDS);
        assertEquals(Ending.BROKEN, taken.grant("far/1").predecessor().ending());
        assertThrows(org.leasehold.lease.LeaseBrokenException.class, () -> engine.upgrade(young, null));
        over.run();
        over.run();
        assertEquals(0, engine.woundWaitEntries(), "the wait elsewhere ended once, and nothing is left of it");

        // Ended: the holder waits for nothing again, and an older request waits for it.
        Lease again = engine.acquire(LeaseRequest.builder(B, "far/2").tentative().startedAt(t0.plusSeconds(1))
                .build());
        CompletableFuture<Lease> older = engine.acquireAsync(LeaseRequest.builder(C, "far/2").tentative()
                .startedAt(t0).waitFor(Duration.ofSeconds(30)).build());
        assertFalse(older.isDone());
        engine.release(engine.upgrade(again, null), null, null);
        assertEquals(Ending.RELINQUISHED, older.get(5, TimeUnit.SECONDS).grant("far/2").predecessor().ending());
        engine.release(taken, null, null);
        engine.release(other, null, null);
    }

    @Test
    void reTakingOneNameEndsTheWholeOldLease() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "y/a", "y/b").build());
        CompletableFuture<Lease> c = engine.acquireAsync(LeaseRequest.builder(C, "y/b").waitFor(Duration.ofSeconds(5)).build());
        Lease again = engine.acquire(LeaseRequest.builder(A, "y/a").build());
        Lease got = c.get(5, TimeUnit.SECONDS);
        assertEquals(Ending.RETAKEN, got.grant("y/b").predecessor().ending());
        assertEquals(Ending.RETAKEN, again.grant("y/a").predecessor().ending());
    }

    @Test
    void olderSemaphoreRequesterBreaksTheYoungestTentativePermit() throws Exception {
        Instant t0 = time.now();
        Lease p1 = engine.acquire(LeaseRequest.builder(B, "sem").semaphore(2).tentative().startedAt(t0.plusSeconds(1)).build());
        Lease p2 = engine.acquire(LeaseRequest.builder(C, "sem").semaphore(2).tentative().startedAt(t0.plusSeconds(2)).build());
        assertThrows(LeaseBusyException.class, () -> engine.acquire(LeaseRequest.builder(A, "sem").semaphore(2)
                .tentative().startedAt(t0).build()), "neither holder waits for anything: no permit is broken");
        EmbeddedFixture.waitElsewhere(engine, C, t0.plusSeconds(2));
        engine.acquire(LeaseRequest.builder(A, "sem").semaphore(2).tentative().startedAt(t0).build());
        engine.upgrade(p1, null);
        assertThrows(org.leasehold.lease.LeaseBrokenException.class, () -> engine.upgrade(p2, null));
    }

    @Test
    void olderSemaphoreRequesterBreaksAnOlderPermitWhoseHolderWaitsRatherThanAYoungerOneThatDoesNot() throws Exception {
        Instant t0 = time.now();
        Lease p1 = engine.acquire(LeaseRequest.builder(B, "sem2").semaphore(2).tentative().startedAt(t0.plusSeconds(1))
                .build());
        Lease p2 = engine.acquire(LeaseRequest.builder(C, "sem2").semaphore(2).tentative().startedAt(t0.plusSeconds(2))
                .build());
        EmbeddedFixture.waitElsewhere(engine, B, t0.plusSeconds(1));
        engine.acquire(LeaseRequest.builder(A, "sem2").semaphore(2).tentative().startedAt(t0).build());
        engine.upgrade(p2, null);
        assertThrows(org.leasehold.lease.LeaseBrokenException.class, () -> engine.upgrade(p1, null));
    }

    @Test
    void waitersOnOverlappingNameSetsDoNotDeadlock() throws Exception {
        Lease hold = engine.acquire(LeaseRequest.builder(A, "z/1", "z/2", "z/3").build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "z/1", "z/2").waitFor(Duration.ofSeconds(30)).build());
        CompletableFuture<Lease> c = engine.acquireAsync(LeaseRequest.builder(C, "z/3", "z/2").waitFor(Duration.ofSeconds(30)).build());
        engine.release(hold, null, null);
        Lease first = b.get(5, TimeUnit.SECONDS);
        assertFalse(c.isDone(), "C queued behind B on z/2");
        engine.release(first, null, null);
        assertEquals(C, c.get(5, TimeUnit.SECONDS).holder());
    }

    @Test
    void expiryWakeUpsUseTimersNotPolling() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "timer").build());
        int before = time.pendingTimers();
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "timer").waitFor(Duration.ofSeconds(30)).build());
        assertEquals(before + 2, time.pendingTimers(), "one wake-up at the holder's deadline, one for the wait's end");
        time.advance(Duration.ofSeconds(10));
        assertEquals(B, b.get(5, TimeUnit.SECONDS).holder());
        assertEquals(before, time.pendingTimers(), "timers of a granted request are cancelled");
    }

    @Test
    void configurationErrorsSayWhatIsAccepted() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EngineConfig.defaults().withMaxLeaseDuration(Duration.ZERO).validate());
        assertTrue(e.getMessage().contains("positive"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> EngineConfig.defaults().withMaxLeaseDuration(Duration.ofDays(2)).validate());
        assertThrows(IllegalArgumentException.class, () -> EngineConfig.defaults().withGrace(Duration.ofSeconds(-1)).validate());
        assertThrows(IllegalArgumentException.class, () -> EngineConfig.defaults().withShards(3).validate());
        assertThrows(IllegalArgumentException.class, () -> EngineConfig.defaults().withMaxNamesPerRequest(1001).validate());
    }

    @Test
    void aLeaseWhoseEndLeftTheHistoryIsStillReportedExpired() throws Exception {
        EmbeddedLeaseService small = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)
                .withHistoryPerName(1), time);
        try {
            Lease old = small.acquire(LeaseRequest.builder(A, "h").leaseFor(Duration.ofSeconds(1)).build());
            time.advance(Duration.ofSeconds(2));
            for (int i = 0; i < 3; i++) {
                small.release(small.acquire(LeaseRequest.builder(B, "h").build()), null, null);
            }
            assertThrows(org.leasehold.lease.LeaseExpiredException.class, () -> small.release(old, null, null));
            assertThrows(org.leasehold.lease.LeaseExpiredException.class,
                    () -> small.renewFor(old, Duration.ofSeconds(1)));
        } finally {
            small.close();
        }
    }

    @Test
    void aFencedEngineGrantsRenewsAndUpgradesNothing() throws Exception {
        Lease held = engine.acquire(LeaseRequest.builder(A, "fenced").tentative().build());
        engine.fenceAt(time.now().plusSeconds(1), "the owner could not confirm ownership");
        engine.acquire(LeaseRequest.builder(B, "before-fence").build());
        time.advance(Duration.ofSeconds(1));
        org.leasehold.lease.LeaseServiceUnavailableException e = assertThrows(
                org.leasehold.lease.LeaseServiceUnavailableException.class,
                () -> engine.acquire(LeaseRequest.builder(C, "after-fence").build()));
        assertTrue(e.getMessage().contains("could not confirm ownership"), e.getMessage());
        assertThrows(org.leasehold.lease.LeaseServiceUnavailableException.class, () -> engine.upgrade(held, null));
        assertThrows(org.leasehold.lease.LeaseServiceUnavailableException.class,
                () -> engine.renewFor(held, Duration.ofSeconds(1)));
        engine.fenceAt(time.now().plusSeconds(5), "confirmed again");
        engine.acquire(LeaseRequest.builder(C, "after-fence").build());
    }

    /**
     * The names of one shard must not share the bucket bits of the shard's hash map: with the shard picked from the
     * low hash bits (which HashMap indexes by) 100 000 names over 64 shards filled 1/64 of each map's buckets.
     */
    @Test
    void namesOfOneShardSpreadOverTheirMapsBuckets() {
        int shards = 64;
        java.util.List<java.util.Set<Integer>> buckets = new java.util.ArrayList<>();
        int[] count = new int[shards];
        for (int i = 0; i < shards; i++) {
            buckets.add(new java.util.HashSet<>());
        }
        for (int i = 0; i < 100_000; i++) {
            String name = "n" + i;
            int shard = EmbeddedLeaseService.shardIndex(name, shards - 1);
            int h = name.hashCode();
            // The bucket of a HashMap of 4096 buckets (what ~1 600 names grow one to).
            buckets.get(shard).add((h ^ (h >>> 16)) & 4095);
            count[shard]++;
        }
        for (int i = 0; i < shards; i++) {
            assertTrue(count[i] > 1_000 && count[i] < 2_200, "shard " + i + " holds " + count[i] + " of 100 000 names");
            // Random placement of ~1 560 names into 4 096 buckets fills about 1 300 of them.
            assertTrue(buckets.get(i).size() > 1_000, "shard " + i + "'s " + count[i] + " names use only "
                    + buckets.get(i).size() + " buckets of 4096");
        }
    }
}
