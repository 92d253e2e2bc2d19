package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Segments and retention change nothing a read returns: random logs (three writers, six lease names, frames with
 * several messages and leases, timestamps going back, empty and missing buckets, buckets left unsealed, torn tails in
 * sealed and unsealed buckets, late bytes past the lock file's sizes, a corrupt frame) are read in many ways (whole
 * log, sealed only, by one and two names, by time ranges crossing segment boundaries, strictly and skipping
 * unreadable records) before and after compaction, with segments damaged, and after retention removed the buckets of
 * the undamaged segments (only their included buckets, nothing else), also by reads that began before compaction;
 * every read returns the same messages with the same fields in the same order, and the same problems. The read before
 * compaction agrees with the test's independent reader ({@code LogChecker}).
 */
class SegmentsRandomizedTest {
    static final Duration WIDTH = Duration.ofMillis(100);
    static final String LOG = "log";
    static final List<String> NAMES = List.of("acct/0", "acct/1", "acct/2", "acct/3", "acct/4", "acct/5");

    static BagStoreConfig.Builder config(Path root, String writer) {
        return StoreFixture.config(root).writerId(writer).bucketWidth(WIDTH).grace(Duration.ofMillis(200))
                .maxClockError(Duration.ofMillis(50)).segmentSpan(Duration.ofSeconds(1))
                .compactionHorizon(Duration.ofSeconds(1));
    }

    /** What a read returned: its messages, its problems, or the exception that ended it. */
    record Outcome(List<Message> messages, List<ReadProblem> problems, String failure) {
    }

    static Outcome read(FileBagStore store, ReadRequest r) {
        List<Message> out = new ArrayList<>();
        try (MessageStream s = store.read(r)) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
            return new Outcome(out, s.problems(), null);
        } catch (BagStoreException e) {
            return new Outcome(out, List.of(), e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** A random log written by three stores; returns the time after the last append. */
    static Instant write(Random rnd, ManualTimeSource time, List<FileBagStore> stores, int appends) {
        for (int i = 0; i < appends; i++) {
            FileBagStore s = stores.get(rnd.nextInt(stores.size()));
            List<LeaseStamp> leases = new ArrayList<>();
            for (String n : NAMES) {
                if (rnd.nextInt(5) == 0 && leases.size() < 3) {
                    leases.add(lease(n, 1 + rnd.nextInt(3)));
                }
            }
            int count = 1 + rnd.nextInt(3);
            byte[][] payloads = new byte[count][];
            for (int k = 0; k < count; k++) {
                byte[] tail = new byte[rnd.nextInt(40)];
                rnd.nextBytes(tail);
                byte[] head = ("m" + i + "." + k + ":").getBytes(StandardCharsets.UTF_8);
                payloads[k] = new byte[head.length + tail.length];
                System.arraycopy(head, 0, payloads[k], 0, head.length);
                System.arraycopy(tail, 0, payloads[k], head.length, tail.length);
            }
            AppendRequest r = AppendRequest.of(LOG, leases, payloads);
            if (rnd.nextInt(5) == 0) {
                r = r.at(time.now().minusMillis(rnd.nextInt(150)));
            }
            try {
                s.append(r);
            } catch (BagStoreException e) {
                // Refused (late): nothing was written.
            }
            time.advance(Duration.ofMillis(rnd.nextInt(60)));
            if (rnd.nextInt(60) == 0) {
                time.advance(Duration.ofMillis(300 + rnd.nextInt(1500)));
            }
        }
        return time.now();
    }

    static List<Path> dataFiles(Path bucketDir) throws IOException {
        try (Stream<Path> s = Files.list(bucketDir)) {
            return s.filter(p -> Names.isDataFile(p.getFileName().toString())).sorted().toList();
        }
    }

    static List<Path> bucketDirs(Path logDir) throws IOException {
        try (Stream<Path> s = Files.walk(logDir)) {
            return s.filter(p -> Files.isDirectory(p) && LogGeometry.parseLeaf(p.getFileName().toString()) >= 0
                    && p.getNameCount() - logDir.getNameCount() == 6).sorted().toList();
        }
    }

    static void appendBytes(Path file, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            ch.write(ByteBuffer.wrap(bytes));
        }
    }

    /** The start of a frame header claiming more bytes than follow: a torn tail. */
    static byte[] tornHeader() {
        return ByteBuffer.allocate(20).putInt(Frames.MAGIC).putShort((short) 1).putShort((short) 0).putInt(4000)
                .putInt(0).putInt(0).array();
    }

    static List<ReadRequest> requests(Random rnd, Instant first, Instant last) {
        List<ReadRequest> rs = new ArrayList<>();
        ReadRequest all = ReadRequest.all(LOG).skippingUnreadable();
        rs.add(all);
        rs.add(all.sealedOnly());
        rs.add(ReadRequest.all(LOG));
        rs.add(ReadRequest.all(LOG).sealedOnly());
        for (String n : NAMES) {
            rs.add(all.underAnyOf(Set.of(n)));
            rs.add(all.sealedOnly().underAnyOf(new TreeSet<>(List.of(n, NAMES.get(rnd.nextInt(NAMES.size()))))));
        }
        long span = Duration.between(first, last).toMillis() + 2_000;
        for (int i = 0; i < 12; i++) {
            Instant a = first.minusSeconds(1).plusMillis(rnd.nextLong(span)).plusNanos(rnd.nextInt(1_000_000));
            Instant b = a.plusMillis(rnd.nextLong(3_000));
            ReadRequest r = all.between(a, i % 3 == 0 ? null : b);
            if (i % 2 == 0) {
                r = r.underAnyOf(Set.of(NAMES.get(rnd.nextInt(NAMES.size()))));
            }
            rs.add(i % 4 == 1 ? r.sealedOnly() : r);
        }
        return rs;
    }

    static Map<SegmentFile.State, Integer> states(Path logDir) throws IOException, FormatException {
        Map<SegmentFile.State, Integer> m = new EnumMap<>(SegmentFile.State.class);
        try (Stream<Path> s = Files.list(logDir.resolve(Compactor.SEGMENTS))) {
            for (Path p : s.filter(p -> SegmentFile.parseName(p.getFileName().toString()) != null).toList()) {
                byte[] a = Files.readAllBytes(p);
                byte[] t = java.util.Arrays.copyOfRange(a, a.length - SegmentFile.TRAILER, a.length);
                SegmentFile.Trailer tr = SegmentFile.trailer(t, a.length);
                byte[] meta = java.util.Arrays.copyOfRange(a, (int) tr.indexOffset(), a.length);
                SegmentFile.checkMeta(meta, tr.indexOffset());
                for (SegmentFile.Bucket b : SegmentFile.table(meta, tr)) {
                    m.merge(b.state(), 1, Integer::sum);
                }
            }
        }
        return m;
    }

    @Test
    void everyReadIsTheSameBeforeAndAfterCompaction() throws Exception {
        long seed = Long.getLong("segments.seed", System.nanoTime());
        for (int round = 0; round < 3; round++) {
            check(seed + round);
        }
    }

    private void check(long seed) throws Exception {
        String why = "seed " + seed;
        Random rnd = new Random(seed);
        Path root = freshDir("segments-random");
        ManualTimeSource time = StoreFixture.clock();
        List<FileBagStore> stores = new ArrayList<>();
        try {
            for (String w : List.of("w-a", "w-b", "w-c")) {
                stores.add(FileBagStore.open(config(root, w).build(), time));
            }
            FileBagStore store = stores.get(0);
            Instant end = write(rnd, time, stores, 300 + rnd.nextInt(200));
            Path logDir = root.resolve(LOG);
            List<Path> dirs = bucketDirs(logDir);
            // Torn tails, before any bucket is sealed: the sealer lists them in some lock files (and reads report
            // them), the others stay in unsealed buckets.
            for (Path d : dirs) {
                List<Path> files = dataFiles(d);
                if (!files.isEmpty() && rnd.nextInt(8) == 0) {
                    appendBytes(files.get(rnd.nextInt(files.size())), tornHeader());
                }
            }
            time.set(end.plusSeconds(2));
            long w = Micros.of(WIDTH);
            for (long b = Micros.of(T0); b < Micros.of(end); b += w) {
                if (rnd.nextInt(5) != 0) {
                    store.sealThrough(LOG, Micros.toInstant(b), Micros.toInstant(b + w));
                }
            }
            // Late bytes past the sizes of the lock files.
            for (Path d : bucketDirs(logDir)) {
                List<Path> files = dataFiles(d);
                if (!files.isEmpty() && Files.exists(d.resolve(Names.LOCK)) && rnd.nextInt(6) == 0) {
                    byte[] late = new byte[30 + rnd.nextInt(40)];
                    rnd.nextBytes(late);
                    appendBytes(files.get(rnd.nextInt(files.size())), late);
                }
            }
            independent(logDir, read(store, ReadRequest.all(LOG)), why);
            // One corrupt frame in a sealed bucket.
            boolean corrupted = false;
            for (Path d : bucketDirs(logDir)) {
                List<Path> files = dataFiles(d);
                if (files.isEmpty() || !Files.exists(d.resolve(Names.LOCK))) {
                    continue;
                }
                Path f = files.get(rnd.nextInt(files.size()));
                if (!corrupted && Files.size(f) > 300 && rnd.nextInt(4) == 0) {
                    // A payload byte of the first frame: its checksum fails with frames after it.
                    try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                        ByteBuffer one = ByteBuffer.allocate(1);
                        ch.read(one, Frames.MIN_FRAME - 2);
                        one.put(0, (byte) (one.get(0) ^ 0x5A)).rewind();
                        ch.write(one, Frames.MIN_FRAME - 2);
                    }
                    corrupted = true;
                }
            }
            List<ReadRequest> requests = requests(rnd, T0, end);
            Map<ReadRequest, Outcome> before = new LinkedHashMap<>();
            for (ReadRequest r : requests) {
                before.put(r, read(store, r));
            }

            // Reads that list the segments now (there are none) and read everything after retention.
            Map<ReadRequest, MessageStream> early = new LinkedHashMap<>();
            for (ReadRequest r : requests.subList(0, 8)) {
                early.put(r, store.read(r));
            }

            time.set(end.plusSeconds(5));
            CompactionReport rep = store.compact(LOG);
            assertFalse(rep.published().isEmpty(), why + ": " + rep);
            assertEquals(0, rep.alreadyThere(), why);
            Map<SegmentFile.State, Integer> states = states(logDir);
            assertTrue(states.getOrDefault(SegmentFile.State.INCLUDED, 0) > 0, why + " " + states);
            assertTrue(states.getOrDefault(SegmentFile.State.UNSEALED, 0) > 0, why + " " + states);
            assertTrue(states.getOrDefault(SegmentFile.State.UNREADABLE, 0) > 0, why + " " + states);

            for (ReadRequest r : requests) {
                assertSame(before.get(r), read(store, r), why + ", " + r);
                assertSame(before.get(r), read(stores.get(2), r), why + ", another store, " + r);
            }
            CompactionReport again = stores.get(1).compact(LOG);
            assertEquals(List.of(), again.published(), why + ": nothing to do again");
            assertEquals(rep.published().size(), again.alreadyThere(), why);

            // Damage: one byte flipped among the entries of some segments, anywhere (mid-bucket too). A read finds
            // it, falls back to the buckets after the last frame it delivered, and returns the same again.
            int flipped = 0;
            Set<String> damaged = new TreeSet<>();
            try (Stream<Path> s = Files.list(logDir.resolve(Compactor.SEGMENTS))) {
                for (Path p : s.filter(p -> SegmentFile.parseName(p.getFileName().toString()) != null).sorted()
                        .toList()) {
                    long size = Files.size(p);
                    byte[] t = new byte[SegmentFile.TRAILER];
                    try (FileChannel ch = FileChannel.open(p, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                        ch.read(ByteBuffer.wrap(t), size - SegmentFile.TRAILER);
                        long entriesEnd = SegmentFile.trailer(t, size).indexOffset();
                        if (entriesEnd > SegmentFile.HEADER && rnd.nextInt(3) == 0) {
                            long at = SegmentFile.HEADER + (long) (rnd.nextDouble() * (entriesEnd - SegmentFile.HEADER));
                            ByteBuffer one = ByteBuffer.allocate(1);
                            ch.read(one, at);
                            one.put(0, (byte) (one.get(0) ^ (1 << rnd.nextInt(8)))).rewind();
                            ch.write(one, at);
                            flipped++;
                            damaged.add(p.getFileName().toString());
                        }
                    }
                }
            }
            for (ReadRequest r : requests) {
                assertSame(before.get(r), read(store, r), why + ", " + flipped + " segments damaged, " + r);
            }

            // Retention: the included buckets of the undamaged segments are emptied, nothing else changes.
            Map<Path, List<String>> filesBefore = files(logDir);
            Set<Path> retired = new TreeSet<>();
            for (Map.Entry<String, List<SegmentFile.Bucket>> e : tables(logDir).entrySet()) {
                for (SegmentFile.Bucket b : e.getValue()) {
                    if (!damaged.contains(e.getKey()) && b.state() == SegmentFile.State.INCLUDED) {
                        retired.add(bucketDir(logDir, b.start()));
                    }
                }
            }
            try (FileBagStore retainer = FileBagStore.open(config(root, "w-r").removeCompactedBuckets(true)
                    .retentionDelay(Duration.ofSeconds(1)).build(), time)) {
                assertEquals(0, retainer.compact(LOG).bucketsRemoved(), why + ": the segments are first seen");
                assertEquals(filesBefore, files(logDir), why);
                time.advance(Duration.ofMillis(1_050));
                assertEquals(retired.size(), retainer.compact(LOG).bucketsRemoved(), why + ", damaged " + damaged);
            }
            assertFalse(retired.isEmpty(), why + ": damaged " + damaged);
            Map<Path, List<String>> filesAfter = files(logDir);
            Set<Path> kept = new TreeSet<>(filesBefore.keySet());
            kept.removeAll(retired);
            assertEquals(kept, filesAfter.keySet(), why + ": the retired bucket directories are removed, no other");
            for (Map.Entry<Path, List<String>> e : filesBefore.entrySet()) {
                assertEquals(retired.contains(e.getKey()) ? null : e.getValue(), filesAfter.get(e.getKey()),
                        why + ", " + e.getKey());
            }
            for (ReadRequest r : requests) {
                assertSame(before.get(r), read(store, r), why + ", after retention, " + r);
                assertSame(before.get(r), read(stores.get(2), r), why + ", after retention, another store, " + r);
            }
            for (Map.Entry<ReadRequest, MessageStream> e : early.entrySet()) {
                assertSame(before.get(e.getKey()), drain(e.getValue()), why + ", begun before compaction, "
                        + e.getKey());
            }
        } finally {
            for (FileBagStore s : stores) {
                s.close();
            }
        }
    }

    static Outcome drain(MessageStream s) {
        List<Message> out = new ArrayList<>();
        try (s) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
            return new Outcome(out, s.problems(), null);
        } catch (BagStoreException e) {
            return new Outcome(out, List.of(), e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /** The names in every bucket directory of the log, sorted. */
    static Map<Path, List<String>> files(Path logDir) throws IOException {
        Map<Path, List<String>> m = new java.util.TreeMap<>();
        for (Path d : bucketDirs(logDir)) {
            try (Stream<Path> s = Files.list(d)) {
                m.put(d, s.map(p -> p.getFileName().toString()).sorted().toList());
            }
        }
        return m;
    }

    /** The directory of the bucket starting at {@code start} (µs). */
    static Path bucketDir(Path logDir, long start) {
        java.time.LocalDateTime t = java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(start, 1_000_000L), 0,
                java.time.ZoneOffset.UTC);
        return logDir.resolve(String.format("%04d/%02d/%02d/%02d/%02d/%02d.%06d", t.getYear(), t.getMonthValue(),
                t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond(), Math.floorMod(start, 1_000_000L)));
    }

    /** The table of every published segment, by file name. */
    static Map<String, List<SegmentFile.Bucket>> tables(Path logDir) throws IOException, FormatException {
        Map<String, List<SegmentFile.Bucket>> m = new java.util.TreeMap<>();
        try (Stream<Path> s = Files.list(logDir.resolve(Compactor.SEGMENTS))) {
            for (Path p : s.filter(p -> SegmentFile.parseName(p.getFileName().toString()) != null).toList()) {
                byte[] a = Files.readAllBytes(p);
                byte[] t = java.util.Arrays.copyOfRange(a, a.length - SegmentFile.TRAILER, a.length);
                SegmentFile.Trailer tr = SegmentFile.trailer(t, a.length);
                m.put(p.getFileName().toString(), SegmentFile.table(java.util.Arrays.copyOfRange(a,
                        (int) tr.indexOffset(), a.length), tr));
            }
        }
        return m;
    }

    static void assertSame(Outcome expected, Outcome actual, String why) {
        assertEquals(expected.failure(), actual.failure(), why);
        assertEquals(expected.messages().size(), actual.messages().size(), why);
        for (int i = 0; i < expected.messages().size(); i++) {
            Message e = expected.messages().get(i);
            Message a = actual.messages().get(i);
            assertEquals(e, a, why + ", message " + i);
            assertEquals(e.tentative(), a.tentative(), why);
            assertEquals(e.bucket(), a.bucket(), why);
        }
        assertEquals(expected.problems(), actual.problems(), why);
    }

    /** The read of the whole log against the independent reader. */
    static void independent(Path logDir, Outcome read, String why) throws IOException {
        LogChecker.Result c = LogChecker.check(logDir);
        assertEquals(List.of(), c.violations(), why);
        assertEquals(null, read.failure(), why);
        List<String> expected = new ArrayList<>();
        for (LogChecker.Msg m : c.ordered()) {
            expected.add(m.bucket() + " " + m.file() + "@" + m.offset() + "#" + m.index() + " " + m.timestamp() + " "
                    + java.util.HexFormat.of().formatHex(m.payload()) + " " + !m.sealed());
        }
        List<String> got = new ArrayList<>();
        for (Message m : read.messages()) {
            got.add(Micros.of(m.bucket()) + " " + m.file() + "@" + m.offset() + "#" + m.index() + " "
                    + Micros.of(m.timestamp()) + " " + java.util.HexFormat.of().formatHex(m.payload()) + " "
                    + m.tentative());
        }
        assertEquals(expected, got, why + ": the store's read and the independent reader agree");
    }
}
