package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.store.format.Frames;
import org.leasehold.time.ManualTimeSource;

/**
 * The appender's decisions at their edges: when a store-chosen timestamp is bumped to the last one queued, how many
 * queued frames one batch takes, and when an append waits for room in the queue.
 */
class AppenderEdgesTest {

    /** Hooks that hold the committer before each write until {@code release}, counting {@code writing} down. */
    private static ScriptedHooks holdingWrites(CountDownLatch writing, CountDownLatch release) {
        ScriptedHooks hooks = new ScriptedHooks();
        hooks.beforeWrite.set(() -> {
            writing.countDown();
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        return hooks;
    }

    @Test
    void aTimestampIsNotBumpedToTheLastQueuedOneWhenThatIsExactlyTheDeadline() throws Exception {
        Path root = freshDir("appender-bump-deadline");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended later = store.append(req("log", List.of(), "later").at(T0.plusMillis(200)));
            LeaseStamp endsThere = lease("d", 1, T0.minusSeconds(1), T0.plusMillis(200));
            Appended own = store.append(req("log", List.of(endsThere), "own"));
            assertEquals(T0, own.timestamp(), "a bump to the deadline would be outside the lease");
            assertEquals(store.writerId() + ".1.data", own.file(), "so it starts a new data file");
            LeaseStamp endsAfter = lease("e", 1, T0.minusSeconds(1), T0.plusMillis(200).plusNanos(1_000));
            Appended bumped = store.append(req("log", List.of(endsAfter), "bumped"));
            assertEquals(later.timestamp(), bumped.timestamp(), "1 µs before the deadline: bumped");
            assertEquals(own.file(), bumped.file(), "the current data file, in order after the one before");
            assertEquals(List.of("own", "later", "bumped"), texts(store, ReadRequest.all("log")));
            assertEquals(List.of(), LogChecker.check(root.resolve("log")).violations());
        }
    }

    @Test
    void aBatchTakesQueuedFramesUpToExactlyMaxBatchBytes() throws Exception {
        Path root = freshDir("appender-batch");
        ManualTimeSource time = StoreFixture.clock();
        int frame = (int) Frames.size(List.of(), new byte[0][], List.of(new byte[1]));
        CountDownLatch writing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ScriptedHooks hooks = holdingWrites(writing, release);
        try (FileBagStore store = FileBagStore.open(config(root).maxBatchBytes(2 * frame).build(), time, hooks)) {
            List<CompletableFuture<Appended>> acks = new ArrayList<>();
            acks.add(store.appendAsync(req("log", List.of(), "0")));
            assertTrue(writing.await(30, TimeUnit.SECONDS), "the first batch is being written");
            for (int i = 1; i <= 5; i++) {
                acks.add(store.appendAsync(req("log", List.of(), Integer.toString(i))));
            }
            release.countDown();
            for (CompletableFuture<Appended> a : acks) {
                assertEquals(frame, a.get(30, TimeUnit.SECONDS).length());
            }
            assertEquals(6, store.stats().frames());
            assertEquals(6L * frame, store.stats().bytes(), "every frame's bytes counted once");
            assertEquals(4, store.stats().batches(), "the first frame, then two, two and one");
            assertEquals(4, store.stats().forces(), "one force per batch");
            assertEquals(List.of("0", "1", "2", "3", "4", "5"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void anAppendWaitsForRoomOnlyWhenItsFrameWouldTakeTheQueuePastMaxQueuedBytes() throws Exception {
        Path root = freshDir("appender-back-pressure");
        ManualTimeSource time = StoreFixture.clock();
        byte[] payload = new byte[1000];
        int frame = (int) Frames.size(List.of(), new byte[0][], List.of(payload));
        CountDownLatch writing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        ScriptedHooks hooks = holdingWrites(writing, release);
        // Room for exactly two frames (the smallest queue the configuration allows is one largest frame, 2 KiB).
        BagStoreConfig cfg = config(root).maxPayloadBytes(1024).maxFrameBytes(2048).maxQueuedBytes(2L * frame).build();
        try (FileBagStore store = FileBagStore.open(cfg, time, hooks)) {
            try {
                List<CompletableFuture<Appended>> acks = new ArrayList<>();
                acks.add(store.appendAsync(AppendRequest.of("log", List.of(), payload)));
                assertTrue(writing.await(30, TimeUnit.SECONDS), "the first batch is being"
                        + " written (and left the queue)");
                // One frame queued behind it, then a second that brings the queue to exactly its bound: both are queued
                // at once (on another thread, so that a wrong wait fails here rather than hanging the test).
                for (int i = 0; i < 2; i++) {
                    acks.add(CompletableFuture.supplyAsync(() -> store.appendAsync(AppendRequest.of("log", List.of(),
                            payload))).get(5, TimeUnit.SECONDS));
                }
                // A third would take it past the bound: its caller waits until the committer takes the queue.
                AtomicReference<CompletableFuture<Appended>> third = new AtomicReference<>();
                AtomicReference<Throwable> failed = new AtomicReference<>();
                Thread caller = new Thread(() -> {
                    try {
                        third.set(store.appendAsync(AppendRequest.of("log", List.of(), payload)));
                    } catch (Throwable e) {
                        failed.set(e);
                    }
                }, "appender-back-pressure-caller");
                caller.start();
                // Nothing holds the appender's lock while the committer is held before its write, so a caller that is
                // WAITING waits for room.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (caller.getState() != Thread.State.WAITING && caller.isAlive() && System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                assertEquals(Thread.State.WAITING, caller.getState(), "the third queued append waits for room");
                assertNull(third.get(), "and has not been queued");
                release.countDown();
                // Room is made when the committer takes the queue; a bound well below the mutation run's time-out,
                // so that a caller never woken fails the check instead of timing out.
                caller.join(TimeUnit.SECONDS.toMillis(8));
                assertNull(failed.get());
                assertTrue(third.get() != null, "the waiting append was queued once the committer took the queue");
                acks.add(third.get());
                for (CompletableFuture<Appended> a : acks) {
                    assertEquals(frame, a.get(30, TimeUnit.SECONDS).length());
                }
                assertEquals(4, store.stats().frames());
                assertEquals(4, texts(store, ReadRequest.all("log")).size());
            } finally {
                release.countDown(); // a failed check must not leave the committer held: closing waits for it
            }
        }
    }
}
