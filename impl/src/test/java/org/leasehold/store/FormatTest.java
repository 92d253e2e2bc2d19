package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LockFile;
import org.leasehold.store.format.LogDescriptor;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/** The on-disk formats and names: round trips, checksums, and torn tails cut at every possible byte. */
class FormatTest {

    @Test
    void framesRoundTripWithLeasesWitnessesAndSeveralMessages() throws Exception {
        List<LeaseStamp> leases = List.of(new LeaseStamp("tenant/ä", 42, T0, T0.plusSeconds(1), T0, null,
                new byte[] {1, 2, 3}), StoreFixture.lease("b", 7));
        List<byte[]> payloads = List.of(new byte[0], "hello".getBytes(StandardCharsets.UTF_8));
        byte[][] names = Frames.names(leases);
        int size = (int) Frames.size(leases, names, payloads);
        ByteBuffer f = Frames.encode(Micros.of(T0) + 5, leases, names, payloads, size);
        assertEquals(size, Frames.checkHeader(f.array(), 0, 0, 1 << 20));
        assertTrue(Frames.checksumMatches(f.array(), 0, size));
        Frames.Body b = Frames.decode(f.array(), 0, size, 0);
        assertEquals(Micros.of(T0) + 5, b.timestamp());
        assertEquals("tenant/ä", b.leases().get(0).name());
        assertEquals(42, b.leases().get(0).generation());
        assertArrayEquals(new byte[] {1, 2, 3}, b.leases().get(0).witness());
        assertEquals(0, b.payload(0).length);
        assertEquals("hello", new String(b.payload(1), StandardCharsets.UTF_8));

        Frames.retime(f, Micros.of(T0) + 9);
        assertTrue(Frames.checksumMatches(f.array(), 0, size), "retiming rewrites the checksum");
        assertEquals(Micros.of(T0) + 9, Frames.decode(f.array(), 0, size, 0).timestamp());
        f.array()[size - 1] ^= 1;
        assertTrue(!Frames.checksumMatches(f.array(), 0, size));
        f.array()[5] = 9;
        FormatException e = assertThrows(FormatException.class, () -> Frames.checkHeader(f.array(), 0, 77, 1 << 20));
        assertEquals(9, e.version());
        assertEquals(77, e.offset());
    }

    @Test
    void lockFilesAndDescriptorsAreVerified() throws Exception {
        LockFile lf = new LockFile("log", 1_000_000, 1_000_000, "w-0", 5, List.of(new LockFile.Entry("w-0.0.data", 12),
                new LockFile.Entry("x-1.3.data", 0)));
        byte[] bytes = lf.encode();
        assertEquals(lf, LockFile.parse(bytes));
        assertEquals(12, LockFile.parse(bytes).sizeOf("w-0.0.data"));
        assertEquals(-1, LockFile.parse(bytes).sizeOf("nope"));
        byte[] bad = bytes.clone();
        bad[20] ^= 1;
        assertThrows(FormatException.class, () -> LockFile.parse(bad));
        assertThrows(FormatException.class, () -> LockFile.parse(Arrays.copyOf(bytes, bytes.length - 3)),
                "an incomplete lock file is refused");
        List<String> v = new ArrayList<>();
        assertNotNull(LogChecker.parseLock(bytes, "x", v), "the independent checker reads it too");
        assertEquals(List.of(), v);

        LogDescriptor d = new LogDescriptor(100_000, 200_000, 50_000);
        assertEquals(d, LogDescriptor.parse(d.encode()));
        assertThrows(FormatException.class, () -> LogDescriptor.parse(new LogDescriptor(7, 200_000, 50_000).encode()));
    }

    @Test
    void namesAndPaths() {
        Names.DataFileName n = Names.parseDataFile("host-a-0.12.data");
        assertEquals("host-a-0", n.writer());
        assertEquals(12, n.sequence());
        for (String bad : List.of("lock", "prelock", "lock.w.abc", "x.data", ".0.data", "w..data", "w.01.data",
                "w.-1.data", "w.1.dat", "w.x.data", "a b.0.data")) {
            assertNull(Names.parseDataFile(bad), bad);
        }
        assertTrue(Names.parseDataFile("b.0.data").compareTo(Names.parseDataFile("a.5.data")) > 0);
        assertTrue(Names.parseDataFile("a.10.data").compareTo(Names.parseDataFile("a.9.data")) > 0);
        assertEquals("node-1-example-com", Names.sanitizeHost("node_1.example.com."));
        assertNull(Names.logNameProblem("orders-2026.v1"));
        assertEquals("2026/11/22/02/43/10.000000", LogGeometry.relativePath(Micros.of(T0)));
        assertEquals("1970/01/01/00/00/00.100000", LogGeometry.relativePath(100_000));
        assertEquals(10_250_000, LogGeometry.parseLeaf("10.250000"));
        assertEquals(-1, LogGeometry.parseLeaf("60.000000"));
        assertEquals(-1, LogGeometry.parseLeaf("1.0000000"));
    }

    @Test
    void aDataFileCutAtAnyByteLosesExactlyTheCutFrame() throws Exception {
        Path src = freshDir("format-torn-source");
        ManualTimeSource time = StoreFixture.clock();
        List<Appended> acks = new ArrayList<>();
        try (FileBagStore store = FileBagStore.open(config(src).build(), time)) {
            acks.add(store.append(AppendRequest.of("log", List.of(StoreFixture.lease("n", 1)), new byte[] {1})));
            acks.add(store.append(AppendRequest.of("log", List.of(), new byte[] {2}, new byte[] {3})));
            acks.add(store.append(AppendRequest.of("log", List.of(StoreFixture.lease("n", 2)), new byte[] {4})));
        }
        Path srcBucket = LogGeometry.bucketDir(src.resolve("log"), Micros.of(T0));
        String file = acks.get(0).file();
        byte[] all = Files.readAllBytes(srcBucket.resolve(file));
        byte[] descriptor = Files.readAllBytes(src.resolve("log").resolve("descriptor"));
        long[] ends = acks.stream().mapToLong(a -> a.offset() + a.length()).toArray();
        int[] messagesBefore = {1, 3, 4};

        Path base = freshDir("format-torn-cuts");
        for (int cut = 0; cut <= all.length; cut++) {
            Path root = base.resolve("cut-" + cut);
            Path bucket = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0));
            Files.createDirectories(bucket);
            Files.write(root.resolve("log").resolve("descriptor"), descriptor);
            Files.write(bucket.resolve(file), Arrays.copyOf(all, cut));
            ManualTimeSource t = new ManualTimeSource(T0.plus(Duration.ofSeconds(4)));
            try (FileBagStore store = FileBagStore.open(config(root).build(), t)) {
                store.sealThrough("log", T0, T0.plusSeconds(1));
                int expected = 0;
                boolean boundary = cut == 0;
                for (int i = 0; i < ends.length; i++) {
                    if (ends[i] <= cut) {
                        expected = messagesBefore[i];
                    }
                    boundary |= ends[i] == cut;
                }
                try (MessageStream s = store.read(ReadRequest.all("log"))) {
                    int got = 0;
                    Message m;
                    while ((m = s.next()) != null) {
                        assertEquals(got + 1, m.payloadBuffer().get(0), "cut " + cut);
                        got++;
                    }
                    assertEquals(expected, got, "cut at " + cut);
                    List<ReadProblem> p = s.problems();
                    assertEquals(boundary ? 0 : 1, p.size(), "cut at " + cut + ": " + p);
                    if (!boundary) {
                        assertEquals(ReadProblem.Kind.TORN_TAIL, p.get(0).kind());
                    }
                }
                LogChecker.Result c = LogChecker.check(root.resolve("log"));
                assertEquals(List.of(), c.violations(), "cut at " + cut);
                assertEquals(expected, c.ordered().size(), "the checker agrees at cut " + cut);
            }
        }
    }

    @Test
    void aZeroFilledTailIsTorn() throws Exception {
        Path root = freshDir("format-zero-tail");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended a = store.append(AppendRequest.of("log", List.of(), new byte[] {1}));
            Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0)).resolve(a.file());
            Files.write(file, new byte[8192], StandardOpenOption.APPEND);
            time.advance(Duration.ofSeconds(3));
            store.sealThrough("log", T0, T0.plusSeconds(1));
            try (MessageStream s = store.read(ReadRequest.all("log"))) {
                assertNotNull(s.next());
                assertNull(s.next());
                assertEquals(ReadProblem.Kind.TORN_TAIL, s.problems().get(0).kind());
                assertTrue(s.problems().get(0).detail().contains("zero"), s.problems().get(0).detail());
            }
        }
    }
}
