package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.bytes;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.readAll;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.InvalidAppendException;
import org.leasehold.bag.InvalidLogNameException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.PayloadTooLargeException;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.fs.PolicedFileSystem;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Every bad input gets a clear error (what happened, to what, what to do), and nothing acknowledged is lost. (Timestamps
 * outside {@code (floor, deadline)} and writes to sealed buckets are covered in {@link WriteRuleTest}.)
 */
class BadInputTest {

    private static void assertReadable(FileBagStore store, String log, List<String> expected) throws BagStoreException {
        assertEquals(expected, texts(store, ReadRequest.all(log)), "acknowledged messages are all still readable");
    }

    @Test
    void payloadsAndFramesOverTheLimitAreRefused() throws Exception {
        Path root = freshDir("bad-payload");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(AppendRequest.of("log", List.of(), new byte[1 << 20]));
            PayloadTooLargeException e = assertThrows(PayloadTooLargeException.class,
                    () -> store.append(AppendRequest.of("log", List.of(), new byte[10], new byte[(1 << 20) + 1])));
            assertEquals((1 << 20) + 1, e.size());
            assertEquals(1 << 20, e.limit());
            assertTrue(e.getMessage().contains("payload 1") && e.getMessage().contains("maxPayloadBytes")
                    && e.getMessage().contains("nothing was written"), e.getMessage());
            assertEquals(1, readAll(store, ReadRequest.all("log")).size());
        }
        try (FileBagStore small = FileBagStore.open(config(root).maxFrameBytes(64 << 10).maxPayloadBytes(32 << 10)
                .build(), time)) {
            PayloadTooLargeException f = assertThrows(PayloadTooLargeException.class, () -> small.append(
                    AppendRequest.of("log", List.of(), new byte[30 << 10], new byte[30 << 10], new byte[30 << 10])));
            assertTrue(f.getMessage().contains("maxFrameBytes"), f.getMessage());
            assertEquals(1, readAll(small, ReadRequest.all("log")).size());
        }
    }

    @Test
    void aMissingRootOrOneThatIsAFileIsRefusedAtOpen() throws Exception {
        Path base = freshDir("bad-root");
        StoreUnavailableException missing = assertThrows(StoreUnavailableException.class,
                () -> FileBagStore.open(config(base.resolve("nope")).build(), StoreFixture.clock()));
        assertTrue(missing.getMessage().contains("does not exist") && missing.getMessage().contains("nope"),
                missing.getMessage());
        Path file = Files.writeString(base.resolve("file"), "x");
        StoreUnavailableException notDir = assertThrows(StoreUnavailableException.class,
                () -> FileBagStore.open(config(file).build(), StoreFixture.clock()));
        assertTrue(notDir.getMessage().contains("not a directory"), notDir.getMessage());
    }

    @Test
    void aRootThisUserCannotWriteFailsClearlyAndLosesNothing() throws Exception {
        // Root ignores mode bits; the policed file system enforces them as the kernel does for anyone else.
        Path real = freshDir("bad-root-mode");
        PolicedFileSystem fs = new PolicedFileSystem(true);
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(fs.wrap(real)).build(), time)) {
            store.append(req("kept", List.of(), "one"));
            Files.setPosixFilePermissions(real, PosixFilePermissions.fromString("r-xr-xr-x"));
            try {
                StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                        () -> store.append(req("newlog", List.of(), "x")));
                assertTrue(e.getMessage().contains("permission denied") && e.getMessage().contains("writable"),
                        e.getMessage());
                // The existing log is unaffected: its own directories are writable.
                store.append(req("kept", List.of(), "two"));
                assertReadable(store, "kept", List.of("one", "two"));
            } finally {
                Files.setPosixFilePermissions(real, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
        }
    }

    @Test
    void aReadOnlyMountFailsClearlyAndLosesNothing() throws Exception {
        Path dir = freshDir("bad-root-readonly-mount");
        String[] why = new String[1];
        Tmpfs mount = Tmpfs.mount(dir, "size=1m", why);
        Assumptions.assumeTrue(mount != null, () -> why[0]);
        try {
            ManualTimeSource time = StoreFixture.clock();
            try (FileBagStore store = FileBagStore.open(config(dir).build(), time)) {
                store.append(req("log", List.of(), "before"));
            }
            mount.remount("ro");
            try (FileBagStore store = FileBagStore.open(config(dir).build(), time)) {
                StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                        () -> store.append(req("log", List.of(), "after")));
                assertTrue(e.getMessage().contains("Read-only file system"), e.getMessage());
                StoreUnavailableException n = assertThrows(StoreUnavailableException.class,
                        () -> store.append(req("new-log", List.of(), "x")));
                assertTrue(n.getMessage().contains("Read-only file system") && n.getMessage().contains("read-write"),
                        n.getMessage());
                assertReadable(store, "log", List.of("before"));
            }
        } finally {
            mount.close();
        }
    }

    @Test
    void invalidLogNamesAreRefusedEverywhere() throws Exception {
        Path root = freshDir("bad-log-name");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<String> bad = Arrays.asList(null, "", "../etc", "a/b", ".hidden", "-dash", "with space", "é",
                    "x".repeat(101), "nul\u0000");
            for (String name : bad) {
                InvalidLogNameException e = assertThrows(InvalidLogNameException.class,
                        () -> store.append(AppendRequest.of(name, List.of(), bytes("x"))), String.valueOf(name));
                assertEquals(name, e.logName());
                assertTrue(e.getMessage().startsWith("the log name '"), e.getMessage());
                assertThrows(InvalidLogNameException.class, () -> store.read(ReadRequest.all(name == null ? "" : name)));
                assertThrows(InvalidLogNameException.class, () -> store.sealThrough(name, T0, T0.plusSeconds(1)));
            }
            try (java.util.stream.Stream<Path> s = Files.list(root)) {
                assertEquals(0, s.count(), "nothing was created");
            }
            store.append(AppendRequest.of("ok.name_1-2", List.of(), bytes("x")));
        }
    }

    @Test
    void malformedRequestsAreRefused() throws Exception {
        Path root = freshDir("bad-request");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(), "kept"));
            assertThrows(InvalidAppendException.class, () -> store.append(null));
            assertTrue(assertThrows(InvalidAppendException.class, () -> store.append(new AppendRequest("log", List.of(),
                    null, List.of()))).getMessage().contains("at least one payload"));
            assertThrows(InvalidAppendException.class, () -> store.append(new AppendRequest("log", List.of(), null,
                    Arrays.asList(bytes("a"), null))));
            LeaseStamp l = lease("a", 1);
            assertTrue(assertThrows(InvalidAppendException.class, () -> store.append(req("log", List.of(l, l), "x")))
                    .getMessage().contains("twice"));
            assertThrows(InvalidAppendException.class, () -> store.append(req("log", List.of(lease("bad//name", 1)),
                    "x")));
            assertThrows(InvalidAppendException.class, () -> store.append(req("log", Arrays.asList(l, null), "x")));
            LeaseStamp bigWitness = new LeaseStamp("w", 1, T0.minusSeconds(1), T0.plusSeconds(1), T0.minusSeconds(1),
                    null, new byte[(64 << 10) + 1]);
            assertThrows(InvalidAppendException.class, () -> store.append(req("log", List.of(bigWitness), "x")));
            assertThrows(UnknownLogException.class, () -> store.read(ReadRequest.all("never-written")));
            org.leasehold.lease.Lease tentative = new org.leasehold.lease.Lease(new org.leasehold.lease.HolderId("p", "t"),
                    org.leasehold.lease.LeaseMode.EXCLUSIVE, org.leasehold.lease.LeaseKind.TENTATIVE, T0,
                    T0.plusSeconds(5), List.of(new org.leasehold.lease.LeaseGrant("a", 1,
                            org.leasehold.lease.CorrelationId.NONE, T0.minusSeconds(1), T0, null)));
            assertTrue(assertThrows(IllegalArgumentException.class, () -> LeaseStamp.of(tentative)).getMessage()
                    .contains("upgrade it"), "no stamps (so no writes) under a tentative lease");
            assertReadable(store, "log", List.of("kept"));
        }
        ManualTimeSource t2 = StoreFixture.clock();
        FileBagStore closed = FileBagStore.open(config(root).build(), t2);
        closed.close();
        StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                () -> closed.append(req("log", List.of(), "x")));
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void badConfigurationsAreExplained() {
        Path root = StoreFixture.BASE;
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(root).grace(Duration.ofMillis(500))
                .build()).getMessage().contains("longer than maxClockError"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(root).bucketWidth(Duration.ofMillis(7))
                .build()).getMessage().contains("divides a day"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> config(root).writerId("a.b").build())
                .getMessage().contains("writerId"));
        assertThrows(IllegalArgumentException.class, () -> config(root).maxPayloadBytes(0).build());
        assertThrows(IllegalArgumentException.class, () -> FlushPolicy.interval(Duration.ZERO));
    }

    @Test
    void aDataFileMadeReadOnlyByHandChangesNothingForRoot() throws Exception {
        Path root = freshDir("bad-readonly-root");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended a = store.append(req("log", List.of(), "one"));
            Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(a.bucket())).resolve(a.file());
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--r--r--"));
            Appended b = store.append(req("log", List.of(), "two"));
            assertEquals(a.file(), b.file(), "the open file keeps taking writes; the mode bits decide nothing");
            time.advance(Duration.ofSeconds(3));
            store.sealThrough("log", T0, T0.plusSeconds(1));
            assertReadable(store, "log", List.of("one", "two"));
        }
    }

    @Test
    void aDataFileMadeReadOnlyByHandMovesANonRootWriterToANewFile() throws Exception {
        Path real = freshDir("bad-readonly-nonroot");
        PolicedFileSystem fs = new PolicedFileSystem(true);
        ManualTimeSource time = StoreFixture.clock();
        // The interval policy closes the file after every batch and re-opens it for the next: the case where a
        // non-root writer meets the mode bits.
        try (FileBagStore store = FileBagStore.open(config(fs.wrap(real)).flushPolicy(FlushPolicy.interval(
                Duration.ofSeconds(1))).build(), time)) {
            Appended a = store.append(req("log", List.of(), "one"));
            Path dir = LogGeometry.bucketDir(real.resolve("log"), Micros.of(a.bucket()));
            Files.setPosixFilePermissions(dir.resolve(a.file()), PosixFilePermissions.fromString("r--r--r--"));
            Appended b = store.append(req("log", List.of(), "two"));
            assertEquals(store.writerId() + ".1.data", b.file(), "not sealed (no prelock): continue in a new file");
            // The bucket directory made read-only by hand (no prelock): no new file can be created; a clear error.
            Files.setPosixFilePermissions(dir.resolve(b.file()), PosixFilePermissions.fromString("r--r--r--"));
            Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("r-xr-xr-x"));
            try {
                StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
                        () -> store.append(req("log", List.of(), "three")));
                assertTrue(e.getMessage().contains("nothing was written"), e.getMessage());
            } finally {
                Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));
            }
            time.advance(Duration.ofSeconds(3));
            store.sealThrough("log", T0, T0.plusSeconds(1));
            assertReadable(store, "log", List.of("one", "two"));
        }
    }

    /** Three frames in one sealed bucket; returns their acknowledgements. */
    private static List<Appended> threeSealedFrames(FileBagStore store, ManualTimeSource time) throws Exception {
        List<Appended> acks = new ArrayList<>();
        for (String p : List.of("first", "second", "third")) {
            acks.add(store.append(req("log", List.of(lease("k", 1)), p)));
            time.advance(Duration.ofMillis(10));
        }
        time.advance(Duration.ofSeconds(3));
        store.sealThrough("log", T0, T0.plusSeconds(1));
        return acks;
    }

    @Test
    void aCorruptRecordIsAClearErrorOrIsSkippedAndReported() throws Exception {
        Path root = freshDir("bad-corrupt");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<Appended> acks = threeSealedFrames(store, time);
            Appended second = acks.get(1);
            Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(second.bucket())).resolve(second.file());
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                long at = second.offset() + second.length() - 2;
                raf.seek(at);
                int b = raf.read();
                raf.seek(at);
                raf.write(b ^ 0x40);
            }
            CorruptRecordException e = assertThrows(CorruptRecordException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertEquals("log", e.log());
            assertEquals(LogGeometry.relativePath(Micros.of(second.bucket())), e.bucket());
            assertEquals(second.file(), e.file());
            assertEquals(second.offset(), e.offset());
            assertTrue(e.getMessage().contains("offset " + second.offset()) && e.getMessage().contains(second.file())
                    && e.getMessage().contains("CRC32C"), e.getMessage());

            try (MessageStream s = store.read(ReadRequest.all("log").skippingUnreadable())) {
                List<String> got = new ArrayList<>();
                Message m;
                while ((m = s.next()) != null) {
                    got.add(StoreFixture.text(m));
                }
                assertEquals(List.of("first", "third"), got, "only the corrupt frame is skipped");
                assertEquals(1, s.problems().size());
                ReadProblem p = s.problems().get(0);
                assertEquals(ReadProblem.Kind.CORRUPT_RECORD, p.kind());
                assertEquals(second.offset(), p.offset());
                assertEquals(second.file(), p.file());
            }
        }
    }

    @Test
    void anUnknownFormatVersionIsAClearError() throws Exception {
        Path root = freshDir("bad-version");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<Appended> acks = threeSealedFrames(store, time);
            Appended third = acks.get(2);
            Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(third.bucket())).resolve(third.file());
            byte[] all = Files.readAllBytes(file);
            int off = (int) third.offset();
            all[off + 5] = 2; // version 2, with a valid checksum: a newer writer's frame
            CRC32C crc = new CRC32C();
            crc.update(all, off, 12);
            crc.update(all, off + 16, third.length() - 16);
            int v = (int) crc.getValue();
            all[off + 12] = (byte) (v >>> 24);
            all[off + 13] = (byte) (v >>> 16);
            all[off + 14] = (byte) (v >>> 8);
            all[off + 15] = (byte) v;
            Files.write(file, all, StandardOpenOption.WRITE);
            UnsupportedFormatVersionException e = assertThrows(UnsupportedFormatVersionException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertEquals(2, e.version());
            assertEquals(third.offset(), e.offset());
            assertTrue(e.getMessage().contains("upgrade"), e.getMessage());
            try (MessageStream s = store.read(ReadRequest.all("log").skippingUnreadable())) {
                assertEquals("first", StoreFixture.text(s.next()));
                assertEquals("second", StoreFixture.text(s.next()));
                assertEquals(null, s.next());
                assertEquals(ReadProblem.Kind.UNSUPPORTED_VERSION, s.problems().get(0).kind());
            }
        }
    }

    @Test
    void aCorruptLockFileIsAClearError() throws Exception {
        Path root = freshDir("bad-lock");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            List<Appended> acks = threeSealedFrames(store, time);
            Path lock = LogGeometry.bucketDir(root.resolve("log"), Micros.of(acks.get(0).bucket())).resolve("lock");
            String text = Files.readString(lock).replace("files 1", "files 2");
            Files.writeString(lock, text, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
            CorruptRecordException e = assertThrows(CorruptRecordException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertEquals("lock", e.file());
            assertTrue(e.getMessage().contains("checksum"), e.getMessage());
        }
    }

    @Test
    void aTornTailInASealedBucketIsDroppedAndReported() throws Exception {
        Path root = freshDir("bad-torn");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended a = store.append(req("log", List.of(), "whole"));
            Appended b = store.append(req("log", List.of(), "also whole"));
            Path file = LogGeometry.bucketDir(root.resolve("log"), Micros.of(a.bucket())).resolve(a.file());
            // The first half of a copy of the last frame, as a crash in the middle of a write leaves it.
            byte[] all = Files.readAllBytes(file);
            byte[] half = Arrays.copyOfRange(all, (int) b.offset(), (int) b.offset() + b.length() / 2);
            Files.write(file, half, StandardOpenOption.APPEND);
            time.advance(Duration.ofSeconds(3));
            store.sealThrough("log", T0, T0.plusSeconds(1));
            try (MessageStream s = store.read(ReadRequest.all("log"))) {
                assertEquals("whole", StoreFixture.text(s.next()));
                assertEquals("also whole", StoreFixture.text(s.next()));
                assertEquals(null, s.next());
                assertEquals(1, s.problems().size());
                assertEquals(ReadProblem.Kind.TORN_TAIL, s.problems().get(0).kind());
                assertEquals(b.offset() + b.length(), s.problems().get(0).offset());
            }
        }
    }
}
