package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.SealReport;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.LockFile;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The sealer on its own, on a real directory: a missing bucket left alone or created and sealed empty, the lock file's
 * entries (sorted, only data files, this process's own sizes where given), what it records about the sealing, and
 * another sealer's lock file appearing between its prelock and its second listing.
 */
class SealerTest {
    private static final LogGeometry G = new LogGeometry(1_000_000, 2_000_000, 500_000);

    @Test
    void aMissingBucketIsLeftAloneOrCreatedWithItsParentsAndSealedEmpty() throws Exception {
        Path root = freshDir("sealer-missing");
        LogHandle log = new LogHandle("log", root.resolve("log"), G);
        Files.createDirectories(log.dir());
        ManualTimeSource time = new ManualTimeSource(T0.plusSeconds(5));
        Sealer sealer = new Sealer(new NfsSafeFiles(), "s-1", time);
        long start = Micros.of(T0);
        assertNull(sealer.seal(log, start, false, null), "not asked to create it");
        assertFalse(Files.exists(log.bucketDir(start)));
        assertFalse(Files.exists(log.dir().resolve("2026")), "nor any parent");

        Sealer.Result r = sealer.seal(log, start, true, null);
        assertEquals(SealReport.Outcome.SEALED, r.outcome());
        assertEquals(List.of(), r.lock().files());
        assertEquals("s-1", r.lock().sealer());
        assertEquals(Micros.of(T0.plusSeconds(5)), r.lock().sealedAt(), "the sealer's clock when it listed");
        assertEquals(start, r.lock().bucketStart());
        assertEquals(1_000_000, r.lock().widthMicros());
        assertEquals("log", r.lock().log());
        assertTrue(Files.exists(log.bucketDir(start).resolve(Names.LOCK)));
        assertEquals(r.lock(), sealer.readLock(log, start));
        assertEquals(SealReport.Outcome.ALREADY_SEALED, sealer.seal(log, start, false, null).outcome());
    }

    @Test
    void theLockListsOnlyDataFilesSortedByNameWithThisProcesssOwnSizesWhereGiven() throws Exception {
        Path root = freshDir("sealer-entries");
        LogHandle log = new LogHandle("log", root.resolve("log"), G);
        long start = Micros.of(T0);
        Path dir = log.bucketDir(start);
        Files.createDirectories(dir);
        List<String> names = List.of("w-e.0.data", "w-a.3.data", "w-d.0.data", "w-a.10.data", "w-c.1.data",
                "w-b.0.data");
        for (int i = 0; i < names.size(); i++) {
            Files.write(dir.resolve(names.get(i)), new byte[10 + i]);
        }
        Files.write(dir.resolve("lock.other.0123"), new byte[3]);
        Files.write(dir.resolve("notes.txt"), new byte[3]);
        ManualTimeSource time = new ManualTimeSource(T0.plusSeconds(3));
        Sealer sealer = new Sealer(new NfsSafeFiles(), "w-a", time);
        Sealer.Result r = sealer.seal(log, start, false, Map.of("w-a.3.data", 4L, "w-a.10.data", 0L));
        assertEquals(SealReport.Outcome.SEALED, r.outcome());
        assertEquals(List.of(new LockFile.Entry("w-a.10.data", 0), new LockFile.Entry("w-a.3.data", 4),
                new LockFile.Entry("w-b.0.data", 15), new LockFile.Entry("w-c.1.data", 14),
                new LockFile.Entry("w-d.0.data", 12), new LockFile.Entry("w-e.0.data", 10)), r.lock().files());
        assertEquals(55, r.lock().totalBytes());
        assertTrue(Files.exists(dir.resolve(Names.PRELOCK)));
        String prelock = Files.readString(dir.resolve(Names.PRELOCK));
        assertEquals("leasehold-prelock 1\nsealer w-a\nat " + Micros.of(T0.plusSeconds(3)) + "\n", prelock);
    }

    /** A log whose bucket at T0 holds one data file, {@code w-a.0.data}, of 7 bytes, and nothing else. */
    private static LogHandle bucketWithOneDataFileOf7Bytes(String test) throws Exception {
        LogHandle log = new LogHandle("log", freshDir(test).resolve("log"), G);
        Path dir = log.bucketDir(Micros.of(T0));
        Files.createDirectories(dir);
        Files.write(dir.resolve("w-a.0.data"), new byte[7]);
        return log;
    }

    @Test
    void aSecondSealerThatFindsAPrelockHelpsAndWritesItsOwnLockFileWhichTheFirstLinkWins() throws Exception {
        LogHandle log = bucketWithOneDataFileOf7Bytes("sealer-help");
        long start = Micros.of(T0);
        Path dir = log.bucketDir(start);
        Files.writeString(dir.resolve(Names.PRELOCK), "leasehold-prelock 1\nsealer w-z\nat 1\n");
        ManualTimeSource time = new ManualTimeSource(T0.plusSeconds(3));
        Sealer.Result r = new Sealer(new NfsSafeFiles(), "w-b", time).seal(log, start, false, null);
        assertEquals(SealReport.Outcome.SEALED, r.outcome(), "nobody linked a lock file before it");
        assertEquals("leasehold-prelock 1\nsealer w-z\nat 1\n", Files.readString(dir.resolve(Names.PRELOCK)),
                "another sealer's prelock is left as it is");
        assertEquals(List.of(new LockFile.Entry("w-a.0.data", 7)), r.lock().files());
    }

    @Test
    void aSealerThatFindsAnotherSealersLockOnceItsOwnPrelockIsWrittenReturnsThatLockAndWritesNone() throws Exception {
        LogHandle log = bucketWithOneDataFileOf7Bytes("sealer-lock-after-prelock");
        long start = Micros.of(T0);
        Path dir = log.bucketDir(start);
        LockFile theirs = new LockFile("log", start, 1_000_000, "w-z", Micros.of(T0.plusSeconds(2)),
                List.of(new LockFile.Entry("w-a.0.data", 7)));
        ManualTimeSource manual = new ManualTimeSource(T0.plusSeconds(3));
        AtomicBoolean first = new AtomicBoolean(true);
        // The sealer first reads its clock while writing its prelock: another sealer links its lock file just then,
        // between this sealer's first listing and its second.
        TimeSource racing = new TimeSource() {
            @Override
            public Clock clock() {
                return manual.clock();
            }

            @Override
            public long nowMicros() {
                if (first.getAndSet(false)) {
                    try {
                        Files.write(dir.resolve(Names.LOCK), theirs.encode());
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
                return manual.nowMicros();
            }

            @Override
            public Timer schedule(long atMicros, Runnable task) {
                return manual.schedule(atMicros, task);
            }
        };
        Sealer.Result r = new Sealer(new NfsSafeFiles(), "w-b", racing).seal(log, start, false, null);
        assertFalse(first.get(), "the race happened");
        assertEquals(SealReport.Outcome.HELPED, r.outcome());
        assertEquals(theirs, r.lock());
        try (Stream<Path> files = Files.list(dir)) {
            assertEquals(List.of(), files.map(f -> f.getFileName().toString())
                    .filter(n -> n.startsWith(Names.LOCK_PREPARED_PREFIX)).toList(), "no lock file of its own prepared");
        }
    }
}
