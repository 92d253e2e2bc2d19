package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.SealReport;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.ManualTimeSource;

/**
 * The write rule with the default geometry (1 s buckets, 2 s grace, 500 ms clock error): bucket [T0, T0+1 s) is on
 * time until T0+2.5 s and due for sealing at T0+3 s. Time is manual; hooks put the clock and other sealers exactly
 * where each case needs them.
 */
class WriteRuleTest {

    private static Path bucketDir(Path root, String log, Instant start) {
        return LogGeometry.bucketDir(root.resolve(log), org.leasehold.time.Micros.of(start));
    }

    @Test
    void theStoreChoosesTheFirstTimestampAboveEveryFloorAndNotBeforeNow() throws Exception {
        Path root = freshDir("rule-choose");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended a = store.append(req("log", List.of(lease("a", 1, T0.minusSeconds(5), T0.plusSeconds(5))), "a"));
            assertEquals(T0, a.timestamp());
            LeaseStamp ahead = lease("b", 1, T0.plusMillis(300), T0.plusSeconds(5));
            LeaseStamp behind = lease("c", 1, T0.minusSeconds(1), T0.plusSeconds(4));
            Appended b = store.append(req("log", List.of(behind, ahead), "b"));
            assertEquals(T0.plusMillis(300).plusNanos(1_000), b.timestamp(), "max floor + 1 µs, slightly in the future");

            LeaseStamp tooFar = lease("d", 1, T0.plusMillis(600), T0.plusSeconds(5));
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(tooFar), "d")));
            assertEquals(TimestampOutOfRangeException.Reason.FLOOR_AHEAD_OF_CLOCK, e.reason());
            assertEquals(T0.plusMillis(100), e.retryAt());
            assertTrue(e.getMessage().contains("'d'") && e.getMessage().contains("clock"), e.getMessage());
            assertEquals(List.of("a", "b"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void timestampsOutsideFloorAndDeadlineAreRefusedAndNothingIsWritten() throws Exception {
        Path root = freshDir("rule-range");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(), "kept"));
            LeaseStamp l = lease("x", 4, T0.minusMillis(100), T0.plusMillis(200));
            assertEquals(TimestampOutOfRangeException.Reason.NOT_ABOVE_FLOOR, assertThrows(
                    TimestampOutOfRangeException.class, () -> store.append(req("log", List.of(l), "f")
                            .at(T0.minusMillis(100)))).reason());
            assertEquals(TimestampOutOfRangeException.Reason.NOT_BELOW_DEADLINE, assertThrows(
                    TimestampOutOfRangeException.class, () -> store.append(req("log", List.of(l), "d")
                            .at(T0.plusMillis(200)))).reason());
            Appended ok = store.append(req("log", List.of(l), "inside").at(T0.plusMillis(199)));
            assertEquals(T0.plusMillis(199), ok.timestamp());
            LeaseStamp free = lease("y", 1, T0.minusSeconds(10), T0.plusSeconds(10));
            assertEquals(TimestampOutOfRangeException.Reason.IN_FUTURE, assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(free), "future").at(T0.plusMillis(501)))).reason());
            time.advance(Duration.ofMillis(200));
            TimestampOutOfRangeException over = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "over")));
            assertEquals(TimestampOutOfRangeException.Reason.NOT_BELOW_DEADLINE, over.reason());
            assertTrue(over.getMessage().contains("the lease is over"), over.getMessage());
            assertEquals(List.of("kept", "inside"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void writesWaitForWritableFrom() throws Exception {
        Path root = freshDir("rule-writable");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp l = new LeaseStamp("x", 2, T0.minusSeconds(1), T0.plusSeconds(9), T0.plusSeconds(1), null, null);
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "early")));
            assertEquals(TimestampOutOfRangeException.Reason.NOT_YET_WRITABLE, e.reason());
            assertEquals(T0.plusSeconds(1), e.retryAt());
            time.set(e.retryAt());
            assertEquals(T0.plusSeconds(1), store.append(req("log", List.of(l), "on time")).timestamp());
            assertEquals(List.of("on time"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void bucketsPastGraceOrSealedByAFasterClockRefuseWrites() throws Exception {
        Path root = freshDir("rule-sealed");
        ManualTimeSource time = StoreFixture.clock();
        ManualTimeSource fast = new ManualTimeSource(T0.plusSeconds(3));
        try (FileBagStore store = FileBagStore.open(config(root).build(), time);
                FileBagStore other = FileBagStore.open(config(root).build(), fast)) {
            store.append(req("log", List.of(), "first"));
            SealReport r = other.sealThrough("log", T0, T0.plusMillis(1));
            assertEquals(SealReport.Outcome.SEALED, r.buckets().get(0).outcome());
            // This clock is 400 ms behind the sealer's view: inside the window where the bucket must be checked.
            time.set(T0.plusMillis(2_600));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "late").at(T0.plusMillis(900))));
            assertEquals(BucketSealedException.Reason.SEALED, e.reason());
            assertEquals("log", e.log());
            assertEquals(T0, e.bucketStart());
            time.set(T0.plusSeconds(3));
            BucketSealedException past = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "later").at(T0.plusMillis(950))));
            assertEquals(BucketSealedException.Reason.PAST_GRACE, past.reason());
            assertEquals(List.of("first"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void aNewDataFileChecksForPrelockAndStaysEmpty() throws Exception {
        Path root = freshDir("rule-prelock");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(), "first"));
            // A sealer (fast clock) has declared its intent on the next bucket; this writer's clock says it is current.
            Path next = bucketDir(root, "log", T0.plusSeconds(1));
            Files.createDirectories(next);
            Files.createFile(next.resolve(Names.PRELOCK));
            time.set(T0.plusMillis(1_100));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "refused")));
            assertEquals(BucketSealedException.Reason.SEALED, e.reason());
            Path created = next.resolve(store.writerId() + ".0.data");
            assertTrue(Files.exists(created), "the data file was created exclusively before the prelock check");
            assertEquals(0, Files.size(created), "and nothing was written to it");
            assertEquals(List.of("first"), texts(store, ReadRequest.all("log")));
        }
    }

    /** Two stores on one manual clock: the writer under test (with hooks) and another sealer. */
    private record Pair(FileBagStore writer, FileBagStore sealer, ScriptedHooks hooks, ManualTimeSource time, Path root)
            implements AutoCloseable {
        static Pair open(String name) throws IOException, BagStoreException {
            Path root = freshDir(name);
            ManualTimeSource time = StoreFixture.clock();
            ScriptedHooks hooks = new ScriptedHooks();
            FileBagStore w = FileBagStore.open(config(root).build(), time, hooks);
            FileBagStore s = FileBagStore.open(config(root).build(), time);
            return new Pair(w, s, hooks, time, root);
        }

        void sealFirstBucket() {
            try {
                sealer.sealThrough("log", T0, T0.plusMillis(1));
            } catch (BagStoreException e) {
                throw new IllegalStateException(e);
            }
        }

        LogChecker.Result check() throws IOException {
            return LogChecker.check(root.resolve("log"));
        }

        @Override
        public void close() {
            writer.close();
            sealer.close();
        }
    }

    @Test
    void aWriteThatLandsAfterTheLockIsRefusedAndNeverRead() throws Exception {
        try (Pair p = Pair.open("rule-late-after-lock")) {
            Appended early = p.writer.append(req("log", List.of(), "early"));
            p.hooks.beforeWrite.set(() -> {
                p.time.set(T0.plusMillis(3_100));
                p.sealFirstBucket();
            });
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> p.writer.append(req("log", List.of(), "late").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.LATE, e.reason());
            assertTrue(e.getMessage().contains("never be readable"), e.getMessage());
            assertEquals(List.of("early"), texts(p.writer, ReadRequest.all("log")));
            LogChecker.Result c = p.check();
            assertEquals(List.of(), c.violations());
            LogChecker.Bucket b = c.bucket(org.leasehold.time.Micros.of(T0));
            long listed = b.lock().sizes().get(early.file());
            assertEquals(early.length(), listed);
            assertTrue(b.fileSizes().get(early.file()) > listed, "the refused bytes are on disk, past the lock's size");
            assertEquals(List.of("early"), c.ordered().stream().map(LogChecker.Msg::text).toList());
        }
    }

    @Test
    void aLateWriterThatFindsOnlyAPrelockHelpsSealWithoutItsOwnFrames() throws Exception {
        try (Pair p = Pair.open("rule-late-prelock")) {
            Appended early = p.writer.append(req("log", List.of(), "early"));
            Path dir = bucketDir(p.root, "log", T0);
            p.hooks.beforeWrite.set(() -> {
                p.time.set(T0.plusMillis(2_700));
                try {
                    Files.createFile(dir.resolve(Names.PRELOCK));
                } catch (IOException ex) {
                    throw new UncheckedIOException(ex);
                }
            });
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> p.writer.append(req("log", List.of(), "late").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.LATE, e.reason());
            LogChecker.Result c = p.check();
            assertEquals(List.of(), c.violations());
            LogChecker.Bucket b = c.bucket(org.leasehold.time.Micros.of(T0));
            assertTrue(b.sealed(), "the late writer finished the sealing it found begun");
            assertEquals(p.writer.writerId(), b.lock().sealer());
            assertEquals(early.length(), (long) b.lock().sizes().get(early.file()));
            assertEquals(List.of("early"), texts(p.sealer, ReadRequest.all("log")));
        }
    }

    @Test
    void aWriteLateByLessThanTheClockErrorWithNoSealerYetIsAcknowledgedAndSealedIn() throws Exception {
        try (Pair p = Pair.open("rule-late-window")) {
            p.writer.append(req("log", List.of(), "early"));
            p.hooks.beforeWrite.set(() -> p.time.set(T0.plusMillis(2_700)));
            Appended late = p.writer.append(req("log", List.of(), "window").at(T0.plusMillis(500)));
            assertEquals(1, p.writer.stats().lateChecks());
            p.time.set(T0.plusSeconds(3));
            p.sealFirstBucket();
            assertEquals(List.of("early", "window"), texts(p.sealer, ReadRequest.all("log")));
            LogChecker.Bucket b = p.check().bucket(org.leasehold.time.Micros.of(T0));
            assertEquals(late.offset() + late.length(), (long) b.lock().sizes().get(late.file()));
        }
    }

    @Test
    void aWriteFinishedAfterTheBucketWasDueSealsItAndIsRefused() throws Exception {
        try (Pair p = Pair.open("rule-late-due")) {
            Appended early = p.writer.append(req("log", List.of(), "early"));
            p.hooks.beforeWrite.set(() -> p.time.set(T0.plusMillis(3_500)));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> p.writer.append(req("log", List.of(), "paused").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.LATE, e.reason());
            LogChecker.Bucket b = p.check().bucket(org.leasehold.time.Micros.of(T0));
            assertTrue(b.sealed());
            assertEquals(early.length(), (long) b.lock().sizes().get(early.file()));
            assertEquals(List.of("early"), texts(p.sealer, ReadRequest.all("log")));
        }
    }

    @Test
    void aLateWriteAnotherSealerListedIsAcknowledged() throws Exception {
        try (Pair p = Pair.open("rule-late-included")) {
            p.writer.append(req("log", List.of(), "early"));
            p.hooks.afterWrite.set(() -> {
                p.time.set(T0.plusMillis(3_100));
                p.sealFirstBucket();
            });
            Appended late = p.writer.append(req("log", List.of(), "included").at(T0.plusMillis(500)));
            assertEquals(T0.plusMillis(500), late.timestamp());
            assertEquals(List.of("early", "included"), texts(p.sealer, ReadRequest.all("log")));
        }
    }

    @Test
    void aSuccessorOfAnExpiredLeaseSealsThePredecessorsBucketsAndAPausedPredecessorIsRefused() throws Exception {
        Path root = freshDir("rule-successor");
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore pred = FileBagStore.open(config(root).build(), time, hooks);
                FileBagStore succ = FileBagStore.open(config(root).build(), time)) {
            Instant deadline = T0.plusMillis(1_500);
            LeaseStamp mine = lease("acct/7", 1, T0.minusSeconds(1), deadline);
            pred.append(req("log", List.of(mine), "before pause"));
            time.set(T0.plusMillis(1_200));
            CountDownLatch paused = new CountDownLatch(1);
            CountDownLatch resume = new CountDownLatch(1);
            hooks.afterEncode.set(() -> {
                paused.countDown();
                try {
                    resume.await();
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
            });
            CompletableFuture<Appended> late = CompletableFuture.supplyAsync(() -> {
                try {
                    return pred.append(req("log", List.of(mine), "after pause"));
                } catch (BagStoreException ex) {
                    throw new java.util.concurrent.CompletionException(ex);
                }
            });
            paused.await();

            // The lease expired at its deadline; the successor's grant says so.
            LeaseStamp next = new LeaseStamp("acct/7", 2, deadline, T0.plusSeconds(12), deadline.plusSeconds(2),
                    deadline, null);
            Instant ready = succ.successorWritableFrom("log", deadline);
            assertEquals(T0.plusMillis(4_500), ready, "end of the deadline's bucket + grace + clock error");
            time.set(T0.plusMillis(3_600));
            TimestampOutOfRangeException early = assertThrows(TimestampOutOfRangeException.class,
                    () -> succ.append(req("log", List.of(next), "too early")));
            assertEquals(TimestampOutOfRangeException.Reason.NOT_YET_WRITABLE, early.reason());
            assertEquals(ready, early.retryAt());
            assertThrows(BucketNotDueException.class, () -> succ.sealForSuccessor("log", deadline));

            time.set(ready);
            SealReport report = succ.sealForSuccessor("log", deadline);
            assertEquals(13, report.buckets().size(), "from deadline - (max lease + grace + clock error) to the deadline");
            assertEquals(deadline.minusMillis(12_500).truncatedTo(java.time.temporal.ChronoUnit.SECONDS),
                    report.buckets().get(0).bucket());
            Appended s = succ.append(req("log", List.of(next), "successor"));
            assertTrue(s.timestamp().isAfter(deadline));

            resume.countDown();
            java.util.concurrent.ExecutionException ex = assertThrows(java.util.concurrent.ExecutionException.class,
                    late::get);
            BucketSealedException refused = (BucketSealedException) ex.getCause();
            assertEquals(BucketSealedException.Reason.PAST_GRACE, refused.reason());

            assertEquals(List.of("before pause", "successor"), texts(succ, ReadRequest.all("log")));
            LogChecker.Result c = LogChecker.check(root.resolve("log"));
            assertEquals(List.of(), c.violations());
            long sealedBuckets = c.buckets().stream().filter(LogChecker.Bucket::sealed).count();
            assertEquals(13, sealedBuckets, "empty buckets were created and sealed so nothing can land there later");
        }
    }
}
