package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.bytes;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.readAll;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/** Appends and ordered reads: round trip, order across writers, filters, group commit, flush policies. */
class AppendReadTest {

    @Test
    void appendsAreReadBackInOrderTentativeUntilSealed() throws Exception {
        Path root = freshDir("append-read-roundtrip");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp a = lease("tenant/1", 7);
            LeaseStamp b = lease("tenant/2", 3);
            Appended first = store.append(req("orders", List.of(a), "one"));
            time.advance(Duration.ofMillis(5));
            Appended second = store.append(req("orders", List.of(a, b), "two", "three"));
            time.advance(Duration.ofMillis(5));
            Appended third = store.append(req("orders", List.of(), "four"));

            assertEquals(T0, first.timestamp(), "the store chooses now when no floor is ahead");
            assertEquals(2, second.messages());
            assertEquals(first.file(), second.file(), "one data file per writer per bucket");
            assertEquals(first.offset() + first.length(), second.offset(), "frames are appended back to back");
            assertEquals(store.writerId() + ".0.data", first.file());

            List<Message> tentative = readAll(store, ReadRequest.all("orders"));
            assertEquals(List.of("one", "two", "three", "four"), tentative.stream().map(StoreFixture::text).toList());
            assertTrue(tentative.stream().allMatch(Message::tentative), "unsealed buckets are read as tentative");
            Message two = tentative.get(1);
            assertEquals(List.of("tenant/1", "tenant/2"), two.leases().stream().map(l -> l.name()).toList());
            assertEquals(3, two.leases().get(1).generation());
            assertEquals(0, two.index());
            assertEquals(1, tentative.get(2).index());
            assertEquals(second.offset(), tentative.get(2).offset());
            assertEquals(store.writerId(), two.writer());
            assertEquals(third.timestamp(), tentative.get(3).timestamp());

            time.advance(Duration.ofSeconds(4));
            store.sealThrough("orders", T0, T0.plusSeconds(1));
            List<Message> sealed = readAll(store, ReadRequest.all("orders"));
            assertEquals(List.of("one", "two", "three", "four"), sealed.stream().map(StoreFixture::text).toList());
            assertFalse(sealed.stream().anyMatch(Message::tentative), "sealed buckets are final");

            LogChecker.Result check = LogChecker.check(root.resolve("orders"));
            assertEquals(List.of(), check.violations());
            assertTrue(check.allSealed());
            assertEquals(List.of("one", "two", "three", "four"), check.ordered().stream().map(LogChecker.Msg::text)
                    .toList());
        }
    }

    @Test
    void messagesOfSeveralWritersMergeByTimestampWriterAndOffset() throws Exception {
        Path root = freshDir("append-read-merge");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore s1 = FileBagStore.open(config(root).build(), time);
                FileBagStore s2 = FileBagStore.open(config(root).build(), time)) {
            assertNotEquals(s1.writerId(), s2.writerId(), "two stores on one machine get distinct writer ids");
            List<LeaseStamp> none = List.of();
            // Caller-chosen timestamps, interleaved across writers, with ties.
            s2.append(req("log", none, "s2@30").at(T0.plusMillis(30)));
            s1.append(req("log", none, "s1@10").at(T0.plusMillis(10)));
            s1.append(req("log", none, "s1@30").at(T0.plusMillis(30)));
            s2.append(req("log", none, "s2@20").at(T0.plusMillis(20)));
            s1.append(req("log", none, "s1@40").at(T0.plusMillis(40)));
            s2.append(req("log", none, "s2@40b").at(T0.plusMillis(40)));
            time.advance(Duration.ofMillis(800));
            s2.append(req("log", none, "s2@1200").at(T0.plusMillis(1200)));
            s1.append(req("log", none, "s1@900").at(T0.plusMillis(900)));

            String lo = s1.writerId().compareTo(s2.writerId()) < 0 ? "s1" : "s2";
            String hi = lo.equals("s1") ? "s2" : "s1";
            List<String> expected = List.of("s1@10", "s2@20", lo + "@30", hi + "@30",
                    lo.equals("s1") ? "s1@40" : "s2@40b", lo.equals("s1") ? "s2@40b" : "s1@40", "s1@900", "s2@1200");
            assertEquals(expected, texts(s1, ReadRequest.all("log")));
            assertEquals(expected, texts(s2, ReadRequest.all("log")), "every reader sees the same order");

            LogChecker.Result check = LogChecker.check(root.resolve("log"));
            assertEquals(List.of(), check.violations());
            assertEquals(expected, check.ordered().stream().map(LogChecker.Msg::text).toList(),
                    "the independent checker agrees on the order");
        }
    }

    @Test
    void readsFilterByTimeRangeAndLeaseName() throws Exception {
        Path root = freshDir("append-read-filter");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp a = lease("acct/a", 1);
            LeaseStamp b = lease("acct/b", 1);
            for (int i = 0; i < 6; i++) {
                store.append(req("log", List.of(i % 2 == 0 ? a : b), "m" + i).at(T0.plusMillis(400L * i)));
                time.advance(Duration.ofMillis(400));
            }
            assertEquals(List.of("m0", "m2", "m4"), texts(store, ReadRequest.all("log").underAnyOf(Set.of("acct/a"))));
            assertEquals(List.of("m2", "m3"), texts(store, ReadRequest.all("log").between(T0.plusMillis(800),
                    T0.plusMillis(1600))));
            assertEquals(List.of("m3"), texts(store, ReadRequest.all("log").between(T0.plusMillis(800),
                    T0.plusMillis(1600)).underAnyOf(Set.of("acct/b", "acct/zzz"))));
            assertEquals(List.of(), texts(store, ReadRequest.all("log").between(T0.plusSeconds(100), null)));
            assertEquals(6, texts(store, ReadRequest.all("log").between(null, null)).size());
            assertEquals(List.of(), texts(store, ReadRequest.all("log").sealedOnly()), "nothing is sealed yet");
        }
    }

    @Test
    void concurrentAppendsShareWritesAndFlushes() throws Exception {
        Path root = freshDir("append-read-group-commit");
        ManualTimeSource time = StoreFixture.clock();
        int threads = 32;
        int each = 25;
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CountDownLatch start = new CountDownLatch(1);
            List<Future<List<Appended>>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                results.add(pool.submit(() -> {
                    start.await();
                    List<Appended> acks = new ArrayList<>();
                    LeaseStamp l = lease("thread/" + id, 1);
                    for (int i = 0; i < each; i++) {
                        acks.add(store.append(req("log", List.of(l), id + ":" + i)));
                    }
                    return acks;
                }));
            }
            start.countDown();
            Set<Long> offsets = new HashSet<>();
            for (Future<List<Appended>> f : results) {
                for (Appended a : f.get()) {
                    assertTrue(offsets.add(a.offset()), "every frame has its own offset");
                }
            }
            pool.shutdown();
            StoreStats stats = store.stats();
            assertEquals(threads * each, stats.frames());
            assertTrue(stats.batches() < stats.frames(), "group commit: " + stats.batches() + " batches for "
                    + stats.frames() + " frames");
            assertEquals(stats.batches(), stats.forces(), "one force per batch");
            List<String> got = texts(store, ReadRequest.all("log"));
            assertEquals(threads * each, got.size());
            assertEquals(threads * each, new HashSet<>(got).size());
            // Per thread, messages come back in the order they were acknowledged.
            for (int t = 0; t < threads; t++) {
                String prefix = t + ":";
                List<String> mine = got.stream().filter(s -> s.startsWith(prefix)).toList();
                for (int i = 0; i < each; i++) {
                    assertEquals(prefix + i, mine.get(i));
                }
            }
            assertEquals(List.of(), LogChecker.check(root.resolve("log")).violations());
        }
    }

    @Test
    void asynchronousAppendsAreAcknowledgedInTheOrderTheyWereCommitted() throws Exception {
        Path root = freshDir("append-read-async-order");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<Integer> order = java.util.Collections.synchronizedList(new ArrayList<>());
            List<CompletableFuture<Appended>> fs = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                int id = i;
                fs.add(store.appendAsync(AppendRequest.of("log", List.of(), bytes("m" + i)))
                        .whenComplete((a, e) -> order.add(id)));
            }
            long lastOffset = -1;
            for (CompletableFuture<Appended> f : fs) {
                Appended a = f.get();
                assertTrue(a.offset() > lastOffset, "committed in submission order");
                lastOffset = a.offset();
            }
            List<Integer> expected = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                expected.add(i);
            }
            assertEquals(expected, order, "acknowledged in commit order");
            assertTrue(store.stats().batches() < 500, "several appends per batch");
        }
    }

    @Test
    void callerTimestampsGoingBackwardsStartANewDataFileSoEachFileStaysOrdered() throws Exception {
        Path root = freshDir("append-read-backwards");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended late = store.append(req("log", List.of(), "later").at(T0.plusMillis(300)));
            Appended early = store.append(req("log", List.of(), "earlier").at(T0.plusMillis(100)));
            assertEquals(store.writerId() + ".0.data", late.file());
            assertEquals(store.writerId() + ".1.data", early.file());
            assertEquals(List.of("earlier", "later"), texts(store, ReadRequest.all("log")));
            assertEquals(List.of(), LogChecker.check(root.resolve("log")).violations());
        }
    }

    @Test
    void storeChosenTimestampsNeverDecreaseWithinAFile() throws Exception {
        Path root = freshDir("append-read-bump");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            // A lease whose floor is 200 ms ahead: the store writes at floor + 1 µs.
            LeaseStamp ahead = lease("x", 1, T0.plusMillis(200), T0.plusSeconds(5));
            Appended a = store.append(req("log", List.of(ahead), "ahead"));
            assertEquals(T0.plusMillis(200).plusNanos(1000), a.timestamp());
            // Now another append with no floor would be at T0 < a: the store bumps it to a's timestamp.
            Appended b = store.append(req("log", List.of(lease("y", 1)), "bumped"));
            assertEquals(a.timestamp(), b.timestamp());
            assertEquals(a.file(), b.file());
            // A lease whose deadline forbids the bump keeps its own timestamp, in a new file.
            LeaseStamp tight = lease("z", 1, T0.minusSeconds(1), T0.plusMillis(100));
            Appended c = store.append(req("log", List.of(tight), "own"));
            assertEquals(T0, c.timestamp());
            assertEquals(store.writerId() + ".1.data", c.file());
            assertEquals(List.of("own", "ahead", "bumped"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void bucketsAreNestedByTimeAndReadAcrossDirectories() throws Exception {
        Path root = freshDir("append-read-nesting");
        ManualTimeSource time = new ManualTimeSource(Instant.parse("2026-12-31T23:59:58.500Z"));
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String p = "m" + i;
                expected.add(p);
                store.append(req("log", List.of(), p));
                time.advance(Duration.ofMillis(700));
            }
            assertTrue(Files.isDirectory(root.resolve("log/2026/12/31/23/59/58.000000")));
            assertTrue(Files.isDirectory(root.resolve("log/2027/01/01/00/00/01.000000")));
            assertEquals(expected, texts(store, ReadRequest.all("log")));
            assertEquals(List.of("m3"), texts(store, ReadRequest.all("log").between(
                    Instant.parse("2027-01-01T00:00:00Z"), Instant.parse("2027-01-01T00:00:01Z"))));
            assertEquals(List.of("m2", "m3"), texts(store, ReadRequest.all("log").between(
                    Instant.parse("2026-12-31T23:59:59.5Z"), Instant.parse("2027-01-01T00:00:01Z"))));
        }
    }

    @Test
    void intervalAndNeverPoliciesAcknowledgeAfterCloseAndForceOnTheirSchedule() throws Exception {
        for (FlushPolicy policy : List.of(FlushPolicy.interval(Duration.ofMillis(100)), FlushPolicy.never())) {
            Path root = freshDir("append-read-policy-" + policy.mode());
            ManualTimeSource time = StoreFixture.clock();
            try (FileBagStore store = FileBagStore.open(config(root).flushPolicy(policy).build(), time)) {
                List<CompletableFuture<Appended>> fs = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    fs.add(store.appendAsync(AppendRequest.of("log", List.of(), bytes("p" + i))));
                }
                for (CompletableFuture<Appended> f : fs) {
                    f.get();
                }
                assertEquals(0, store.stats().forces(), "acknowledged without forcing");
                assertEquals(20, texts(store, ReadRequest.all("log")).size());
                // Only once the committer waits for work does the flush need the wake (a busy one takes it anyway).
                awaitIdleCommitter("log");
                time.advance(Duration.ofMillis(150));
                if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
                    // The interval flush runs on the committer, which is woken for it, with no append to wake it.
                    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
                    while (store.stats().forces() == 0 && System.nanoTime() < until) {
                        Thread.sleep(5);
                    }
                    assertEquals(1, store.stats().forces(), "the idle committer forced on its schedule");
                }
                // One more append orders us after the interval flush.
                store.append(AppendRequest.of("log", List.of(), bytes("last")));
                long forced = store.stats().forces();
                if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
                    assertTrue(forced >= 1, "the interval policy forces on its schedule");
                } else {
                    assertEquals(0, forced, "the never policy does not force");
                }
                // The next interval: the flush was scheduled again, and forces what was written since.
                time.advance(Duration.ofMillis(150));
                store.append(AppendRequest.of("log", List.of(), bytes("after")));
                if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
                    assertTrue(store.stats().forces() > forced, "the interval policy forces again one interval later");
                } else {
                    assertEquals(0, store.stats().forces(), "the never policy does not force");
                }
                assertEquals(22, texts(store, ReadRequest.all("log")).size());
            }
        }
    }

    /** Waits until the committer thread of {@code log} waits for work in {@code Appender.take}. */
    private static void awaitIdleCommitter(String log) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
        while (System.nanoTime() < until) {
            for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                if (e.getKey().getName().equals("leasehold-bag-" + log)
                        && Arrays.stream(e.getValue()).anyMatch(f -> f.getMethodName().equals("take"))
                        && Arrays.stream(e.getValue()).anyMatch(f -> f.getMethodName().equals("awaitUninterruptibly"))) {
                    return;
                }
            }
            Thread.sleep(1);
        }
        throw new AssertionError("the committer of log '" + log + "' did not go idle within 8 s");
    }

    @Test
    void appendedTimestampIsInsideTheBucketItNames() throws Exception {
        Path root = freshDir("append-read-bucket");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).bucketWidth(Duration.ofMillis(100)).grace(
                Duration.ofMillis(300)).maxClockError(Duration.ofMillis(50)).build(), time)) {
            for (int i = 0; i < 10; i++) {
                Appended a = store.append(req("log", List.of(), "x"));
                long t = Micros.of(a.timestamp());
                long b = Micros.of(a.bucket());
                assertTrue(b <= t && t < b + 100_000, a.toString());
                time.advance(Duration.ofMillis(37));
            }
        }
    }
}
