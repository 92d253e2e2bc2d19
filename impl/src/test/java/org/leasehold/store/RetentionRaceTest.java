package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.ReadRequest;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Retention removing bucket directories ({@code rmdir}) while readers read: reader threads in this process race a
 * retention run of another store (threads) and of a child process (processes); every read, whenever it began, returns
 * exactly the messages it returned before. A seal asked for by hand over the retired range recreates the directories
 * (empty, sealed) and changes no read.
 */
class RetentionRaceTest {
    private static final String LOG = "log";
    private static final Duration DELAY = Duration.ofSeconds(30);
    private static final Duration ERROR = Duration.ofMillis(50);

    /** Ten seconds of appends under acct/0..3 (100 ms buckets, 1 s segments), every bucket sealed; the clock an hour later. */
    private static void build(FileBagStore store, ManualTimeSource time) throws Exception {
        for (int i = 0; i < 400; i++) {
            store.append(req(LOG, List.of(lease("acct/" + (i % 4), 1)), "m" + i));
            time.advance(Duration.ofMillis(25));
        }
        Instant end = time.now();
        time.set(end.plusSeconds(1));
        store.sealThrough(LOG, T0, end.plusMillis(100));
        time.set(T0.plusSeconds(3_600));
    }

    private static List<Path> timeDirs(Path logDir) throws IOException {
        try (Stream<Path> s = Files.walk(logDir)) {
            return s.filter(p -> Files.isDirectory(p) && p.getFileName().toString().matches("[0-9]{2}|[0-9]{4}|"
                    + "[0-9]{2}\\.[0-9]{6}")).toList();
        }
    }

    /** Readers that read {@code reads} again and again until {@code stop}, then once more, each read checked. */
    private static final class Readers {
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicInteger done = new AtomicInteger();
        final List<CompletableFuture<String>> running = new ArrayList<>();

        Readers(FileBagStore store, List<ReadRequest> reads, int threads) {
            List<SegmentsRandomizedTest.Outcome> expected = new ArrayList<>();
            for (ReadRequest r : reads) {
                expected.add(SegmentsRandomizedTest.read(store, r));
            }
            for (int t = 0; t < threads; t++) {
                int k = t;
                running.add(CompletableFuture.supplyAsync(() -> {
                    boolean last = false;
                    for (int i = k; !last; i++) {
                        last = stop.get();
                        ReadRequest r = reads.get(i % reads.size());
                        SegmentsRandomizedTest.Outcome got = SegmentsRandomizedTest.read(store, r);
                        SegmentsRandomizedTest.Outcome want = expected.get(i % reads.size());
                        if (got.failure() != null) {
                            return got.failure();
                        }
                        if (!got.messages().equals(want.messages()) || !got.problems().equals(want.problems())) {
                            return "read " + r + " returned " + got.messages().size() + " messages, not "
                                    + want.messages().size();
                        }
                        done.incrementAndGet();
                    }
                    return null;
                }));
            }
        }

        void finish() throws Exception {
            stop.set(true);
            for (CompletableFuture<String> f : running) {
                assertNull(f.get(120, TimeUnit.SECONDS), "a racing read");
            }
            assertTrue(done.get() >= running.size() * 2, "reads done: " + done.get());
        }
    }

    private static List<ReadRequest> reads() {
        ReadRequest all = ReadRequest.all(LOG);
        return List.of(all, all.underAnyOf(Set.of("acct/1")), all.between(T0.plusMillis(2_250), T0.plusMillis(7_700)),
                all.underAnyOf(Set.of("acct/0", "acct/3")).sealedOnly());
    }

    @Test
    void readerThreadsRacingRetentionThatRemovesDirectoriesReadTheSameMessages() throws Exception {
        Path root = freshDir("retention-rmdir-threads");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time);
                FileBagStore retiring = FileBagStore.open(SegmentsRandomizedTest.config(root, "r")
                        .removeCompactedBuckets(true).retentionDelay(DELAY).build(), time)) {
            build(store, time);
            int dirs = SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size();
            Readers readers = new Readers(store, reads(), 3);
            retiring.compact(LOG);
            time.advance(DELAY.plus(ERROR));
            assertEquals(dirs, retiring.compact(LOG).bucketsRemoved());
            readers.finish();
            assertEquals(List.of(), timeDirs(root.resolve(LOG)), "every bucket and time directory is gone");
            try (StoreReader reader = StoreReader.open(root, time)) {
                LogSurvey survey = reader.survey(LOG, LogGeometry.MIN_MICROS, LogGeometry.MAX_MICROS, time.nowMicros());
                assertEquals(0, survey.buckets(), "removed buckets are not counted: " + survey);
            }
        }
    }

    @Test
    void readerThreadsRacingAChildProcessThatRetiresTheLogReadTheSameMessages() throws Exception {
        Path root = freshDir("retention-rmdir-process");
        Path locks = root.resolveSibling("retention-rmdir-process-locks");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            build(store, time);
            int dirs = SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size();
            try (Children.Child child = Children.start(root.resolveSibling("retention-rmdir-process.err"), "retire",
                    root.toString(), locks.toString(), LOG, Long.toString(Micros.of(time.now())),
                    Long.toString(DELAY.toMillis()))) {
                assertTrue(child.awaitCount("READY"::equals, 1, 60_000), "the child started");
                Readers readers = new Readers(store, reads(), 2);
                child.tell("go");
                assertTrue(child.awaitCount(l -> l.startsWith("DONE "), 1, 120_000), "the child retired the log");
                readers.finish();
                assertTrue(child.lines().stream().anyMatch(l -> l.startsWith("DONE ") && l.endsWith(" " + dirs)),
                        "every bucket removed: " + child.lines());
            }
            assertEquals(List.of(), timeDirs(root.resolve(LOG)), "every bucket and time directory is gone");
        }
    }

    @Test
    void aSealAskedForByHandOverARetiredRangeRecreatesEmptyBucketsAndChangesNoRead() throws Exception {
        Path root = freshDir("retention-rmdir-reseal");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w")
                .removeCompactedBuckets(true).retentionDelay(DELAY).build(), time)) {
            build(store, time);
            List<SegmentsRandomizedTest.Outcome> before = new ArrayList<>();
            for (ReadRequest r : reads()) {
                before.add(SegmentsRandomizedTest.read(store, r));
            }
            store.compact(LOG);
            time.advance(DELAY.plus(ERROR));
            assertTrue(store.compact(LOG).bucketsRemoved() > 0);
            assertEquals(List.of(), timeDirs(root.resolve(LOG)));
            // A late sealer asked to seal part of the retired range: it creates the directories again, sealed empty.
            assertEquals(10, store.sealThrough(LOG, T0.plusSeconds(2), T0.plusSeconds(3)).buckets().size());
            assertEquals(10, SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size());
            try (StoreReader reader = StoreReader.open(root, time)) {
                assertEquals(10, reader.survey(LOG, LogGeometry.MIN_MICROS, LogGeometry.MAX_MICROS,
                        time.nowMicros()).sealedBuckets(), "the buckets sealed by hand are counted");
            }
            for (int i = 0; i < reads().size(); i++) {
                SegmentsRandomizedTest.assertSame(before.get(i), SegmentsRandomizedTest.read(store, reads().get(i)),
                        "after the seal by hand: " + reads().get(i));
            }
            assertEquals(0, store.compact(LOG).bucketsRemoved(), "their lock files list no file: kept");
        }
    }
}
