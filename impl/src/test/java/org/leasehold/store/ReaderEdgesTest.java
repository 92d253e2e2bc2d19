package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.flip;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.text;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * What a reader returns and reports at the edges its other tests leave open: damage at a file's first byte and to
 * its end, a smallest frame as the last thing after damage, a last frame failing its checksum, a timestamp going
 * back with a frame after it, damage and a zero tail past the first chunk, a header after damage whose length runs
 * past the end; a message at the epoch, a closed stream; segments published after a read began, a segment damaged
 * inside a bucket whose files are gone, a segment with a damaged index whose buckets retention was removing; a range
 * read from a segment at its two instants, and a sealed bucket whose lock file vanishes after it was listed.
 */
class ReaderEdgesTest {
    private static final String LOG = "log";

    private record Read(List<String> texts, List<ReadProblem> problems) {
    }

    private static Read read(MessageStream s) throws Exception {
        List<String> got = new ArrayList<>();
        try (s) {
            Message m;
            while ((m = s.next()) != null) {
                got.add(text(m));
            }
            return new Read(got, s.problems());
        }
    }

    private static Read read(FileBagStore store, ReadRequest r) throws Exception {
        return read(store.read(r));
    }

    private static byte[] frame(Instant t, String payload) {
        List<byte[]> payloads = List.of(payload.getBytes(StandardCharsets.UTF_8));
        int size = (int) Frames.size(List.of(), new byte[0][], payloads);
        return Frames.encode(Micros.of(t), List.of(), new byte[0][], payloads, size).array();
    }

    private static void assertProblem(ReadProblem p, ReadProblem.Kind kind, long offset, long end) {
        assertEquals(kind, p.kind(), p::toString);
        assertEquals(offset, p.offset(), p::toString);
        assertEquals(end, p.end(), p::toString);
    }

    /** One data file in bucket T0 of a store with the defaults (1 s buckets), one frame per payload, 2 ms apart. */
    private static final class OneFile implements AutoCloseable {
        final ManualTimeSource time = StoreFixture.clock();
        final FileBagStore store;
        final Path file;
        final long[] offsets;

        OneFile(String name, String... payloads) throws Exception {
            Path root = freshDir(name);
            store = FileBagStore.open(config(root).build(), time);
            offsets = new long[payloads.length];
            Appended a = null;
            for (int i = 0; i < payloads.length; i++) {
                a = store.append(req(LOG, List.of(), payloads[i]));
                offsets[i] = a.offset();
                time.advance(Duration.ofMillis(2));
            }
            file = LogGeometry.bucketDir(root.resolve(LOG), Micros.of(T0)).resolve(a.file());
        }

        long size() throws Exception {
            return Files.size(file);
        }

        void append(byte[] bytes) throws Exception {
            Files.write(file, bytes, StandardOpenOption.APPEND);
        }

        void overwrite(long at, byte... bytes) throws Exception {
            StoreFixture.overwrite(file, at, bytes);
        }

        void cut(long size) throws Exception {
            StoreFixture.cut(file, size);
        }

        /** Seals bucket T0: its lock file lists the file's size now. */
        void seal() throws Exception {
            time.set(T0.plusSeconds(4));
            store.sealThrough(LOG, T0, T0.plusSeconds(1));
        }

        @Override
        public void close() {
            store.close();
        }
    }

    @Test
    void damageAtTheFilesFirstByteIsSkippedToTheSecondFrameAndGarbageToTheEndIsCountedInBytes() throws Exception {
        try (OneFile f = new OneFile("mutants-first-byte", "a", "b", "c", "d")) {
            long size = f.size();
            f.overwrite(0, (byte) 0x55);
            byte[] garbage = new byte[(int) (size - f.offsets[3])];
            Arrays.fill(garbage, (byte) 0x55);
            f.overwrite(f.offsets[3], garbage);
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(List.of("b", "c"), r.texts());
            assertEquals(2, r.problems().size(), r.problems()::toString);
            ReadProblem first = r.problems().get(0);
            assertProblem(first, ReadProblem.Kind.CORRUPT_RECORD, 0, f.offsets[1]);
            assertTrue(first.detail().contains(f.offsets[1] + " bytes were skipped, reading resumed at offset "
                    + f.offsets[1]), first::detail);
            ReadProblem rest = r.problems().get(1);
            assertProblem(rest, ReadProblem.Kind.CORRUPT_RECORD, f.offsets[3], size);
            assertTrue(rest.detail().contains("no valid frame follows, so the rest of the file ("
                    + (size - f.offsets[3]) + " bytes) was skipped"), rest::detail);
        }
    }

    @Test
    void aSmallestFrameEndingTheFileIsWhereReadingResumesAfterDamage() throws Exception {
        try (OneFile f = new OneFile("mutants-smallest-last", "a", "b")) {
            long tailAt = f.size();
            byte[] smallest = frame(T0.plusMillis(50), "");
            assertEquals(Frames.MIN_FRAME, smallest.length);
            f.append(smallest);
            f.overwrite(f.offsets[1], (byte) 0x55);
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(List.of("a", ""), r.texts());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, f.offsets[1], tailAt);
        }
    }

    @Test
    void aLastFrameFailingItsChecksumIsATornTailNotCorruption() throws Exception {
        try (OneFile f = new OneFile("mutants-last-checksum", "a", "bb")) {
            long size = f.size();
            f.overwrite(size - 1, (byte) 'x');
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG));
            assertEquals(List.of("a"), r.texts());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.TORN_TAIL, f.offsets[1], size);
            assertTrue(r.problems().get(0).detail().startsWith("the last frame ("), r.problems()::toString);
        }
    }

    @Test
    void aFrameWhoseTimestampGoesBackIsSkippedAloneAndTheFrameAfterItIsRead() throws Exception {
        try (OneFile f = new OneFile("mutants-back-then-on", "a")) {
            // "a" was written at T0, "a2" is dated half a second later, "back" before it and "later" after it.
            f.append(frame(T0.plusMillis(500), "a2"));
            long backAt = f.size();
            f.append(frame(T0.plusMillis(200), "back"));
            long laterAt = f.size();
            f.append(frame(T0.plusMillis(700), "later"));
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(List.of("a", "a2", "later"), r.texts());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, backAt, laterAt);
            assertTrue(r.problems().get(0).detail().contains("is below the previous frame's"), r.problems()::toString);
        }
    }

    @Test
    void twoFramesInARowFailingTheirChecksumsAreOneDamagedRange() throws Exception {
        try (OneFile f = new OneFile("mutants-two-checksums", "a", "bb", "cc", "d")) {
            f.overwrite(f.offsets[2] - 1, (byte) 'x');
            f.overwrite(f.offsets[3] - 1, (byte) 'x');
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(List.of("a", "d"), r.texts());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, f.offsets[1], f.offsets[3]);
        }
    }

    @Test
    void pastTheFirstChunkDamageIsSkippedToTheNextFrameAndAZeroTailIsTorn() throws Exception {
        int n = 100;
        String[] payloads = new String[n];
        for (int i = 0; i < n; i++) {
            payloads[i] = String.format("m-%03d", i) + "x".repeat(1_000);
        }
        try (OneFile f = new OneFile("mutants-past-first-chunk", payloads)) {
            long size = f.size();
            int k = 90;
            assertTrue(f.offsets[k] > FileCursor.BUFFER, "damage past the first chunk");
            f.overwrite(f.offsets[k], (byte) 0x55);
            f.append(new byte[100]);
            f.seal();

            Read r = read(f.store, ReadRequest.all(LOG).skippingUnreadable());
            List<String> expected = new ArrayList<>(List.of(payloads));
            expected.remove(k);
            assertEquals(expected, r.texts());
            assertEquals(2, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, f.offsets[k], f.offsets[k + 1]);
            assertProblem(r.problems().get(1), ReadProblem.Kind.TORN_TAIL, size, size + 100);
        }
    }

    @Test
    void aHeaderAfterDamageWhoseLengthRunsPastTheEndIsNoPlaceToResumeAndTheReadEnds() throws Exception {
        try (OneFile f = new OneFile("mutants-resync-past-end", "a", "b", "c".repeat(100))) {
            long cut = f.offsets[2] + 60;
            f.cut(cut);
            f.overwrite(f.offsets[1], (byte) 0x55);
            f.seal();

            Read r = assertTimeoutPreemptively(Duration.ofSeconds(60),
                    () -> read(f.store, ReadRequest.all(LOG).skippingUnreadable()));
            assertEquals(List.of("a"), r.texts());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, f.offsets[1], cut);
        }
    }

    @Test
    void aMessageWrittenAtTheEpochIsReadWithItsTimestamp() throws Exception {
        ManualTimeSource time = new ManualTimeSource(Instant.EPOCH);
        try (FileBagStore store = FileBagStore.open(config(freshDir("mutants-epoch")).build(), time)) {
            store.append(req(LOG, List.of(), "at the epoch"));
            List<Message> got = StoreFixture.readAll(store, ReadRequest.all(LOG));
            assertEquals(1, got.size());
            assertEquals(Instant.EPOCH, got.get(0).timestamp());
            assertEquals("at the epoch", text(got.get(0)));
        }
    }

    @Test
    void aClosedStreamRefusesNext() throws Exception {
        try (OneFile f = new OneFile("mutants-closed", "a", "b")) {
            MessageStream s = f.store.read(ReadRequest.all(LOG));
            assertEquals("a", text(s.next()));
            s.close();
            assertThrows(IllegalStateException.class, s::next);
            s.close();
            assertThrows(IllegalStateException.class, s::next);
        }
    }

    /** Appends one message every 100 ms for five seconds from T0 and seals them; the clock a second later. */
    private static List<String> fiveSeconds(FileBagStore store, ManualTimeSource time, String name) throws Exception {
        List<String> texts = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            time.set(T0.plusMillis(100 * i + 10));
            texts.add("m" + i);
            store.append(req(LOG, List.of(lease(name, 1)), "m" + i));
        }
        time.set(T0.plusSeconds(6));
        store.sealThrough(LOG, T0, T0.plusSeconds(5));
        return texts;
    }

    private static Path segment(Path root, Instant from) {
        return root.resolve(LOG).resolve(Compactor.SEGMENTS).resolve(SegmentFile.name(Micros.of(from),
                Micros.of(from.plusSeconds(1))));
    }

    @Test
    void aReadBegunBeforeSegmentsWerePublishedReadsTheRangesBeforeBetweenAndAfterThemOnce() throws Exception {
        Path root = freshDir("mutants-recut");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            List<String> all = fiveSeconds(store, time, "n");
            assertEquals(all, read(store, ReadRequest.all(LOG)).texts());
            // Listed no segment: it will walk the bucket directories, listing the segments again first.
            MessageStream early = store.read(ReadRequest.all(LOG));
            CompactionReport r = store.compact(LOG, Duration.between(T0.plusSeconds(3), time.now()));
            assertEquals(3, r.published().size(), r.toString());
            // No segment covers the first second (its buckets are read from their directories), as none covers
            // the last two.
            Files.delete(segment(root, T0));
            Read got = read(early);
            assertEquals(all, got.texts());
            assertEquals(List.of(), got.problems());
        }
    }

    @Test
    void aSegmentDamagedInsideABucketWhoseFilesAreGoneDeliversTheBucketsEarlierFrameOnceAndReportsTheBucket()
            throws Exception {
        Path root = freshDir("mutants-damaged-bucket-gone");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                time.set(T0.plusMillis(100 * i + 10));
                store.append(req(LOG, List.of(lease("n", 1)), "m" + i));
                expected.add("m" + i);
                if (i == 3) {
                    time.advance(Duration.ofMillis(10));
                    store.append(req(LOG, List.of(lease("second", 1)), "b"));
                }
            }
            time.set(T0.plusSeconds(2));
            store.sealThrough(LOG, T0, T0.plusSeconds(1));
            time.set(T0.plusSeconds(3_600));
            assertTrue(store.compact(LOG).published().contains(segment(root, T0).getFileName().toString()));
            Path seg = segment(root, T0);
            byte[] whole = Files.readAllBytes(seg);
            SegmentFile.Trailer t = SegmentFile.trailer(Arrays.copyOfRange(whole, whole.length - SegmentFile.TRAILER,
                    whole.length), whole.length);
            byte[] meta = Arrays.copyOfRange(whole, (int) t.indexOffset(), whole.length);
            long[] second = SegmentFile.entriesNaming(meta, Set.of("second"));
            assertEquals(2, second.length, "one entry: its offset and length");
            flip(seg, second[0] + SegmentFile.ENTRY_HEADER + 30);
            // Retention removed the bucket's files (the segment held their only copy) before the damage.
            Instant bucket = T0.plusMillis(300);
            StoreFixture.deleteTree(LogGeometry.bucketDir(root.resolve(LOG), Micros.of(bucket)));

            Read r = read(store, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(expected, r.texts(), "m3, read from the segment before the damage, once");
            assertEquals(1, r.problems().size(), r.problems()::toString);
            ReadProblem p = r.problems().get(0);
            assertEquals(ReadProblem.Kind.CORRUPT_RECORD, p.kind());
            assertEquals("2026/11/22/02/43/10.300000", p.bucket());
            assertTrue(p.detail().contains("retention removed the bucket's files"), p::detail);
        }
    }

    @Test
    void aDamagedIndexSegmentWhoseBucketsRetentionWasRemovingReportsTheEmptiedBucketAndItsRangeAndNothingElse()
            throws Exception {
        Path root = freshDir("mutants-tableless");
        ManualTimeSource time = StoreFixture.clock();
        List<String> all;
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            all = fiveSeconds(store, time, "n");
            time.set(T0.plusSeconds(3_600));
            // Only the first second is compacted.
            CompactionReport r = store.compact(LOG, Duration.between(T0.plusSeconds(1), time.now()));
            assertEquals(List.of(segment(root, T0).getFileName().toString()), r.published());
        }
        Path seg = segment(root, T0);
        flip(seg, Files.size(seg) - SegmentFile.TRAILER - 3);
        // Retention, removing the first second's buckets, emptied the first and removed the others; it had marked
        // the segment first.
        Path logDir = root.resolve(LOG);
        Path first = LogGeometry.bucketDir(logDir, Micros.of(T0));
        Path next = LogGeometry.bucketDir(logDir, Micros.of(T0.plusSeconds(1)));
        for (Path d : SegmentsRandomizedTest.bucketDirs(logDir)) {
            if (d.equals(first)) {
                empty(d);
            } else if (d.compareTo(next) < 0) {
                StoreFixture.deleteTree(d);
            }
        }
        Files.createFile(logDir.resolve(Compactor.SEGMENTS).resolve(Retention.markName(Micros.of(T0),
                Micros.of(T0.plusSeconds(1)))));
        // The bucket just after the segment, read from its directory, is emptied too (by hand): no segment holds it.
        empty(next);
        try (FileBagStore fresh = FileBagStore.open(SegmentsRandomizedTest.config(root, "w2").build(), time)) {
            Read r = read(fresh, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(all.subList(11, 50), r.texts());
            assertEquals(2, r.problems().size(), r.problems()::toString);
            ReadProblem lost = r.problems().get(0);
            assertEquals("2026/11/22/02/43/10.000000", lost.bucket());
            assertTrue(lost.detail().contains("retention removed the bucket's files"), lost::detail);
            assertTrue(r.problems().get(1).detail().startsWith("segment " + seg.getFileName() + " is damaged (its "
                    + "index or table), and retention may have removed the buckets it holds"), r.problems()::toString);

            // A read from the damaged segment's end on never opens it.
            Read after = read(fresh, ReadRequest.all(LOG).between(T0.plusSeconds(1), null).skippingUnreadable());
            assertEquals(all.subList(11, 50), after.texts());
            assertEquals(List.of(), after.problems());
            assertThrows(CorruptRecordException.class, () -> read(fresh, ReadRequest.all(LOG)));
        }
    }

    @Test
    void aReadServedFromASegmentEndsBeforeItsToInstantAndStartsAtItsFromInstant() throws Exception {
        Path root = freshDir("mutants-segment-bounds");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            List<String> all = fiveSeconds(store, time, "n");
            CompactionReport r = store.compact(LOG, Duration.between(T0.plusSeconds(5), time.now()));
            assertEquals(5, r.published().size(), r.toString());
            // Message i was written at T0 + 100 i + 10 ms: from m12's instant up to m17's, both read from a segment.
            Read got = read(store, ReadRequest.all(LOG).between(T0.plusMillis(1210), T0.plusMillis(1710)));
            assertEquals(all.subList(12, 17), got.texts(), "from is inclusive, to exclusive");
            assertEquals(List.of(), got.problems());
        }
    }

    @Test
    void aSealedBucketWhoseLockFileVanishesAfterItWasListedAndNoSegmentHoldsItIsUnavailableNotSkipped()
            throws Exception {
        Path root = freshDir("mutants-lock-gone");
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time, hooks)) {
            store.append(req(LOG, List.of(lease("n", 1)), "sealed"));
            time.set(T0.plusSeconds(30));
            store.sealThrough(LOG, T0, T0.plusSeconds(1));
            Path lock;
            try (Stream<Path> s = Files.walk(root.resolve(LOG))) {
                lock = s.filter(f -> f.getFileName().toString().equals(Names.LOCK)).findFirst().orElseThrow();
            }
            // A segments directory that holds no segment of this bucket (as after compacting other buckets).
            Files.createDirectories(root.resolve(LOG).resolve(Compactor.SEGMENTS));
            hooks.bucketListed.set(() -> {
                try {
                    Files.delete(lock);
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            // Only retention removes a sealed bucket's files, and only once a segment holds them: with none, the
            // read cannot tell what it misses, and says so rather than skip the bucket.
            StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                    () -> read(store, ReadRequest.all(LOG)));
            assertTrue(e.getMessage().contains("reading the lock file of bucket"), e.getMessage());
        }
    }

    /** Deletes the files of a bucket directory, leaving it empty. */
    private static void empty(Path dir) throws Exception {
        try (Stream<Path> s = Files.list(dir)) {
            for (Path file : s.toList()) {
                Files.delete(file);
            }
        }
    }
}
