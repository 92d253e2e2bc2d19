package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The write rule as a lease holder outside the store asks it ({@link WriteRule#readyForSuccessor},
 * {@link WriteRule#awaitWritable}), against the store's own check of the same leases. Default geometry (1 s buckets,
 * 2 s grace, 500 ms clock error); a predecessor whose lease ended at {@code T0 + 200 ms} wrote in bucket
 * {@code [T0, T0 + 1 s)}, so its successor may write from {@code T0 + 3.5 s}. The holder waits on its own thread;
 * the test moves the manual clock.
 */
class WriteRuleAskedTest {
    private static final Instant PREDECESSOR_DEADLINE = T0.plusMillis(200);
    private static final Instant SETTLED = T0.plusMillis(3_500);

    private static Lease successor(Ending predecessorEnding, Instant deadline) {
        Predecessor p = new Predecessor(new CorrelationId(1, 2), predecessorEnding, PREDECESSOR_DEADLINE,
                PREDECESSOR_DEADLINE, null);
        LeaseGrant g = new LeaseGrant("acct", 2, new CorrelationId(3, 4), PREDECESSOR_DEADLINE,
                PREDECESSOR_DEADLINE.plusSeconds(2), p);
        return new Lease(new HolderId("proc", "successor"), LeaseMode.EXCLUSIVE, LeaseKind.FULL, T0, deadline,
                List.of(g));
    }

    private static Lease writableFrom(Instant from, Instant deadline) {
        LeaseGrant g = new LeaseGrant("acct", 1, new CorrelationId(5, 6), T0.minusSeconds(1), from, null);
        return new Lease(new HolderId("proc", "holder"), LeaseMode.EXCLUSIVE, LeaseKind.FULL, T0, deadline,
                List.of(g));
    }

    /** Waits (without sleeping) until the holder's thread has its timer armed on the manual clock. */
    private static void awaitTimer(ManualTimeSource time, CompletableFuture<?> holder) {
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (time.pendingTimers() == 0 && !holder.isDone()) {
            if (System.nanoTime() > giveUp) {
                throw new AssertionError("the holder never armed a timer");
            }
            Thread.onSpinWait();
        }
    }

    private static Path bucketLock(Path root, Instant start) {
        return LogGeometry.bucketDir(root.resolve("log"), Micros.of(start)).resolve(Names.LOCK);
    }

    @Test
    void aSuccessorWaitsUntilThePredecessorsWritesSettleThenSealsItsBuckets() throws Exception {
        Path root = freshDir("asked-successor");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(lease("acct", 1, T0.minusSeconds(1), PREDECESSOR_DEADLINE)), "old"));
            time.set(PREDECESSOR_DEADLINE.plusSeconds(2));
            Lease next = successor(Ending.EXPIRED, T0.plusSeconds(60));

            TimestampOutOfRangeException early = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", LeaseStamp.of(next), "new")));
            assertEquals(TimestampOutOfRangeException.Reason.NOT_YET_WRITABLE, early.reason());
            assertEquals(SETTLED, early.retryAt(), "the store refuses until the instant the holder waits for");

            CompletableFuture<Boolean> ready = CompletableFuture.supplyAsync(() -> {
                try {
                    return WriteRule.readyForSuccessor(store, "log", next, time);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            awaitTimer(time, ready);
            assertFalse(ready.isDone(), "the holder waits for the predecessor's writes to settle");
            time.set(SETTLED.minusNanos(1_000));
            assertFalse(ready.isDone(), "one microsecond early");
            assertFalse(Files.exists(bucketLock(root, T0)), "nothing sealed while waiting");
            time.set(SETTLED);
            assertTrue(ready.get(30, TimeUnit.SECONDS), "it sealed");
            assertTrue(Files.exists(bucketLock(root, T0)), "the predecessor's bucket is sealed");

            store.append(req("log", LeaseStamp.of(next), "new"));
            assertEquals(List.of("old", "new"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void aSuccessorWhoseLeaseEndsBeforeTheWritesSettleIsTurnedAwayWithoutWaiting() throws Exception {
        Path root = freshDir("asked-too-short");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(lease("acct", 1, T0.minusSeconds(1), PREDECESSOR_DEADLINE)), "old"));
            time.set(PREDECESSOR_DEADLINE.plusSeconds(2));
            Lease shortOne = successor(Ending.EXPIRED, SETTLED);
            LeaseBusyException e = assertThrows(LeaseBusyException.class,
                    () -> WriteRule.readyForSuccessor(store, "log", shortOne, time));
            assertTrue(e.getMessage().contains(SETTLED.toString()) && e.getMessage().contains("longer lease"),
                    e.getMessage());
            assertEquals(0, time.pendingTimers());
            assertFalse(Files.exists(bucketLock(root, T0)));
        }
    }

    @Test
    void aSuccessorOfAHolderThatReleasedNeitherWaitsNorSeals() throws Exception {
        Path root = freshDir("asked-released");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(lease("acct", 1, T0.minusSeconds(1), PREDECESSOR_DEADLINE)), "old"));
            time.set(PREDECESSOR_DEADLINE.plusSeconds(2));
            Lease next = successor(Ending.RELINQUISHED, T0.plusSeconds(60));
            assertFalse(WriteRule.predecessorExpired(next));
            assertFalse(WriteRule.readyForSuccessor(store, "log", next, time));
            assertEquals(0, time.pendingTimers());
            assertFalse(Files.exists(bucketLock(root, T0)));
            assertTrue(WriteRule.predecessorExpired(successor(Ending.EXPIRED, T0.plusSeconds(60))));
        }
    }

    @Test
    void aLeaseWritableWithinTheClockErrorIsWaitedForAndOneFurtherAheadIsLeftToTheStore() throws Exception {
        Path root = freshDir("asked-writable");
        ManualTimeSource time = StoreFixture.clock();
        Duration error = Duration.ofMillis(500);
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Lease near = writableFrom(T0.plusMillis(300), T0.plusSeconds(60));
            CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> {
                try {
                    WriteRule.awaitWritable(List.of(near), error, time);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            awaitTimer(time, waited);
            time.set(T0.plusMillis(300).minusNanos(1_000));
            assertFalse(waited.isDone(), "one microsecond early");
            time.set(T0.plusMillis(300));
            waited.get(30, TimeUnit.SECONDS);
            store.append(req("log", LeaseStamp.of(near), "near"));

            Lease far = writableFrom(T0.plusMillis(1_000), T0.plusSeconds(60));
            WriteRule.awaitWritable(List.of(far), error, time);
            assertEquals(0, time.pendingTimers(), "more than the clock error ahead: no wait");
            assertEquals(TimestampOutOfRangeException.Reason.NOT_YET_WRITABLE, assertThrows(
                    TimestampOutOfRangeException.class, () -> store.append(req("log", LeaseStamp.of(far), "far")))
                    .reason());
        }
    }

    @Test
    void anInterruptedWaitSaysUntilWhenAndForWhatAndLeavesNoTimer() throws Exception {
        ManualTimeSource time = StoreFixture.clock();
        Lease near = writableFrom(T0.plusMillis(300), T0.plusSeconds(60));
        CompletableFuture<Thread> waiter = new CompletableFuture<>();
        CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> {
            waiter.complete(Thread.currentThread());
            try {
                WriteRule.awaitWritable(List.of(near), Duration.ofMillis(500), time);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        awaitTimer(time, waited);
        waiter.get().interrupt();
        ExecutionException e = assertThrows(ExecutionException.class, () -> waited.get(30, TimeUnit.SECONDS));
        Throwable interrupted = e.getCause().getCause();
        assertTrue(interrupted instanceof InterruptedException, String.valueOf(interrupted));
        assertTrue(interrupted.getMessage().contains(T0.plusMillis(300).toString())
                && interrupted.getMessage().contains("[acct]"), interrupted.getMessage());
        assertEquals(0, time.pendingTimers());
    }

    @Test
    void theLatestWritableFromOfSeveralLeasesIsWaitedFor() throws Exception {
        ManualTimeSource time = StoreFixture.clock();
        Lease later = writableFrom(T0.plusMillis(300), T0.plusSeconds(60));
        Lease earlier = writableFrom(T0.plusMillis(100), T0.plusSeconds(60));
        CompletableFuture<Void> waited = CompletableFuture.runAsync(() -> {
            try {
                WriteRule.awaitWritable(List.of(later, earlier), Duration.ofMillis(500), time);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        awaitTimer(time, waited);
        time.set(T0.plusMillis(300).minusNanos(1_000));
        assertEquals(1, time.pendingTimers(), "still waiting on its timer: the later lease is not writable yet");
        time.set(T0.plusMillis(300));
        waited.get(30, TimeUnit.SECONDS);
        assertEquals(0, time.pendingTimers());
    }

    @Test
    void aLeaseFollowsAnExpiredPredecessorIfAnyOfItsNamesDoes() {
        Predecessor released = new Predecessor(new CorrelationId(1, 2), Ending.RELINQUISHED, PREDECESSOR_DEADLINE,
                PREDECESSOR_DEADLINE, null);
        Predecessor expired = new Predecessor(new CorrelationId(1, 3), Ending.EXPIRED, PREDECESSOR_DEADLINE,
                PREDECESSOR_DEADLINE, null);
        LeaseGrant fresh = new LeaseGrant("a", 1, new CorrelationId(3, 4), T0, T0, null);
        LeaseGrant afterRelease = new LeaseGrant("b", 2, new CorrelationId(3, 5), T0, T0, released);
        LeaseGrant afterExpiry = new LeaseGrant("c", 2, new CorrelationId(3, 6), T0, T0, expired);
        HolderId h = new HolderId("proc", "holder");
        assertTrue(WriteRule.predecessorExpired(new Lease(h, LeaseMode.EXCLUSIVE, LeaseKind.FULL, T0,
                T0.plusSeconds(60), List.of(fresh, afterRelease, afterExpiry))));
        assertFalse(WriteRule.predecessorExpired(new Lease(h, LeaseMode.EXCLUSIVE, LeaseKind.FULL, T0,
                T0.plusSeconds(60), List.of(fresh, afterRelease))));
    }
}
