package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Retention (B11, first part): off by default, nothing is removed; on, a segment's buckets are emptied only once the
 * retention delay plus the clock error has passed since the segment was first seen published, only those it includes,
 * and never when the segment is damaged; a read that listed the segments before publication and finds its buckets
 * gone (before it lists a bucket, or between listing it and opening its files) continues from the segment and
 * returns exactly what it returned before.
 */
class RetentionTest {
    private static final String LOG = "log";
    private static final Duration DELAY = Duration.ofSeconds(30);
    /** The clock error of the test logs (SegmentsRandomizedTest.config). */
    private static final Duration ERROR = Duration.ofMillis(50);

    private static BagStoreConfig.Builder retaining(Path root, String writer) {
        return SegmentsRandomizedTest.config(root, writer).removeCompactedBuckets(true).retentionDelay(DELAY);
    }

    /** Four seconds of appends under acct/0..3, every bucket sealed; the clock an hour later. */
    private static void build(FileBagStore store, ManualTimeSource time) throws Exception {
        for (int i = 0; i < 80; i++) {
            store.append(req(LOG, List.of(lease("acct/" + (i % 4), 1)), "m" + i));
            time.advance(Duration.ofMillis(50));
        }
        Instant end = time.now();
        time.set(end.plusSeconds(1));
        store.sealThrough(LOG, T0, end.plusMillis(100));
        time.set(T0.plusSeconds(3_600));
    }

    /** Every file under the log's bucket directories, by path, with its size. */
    private static Map<String, Long> bucketFiles(Path root) throws IOException {
        Map<String, Long> m = new TreeMap<>();
        Path logDir = root.resolve(LOG);
        for (Path d : SegmentsRandomizedTest.bucketDirs(logDir)) {
            try (Stream<Path> s = Files.list(d)) {
                for (Path f : s.toList()) {
                    m.put(logDir.relativize(f).toString(), Files.size(f));
                }
            }
        }
        return m;
    }

    private static List<Path> segments(Path root) throws IOException {
        try (Stream<Path> s = Files.list(root.resolve(LOG).resolve(Compactor.SEGMENTS))) {
            return s.filter(p -> SegmentFile.parseName(p.getFileName().toString()) != null).sorted().toList();
        }
    }

    private static SegmentsRandomizedTest.Outcome drain(MessageStream s) throws Exception {
        List<org.leasehold.bag.Message> out = new ArrayList<>();
        try (s) {
            org.leasehold.bag.Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
            return new SegmentsRandomizedTest.Outcome(out, s.problems(), null);
        }
    }

    @Test
    void offByDefaultNothingIsRemoved() throws Exception {
        assertEquals(false, BagStoreConfig.defaults(Path.of("target")).removeCompactedBuckets());
        assertEquals(Duration.ofHours(1), BagStoreConfig.defaults(Path.of("target")).retentionDelay());
        Path root = freshDir("retention-off");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            build(store, time);
            Map<String, Long> files = bucketFiles(root);
            assertTrue(files.size() > 100, files.toString());
            assertEquals(5, store.compact(LOG).published().size());
            time.advance(Duration.ofDays(30));
            CompactionReport r = store.compact(LOG);
            assertEquals(0, r.bucketsRemoved());
            assertEquals(files, bucketFiles(root), "every bucket file is still there");
            try (Stream<Path> s = Files.list(root.resolve(LOG).resolve(Compactor.SEGMENTS))) {
                assertTrue(s.noneMatch(p -> p.getFileName().toString().contains(Retention.MARK)), "no mark written");
            }
        }
    }

    @Test
    void bucketsAreRemovedOnlyOnceTheDelayHasPassedSinceTheSegmentWasFirstSeen() throws Exception {
        Path root = freshDir("retention-delay");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(retaining(root, "w").build(), time)) {
            build(store, time);
            ReadRequest all = ReadRequest.all(LOG);
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, all);
            Map<String, Long> files = bucketFiles(root);
            int dirs = SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size();
            // Published and first seen in the same run: marked, nothing removed, although its range ended an hour ago.
            CompactionReport r = store.compact(LOG);
            assertEquals(5, r.published().size());
            assertEquals(0, r.bucketsRemoved());
            Instant seen = time.now();
            String mark = Files.readString(root.resolve(LOG).resolve(Compactor.SEGMENTS).resolve(
                    Retention.markName(Micros.of(T0), Micros.of(T0.plusSeconds(1)))));
            assertEquals("leasehold-published 1\nsegment " + SegmentFile.name(Micros.of(T0), Micros.of(T0.plusSeconds(1)))
                    + "\nseen-by w\nseen-at " + Micros.of(seen) + "\n", mark);
            time.set(seen.plus(DELAY).plus(ERROR).minusNanos(1_000));
            assertEquals(0, store.compact(LOG).bucketsRemoved(), "one microsecond early");
            assertEquals(files, bucketFiles(root));
            time.set(seen.plus(DELAY).plus(ERROR));
            r = store.compact(LOG);
            assertEquals(dirs, r.bucketsRemoved(), r.toString());
            assertEquals(Map.of(), bucketFiles(root), "every bucket's files are gone");
            assertEquals(0, SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size(), "and their directories");
            try (Stream<Path> s = Files.list(root.resolve(LOG))) {
                assertEquals(List.of(), s.map(p -> p.getFileName().toString()).filter(n -> n.matches("[0-9]{4}"))
                        .toList(), "the empty time directories above them too");
            }
            SegmentsRandomizedTest.assertSame(before, SegmentsRandomizedTest.read(store, all), "after retention");
            for (String n : List.of("acct/0", "acct/3")) {
                ReadRequest by = all.underAnyOf(Set.of(n));
                assertEquals(20, SegmentsRandomizedTest.read(store, by).messages().size(), n);
            }
            assertEquals(0, store.compact(LOG).bucketsRemoved(), "nothing left to remove");
        }
    }

    @Test
    void aDamagedSegmentKeepsItsBuckets() throws Exception {
        Path root = freshDir("retention-damaged");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(retaining(root, "w").build(), time)) {
            build(store, time);
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG));
            store.compact(LOG);
            List<Path> segs = segments(root);
            // One byte of a frame deep inside the second segment's entries, one of the third's index.
            Path entries = segs.get(1);
            long indexAt = SegmentFile.trailer(tail(entries), Files.size(entries)).indexOffset();
            flip(entries, indexAt - 5);
            Path index = segs.get(2);
            flip(index, SegmentFile.trailer(tail(index), Files.size(index)).indexOffset() + 6);
            Map<String, Long> files = bucketFiles(root);
            time.advance(DELAY.plus(ERROR));
            long outside = SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).stream().map(d -> bucketOf(root
                    .resolve(LOG).relativize(d).resolve("x").toString())).filter(b -> b.isBefore(T0.plusSeconds(1))
                    || !b.isBefore(T0.plusSeconds(3))).count();
            CompactionReport r = store.compact(LOG);
            assertEquals(outside, r.bucketsRemoved(), r.toString());
            assertTrue(outside >= 20, "buckets outside the damaged segments: " + outside);
            Map<String, Long> left = bucketFiles(root);
            assertNotEquals(Map.of(), left);
            for (Map.Entry<String, Long> e : files.entrySet()) {
                Instant bucket = bucketOf(e.getKey());
                boolean kept = !bucket.isBefore(T0.plusSeconds(1)) && bucket.isBefore(T0.plusSeconds(3));
                assertEquals(kept ? e.getValue() : null, left.get(e.getKey()), e.getKey());
            }
            SegmentsRandomizedTest.assertSame(before, SegmentsRandomizedTest.read(store, ReadRequest.all(LOG)),
                    "damaged segments are read from their buckets");
        }
    }

    @Test
    void aSegmentDamagedAfterRetentionRemovedItsBucketsIsReportedNeverSilent() throws Exception {
        Path root = freshDir("retention-damaged-after");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(retaining(root, "w").build(), time)) {
            build(store, time);
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG));
            store.compact(LOG);
            time.advance(DELAY.plus(ERROR));
            assertTrue(store.compact(LOG).bucketsRemoved() > 0);
            Path damaged = segments(root).get(1);
            // Bytes all through the segment's entries: the frames they hit have no other copy.
            long entriesEnd = SegmentFile.trailer(tail(damaged), Files.size(damaged)).indexOffset();
            for (long at = entriesEnd / 4; at < entriesEnd; at += 97) {
                flip(damaged, at);
            }

            String failure = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG)).failure();
            assertTrue(failure != null && failure.startsWith("CorruptRecordException: unreadable bucket ")
                    && failure.contains("retention removed the bucket's files"),
                    "a strict read fails where the only copy of messages is damaged: " + failure);
            SegmentsRandomizedTest.Outcome skipping = drain(store.read(ReadRequest.all(LOG).skippingUnreadable()));
            assertTrue(skipping.messages().size() < before.messages().size(), "messages were lost with the segment: "
                    + skipping.messages().size() + " of " + before.messages().size() + ", " + skipping.problems());
            assertTrue(before.messages().containsAll(skipping.messages()), "nothing else changes");
            assertTrue(skipping.problems().stream().anyMatch(p -> p.detail().contains("retention removed the bucket's "
                    + "files")), "each lost bucket is reported: " + skipping.problems());
        }
    }

    private static Instant bucketOf(String relative) {
        String[] p = relative.split("/");
        return Instant.parse(p[0] + "-" + p[1] + "-" + p[2] + "T" + p[3] + ":" + p[4] + ":" + p[5] + "Z");
    }

    private static byte[] tail(Path segment) throws IOException {
        byte[] a = Files.readAllBytes(segment);
        return java.util.Arrays.copyOfRange(a, a.length - SegmentFile.TRAILER, a.length);
    }

    private static void flip(Path file, long at) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x10)).rewind();
            ch.write(one, at);
        }
    }

    @Test
    void aReadThatListedNoSegmentContinuesFromTheSegmentWhenItsBucketsAreGone() throws Exception {
        Path root = freshDir("retention-read-before");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(retaining(root, "w").build(), time)) {
            build(store, time);
            ReadRequest all = ReadRequest.all(LOG);
            ReadRequest one = all.underAnyOf(Set.of("acct/2")).sealedOnly();
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, all);
            SegmentsRandomizedTest.Outcome oneBefore = SegmentsRandomizedTest.read(store, one);
            // Started before any segment exists: they list no segment and will walk the bucket directories.
            MessageStream early = store.read(all);
            MessageStream earlyOne = store.read(one);
            MessageStream partial = store.read(all);
            assertEquals(before.messages().get(0), partial.next());
            store.compact(LOG);
            time.advance(DELAY.plus(ERROR));
            assertEquals(SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size(), store.compact(LOG)
                    .bucketsRemoved());
            SegmentsRandomizedTest.assertSame(before, drain(early), "a read started before retention");
            SegmentsRandomizedTest.assertSame(oneBefore, drain(earlyOne), "by name");
            SegmentsRandomizedTest.Outcome rest = drain(partial);
            assertEquals(before.messages().subList(1, before.messages().size()), rest.messages(),
                    "a read in its first bucket when the buckets went");
        }
    }

    @Test
    void aReadRacingRetentionBetweenListingABucketAndOpeningItLosesNothing() throws Exception {
        Path root = freshDir("retention-race");
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore store = FileBagStore.open(retaining(root, "w").build(), time, hooks);
                FileBagStore other = FileBagStore.open(retaining(root, "o").build(), time)) {
            build(store, time);
            ReadRequest all = ReadRequest.all(LOG).between(T0.plusMillis(1_250), null);
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, all);
            assertTrue(before.messages().size() > 40);
            CountDownLatch listed = new CountDownLatch(1);
            CountDownLatch removed = new CountDownLatch(1);
            hooks.bucketListed.set(() -> {
                listed.countDown();
                try {
                    assertTrue(removed.await(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            // The reader lists the segments (none), walks to its first bucket, lists it (sealed, its files there),
            // and stops; another process publishes, waits out the delay and empties every bucket; the reader goes on.
            CompletableFuture<SegmentsRandomizedTest.Outcome> reader = CompletableFuture.supplyAsync(
                    () -> SegmentsRandomizedTest.read(store, all));
            assertTrue(listed.await(30, TimeUnit.SECONDS));
            other.compact(LOG);
            time.advance(DELAY.plus(ERROR));
            assertEquals(SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size(), other.compact(LOG)
                    .bucketsRemoved());
            removed.countDown();
            SegmentsRandomizedTest.Outcome after = reader.get(30, TimeUnit.SECONDS);
            assertNull(after.failure());
            SegmentsRandomizedTest.assertSame(before, after, "the raced read");
        }
    }

    @Test
    void theDelayIsChecked() {
        Path root = Path.of("target");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .retentionDelay(Duration.ofMillis(500)).build());
        assertEquals("retentionDelay is PT0.5S; use 1 s to 365 days, longer than any read may take (a read that listed "
                + "the segments before one was published may open its buckets until then)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root).retentionDelay(null).build());
        assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root).retentionDelay(
                Duration.ofDays(366)).build());
    }
}
