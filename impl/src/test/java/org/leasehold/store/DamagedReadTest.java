package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.text;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Reads of data files damaged on purpose (a flipped length field, random garbage written over frames or inserted
 * between them, a file cut in an unsealed and in a sealed bucket): with {@code skippingUnreadable()} the read resumes
 * at the next valid frame and reports the skipped byte range; without it, it delivers every frame before the damage,
 * then raises. One writer appends {@value #FRAMES} frames of one message each into one bucket ({@code m-000} ...).
 */
class DamagedReadTest {
    private static final int FRAMES = 200;
    private static final String LOG = "log";

    /** A store with one data file of {@value #FRAMES} frames in bucket T0, and where each frame starts. */
    private static final class Fixture implements AutoCloseable {
        final ManualTimeSource time = StoreFixture.clock();
        final Path root;
        final FileBagStore store;
        final Path file;
        final long[] offsets = new long[FRAMES + 1];

        Fixture(String name) throws Exception {
            root = freshDir(name);
            store = FileBagStore.open(config(root).build(), time);
            Appended a = null;
            for (int i = 0; i < FRAMES; i++) {
                a = store.append(req(LOG, List.of(), payload(i)));
                offsets[i] = a.offset();
                time.advance(Duration.ofMillis(2));
            }
            file = LogGeometry.bucketDir(root.resolve(LOG), Micros.of(T0)).resolve(a.file());
            offsets[FRAMES] = Files.size(file);
        }

        void seal() throws Exception {
            time.set(T0.plusSeconds(4));
            store.sealThrough(LOG, T0, T0.plusSeconds(1));
        }

        /** Writes {@code bytes} over the file at {@code at}. */
        void overwrite(long at, byte[] bytes) throws Exception {
            StoreFixture.overwrite(file, at, bytes);
        }

        void cut(long size) throws Exception {
            StoreFixture.cut(file, size);
        }

        /** The payloads read, and the problems. */
        Read read(ReadRequest r) throws Exception {
            List<String> got = new ArrayList<>();
            try (MessageStream s = store.read(r)) {
                Message m;
                while ((m = s.next()) != null) {
                    got.add(text(m));
                }
                return new Read(got, s.problems());
            }
        }

        /** What a read that raises delivered before it raised, and what it raised. */
        Failed readUntilFailure(ReadRequest r) throws Exception {
            List<String> got = new ArrayList<>();
            try (MessageStream s = store.read(r)) {
                CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> {
                    Message m;
                    while ((m = s.next()) != null) {
                        got.add(text(m));
                    }
                });
                return new Failed(got, e);
            }
        }

        @Override
        public void close() {
            store.close();
        }
    }

    private record Read(List<String> payloads, List<ReadProblem> problems) {
    }

    private record Failed(List<String> payloads, CorruptRecordException error) {
    }

    static String payload(int i) {
        return String.format("m-%03d", i) + "x".repeat(i % 7);
    }

    /** The payloads of frames {@code [from, to)}. */
    private static List<String> frames(int from, int to) {
        List<String> l = new ArrayList<>();
        for (int i = from; i < to; i++) {
            l.add(payload(i));
        }
        return l;
    }

    /** Every frame but those of {@code [from, to)}. */
    private static List<String> allBut(int from, int to) {
        List<String> l = frames(0, from);
        l.addAll(frames(to, FRAMES));
        return l;
    }

    private static void assertProblem(ReadProblem p, ReadProblem.Kind kind, long offset, long end) {
        assertEquals(kind, p.kind(), p::toString);
        assertEquals(offset, p.offset(), p::toString);
        assertEquals(end, p.end(), p::toString);
        assertEquals(LOG, p.log());
        assertEquals("2026/11/22/02/43/10.000000", p.bucket());
    }

    @Test
    void aFlippedLengthFieldIsSkippedToTheNextValidFrame() throws Exception {
        // Larger than the frame (inside the file), smaller than it, and past the end of the file.
        int[] flips = {0x0000_0400, 0x0000_0010, 0x0100_0000};
        for (int flip : flips) {
            try (Fixture fx = new Fixture("damaged-length-" + Integer.toHexString(flip))) {
                fx.seal();
                int k = 50;
                int length = (int) (fx.offsets[k + 1] - fx.offsets[k]);
                fx.overwrite(fx.offsets[k] + 8, ByteBuffer.allocate(4).putInt(length ^ flip).array());

                Read r = fx.read(ReadRequest.all(LOG).skippingUnreadable());
                assertEquals(allBut(k, k + 1), r.payloads(), "flip " + flip);
                assertEquals(1, r.problems().size(), r.problems()::toString);
                assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, fx.offsets[k], fx.offsets[k + 1]);

                Failed f = fx.readUntilFailure(ReadRequest.all(LOG));
                assertEquals(frames(0, k), f.payloads(), "every frame before the damage, then the failure");
                assertEquals(fx.offsets[k], f.error().offset(), f.error()::getMessage);
                assertTrue(f.error().getMessage().contains("skippingUnreadable() to skip the damaged bytes up to the "
                        + "next valid frame"), f.error()::getMessage);
            }
        }
    }

    @Test
    void garbageOverSeveralFramesIsSkippedToTheNextValidFrame() throws Exception {
        try (Fixture fx = new Fixture("damaged-garbage")) {
            fx.seal();
            // From inside frame 70 (its header intact) to inside frame 73's header.
            byte[] garbage = new byte[(int) (fx.offsets[73] + 6 - fx.offsets[70] - 20)];
            new Random(21).nextBytes(garbage);
            fx.overwrite(fx.offsets[70] + 20, garbage);

            Read r = fx.read(ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(allBut(70, 74), r.payloads());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, fx.offsets[70], fx.offsets[74]);
            assertTrue(r.problems().get(0).detail().contains((fx.offsets[74] - fx.offsets[70]) + " bytes were skipped, "
                    + "reading resumed at offset " + fx.offsets[74]), r.problems()::toString);

            Failed f = fx.readUntilFailure(ReadRequest.all(LOG));
            assertEquals(frames(0, 70), f.payloads());
            assertEquals(fx.offsets[70], f.error().offset());
        }
    }

    @Test
    void garbageInsertedBetweenFramesIsSkippedAndEveryFrameDelivered() throws Exception {
        try (Fixture fx = new Fixture("damaged-inserted")) {
            byte[] all = Files.readAllBytes(fx.file);
            byte[] garbage = new byte[777];
            new Random(7).nextBytes(garbage);
            int at = (int) fx.offsets[100];
            byte[] damaged = new byte[all.length + garbage.length];
            System.arraycopy(all, 0, damaged, 0, at);
            System.arraycopy(garbage, 0, damaged, at, garbage.length);
            System.arraycopy(all, at, damaged, at + garbage.length, all.length - at);
            Files.write(fx.file, damaged);
            fx.seal();

            Read r = fx.read(ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(frames(0, FRAMES), r.payloads());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, at, at + garbage.length);
        }
    }

    @Test
    void garbageToTheEndWithoutAValidFrameSkipsTheRestOfTheFile() throws Exception {
        try (Fixture fx = new Fixture("damaged-rest")) {
            fx.seal();
            byte[] garbage = new byte[(int) (fx.offsets[FRAMES] - fx.offsets[150])];
            new Random(5).nextBytes(garbage);
            garbage[0] = 1;
            fx.overwrite(fx.offsets[150], garbage);
            Read r = fx.read(ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(frames(0, 150), r.payloads());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.CORRUPT_RECORD, fx.offsets[150], fx.offsets[FRAMES]);
        }
    }

    @Test
    void aFileCutInAnUnsealedBucketIsReportedAsAnIncompleteTailButNotOneStillGrowing() throws Exception {
        try (Fixture fx = new Fixture("damaged-cut-unsealed")) {
            long cut = fx.offsets[120] + 9;
            fx.cut(cut);
            Read r = fx.read(ReadRequest.all(LOG));
            assertEquals(frames(0, 120), r.payloads());
            assertEquals(1, r.problems().size(), r.problems()::toString);
            assertProblem(r.problems().get(0), ReadProblem.Kind.INCOMPLETE_TAIL, fx.offsets[120], cut);
            assertTrue(r.problems().get(0).detail().startsWith("tail not complete: a write in progress or a cut file"),
                    r.problems()::toString);
            // Once sealed, the lock file lists the cut size: the tail is torn.
            fx.seal();
            Read sealed = fx.read(ReadRequest.all(LOG));
            assertEquals(frames(0, 120), sealed.payloads());
            assertEquals(1, sealed.problems().size(), sealed.problems()::toString);
            assertProblem(sealed.problems().get(0), ReadProblem.Kind.TORN_TAIL, fx.offsets[120], cut);
        }
        aTailStillBeingWrittenIsNotReported();
    }

    /** The other side of the rule: a tail that grew since the read opened the file is a write in progress. */
    private static void aTailStillBeingWrittenIsNotReported() throws Exception {
        try (Fixture fx = new Fixture("damaged-in-progress")) {
            byte[] all = Files.readAllBytes(fx.file);
            fx.cut(fx.offsets[120] + 9);
            List<String> got = new ArrayList<>();
            try (MessageStream s = fx.store.read(ReadRequest.all(LOG))) {
                got.add(text(s.next()));
                // The frame is completed (and more written) after the read opened the file at its cut size.
                Files.write(fx.file, all);
                Message m;
                while ((m = s.next()) != null) {
                    got.add(text(m));
                }
                assertEquals(frames(0, 120), got, "the read stops at the size it opened the file at");
                assertEquals(List.of(), s.problems(), "a tail that grew since is a write in progress");
            }
            assertEquals(frames(0, FRAMES), fx.read(ReadRequest.all(LOG)).payloads());
        }
    }

    @Test
    void aFileCutInASealedBucketDeliversEveryFrameBeforeTheCutThenRaises() throws Exception {
        try (Fixture fx = new Fixture("damaged-cut-sealed")) {
            fx.seal();
            long cut = fx.offsets[120] + 9;
            fx.cut(cut);
            Failed f = fx.readUntilFailure(ReadRequest.all(LOG));
            assertEquals(frames(0, 120), f.payloads(), "every frame before the cut, then the failure");
            assertEquals(cut, f.error().offset(), f.error()::getMessage);

            Read r = fx.read(ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(frames(0, 120), r.payloads());
            assertTrue(r.problems().stream().allMatch(p -> p.kind() == ReadProblem.Kind.CORRUPT_RECORD),
                    r.problems()::toString);
            assertEquals(fx.offsets[FRAMES], r.problems().get(0).end(), r.problems()::toString);
        }
    }

    @Test
    void aDamageInOneOfTwoMergedFilesRaisesAfterEveryFrameBeforeIt() throws Exception {
        Path root = freshDir("damaged-merged");
        ManualTimeSource time = StoreFixture.clock();
        List<String> expected = new ArrayList<>();
        long damagedAt = -1;
        Path damagedFile = null;
        try (FileBagStore a = FileBagStore.open(config(root).build(), time);
                FileBagStore b = FileBagStore.open(config(root).build(), time)) {
            for (int i = 0; i < 60; i++) {
                Appended x = a.append(req(LOG, List.of(), "a-" + i));
                time.advance(Duration.ofMillis(3));
                b.append(req(LOG, List.of(), "b-" + i));
                time.advance(Duration.ofMillis(3));
                if (i == 30) {
                    damagedAt = x.offset();
                    damagedFile = LogGeometry.bucketDir(root.resolve(LOG), Micros.of(T0)).resolve(x.file());
                }
                if (i < 30) {
                    expected.add("a-" + i);
                    expected.add("b-" + i);
                }
            }
            time.set(T0.plusSeconds(4));
            a.sealThrough(LOG, T0, T0.plusSeconds(1));
            try (RandomAccessFile f = new RandomAccessFile(damagedFile.toFile(), "rw")) {
                f.seek(damagedAt + 30);
                f.write(new byte[] {0x55, 0x55, 0x55});
            }
            List<String> got = new ArrayList<>();
            long at = damagedAt;
            try (MessageStream s = a.read(ReadRequest.all(LOG))) {
                CorruptRecordException e = assertThrows(CorruptRecordException.class, () -> {
                    Message m;
                    while ((m = s.next()) != null) {
                        got.add(text(m));
                    }
                });
                assertEquals(at, e.offset());
            }
            // a-29 and every frame sorting before it; b-29 sorts after it and may follow the damaged a-30.
            assertEquals(expected.subList(0, expected.size() - 1), got);
            List<String> skipped = StoreFixture.texts(a, ReadRequest.all(LOG).skippingUnreadable());
            assertEquals(119, skipped.size(), skipped::toString);
            assertTrue(!skipped.contains("a-30") && skipped.contains("a-31") && skipped.contains("b-59"));
        }
    }

    @Test
    void sealThroughRefusesMoreThanAMillionBucketsAndSaysWhatToDo() throws Exception {
        Path root = freshDir("seal-limit");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req(LOG, List.of(), "x"));
            Instant through = T0.plusSeconds(1_000_001);
            time.set(through.plusSeconds(10));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> store.sealThrough(LOG, T0, through));
            assertEquals("sealing 1000001 buckets of log 'log' in one call (" + T0 + " to " + through + ") is refused: "
                    + "one call seals at most 1000000 buckets (PT277H46M40S of this log's PT1S buckets). Nothing was "
                    + "sealed: seal the range in several calls of at most that many buckets each, oldest first",
                    e.getMessage());
            assertTrue(Files.notExists(LogGeometry.bucketDir(root.resolve(LOG), Micros.of(T0)).resolve("lock")));
            // At the limit, one call is accepted: here its first million buckets minus the one of the message.
            assertEquals(1_000_000, FileBagStore.MAX_SEAL_BUCKETS);
            assertEquals(2, store.sealThrough(LOG, T0, T0.plusSeconds(2)).buckets().size());
        }
    }
}
