package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.readAll;
import static org.leasehold.store.StoreFixture.req;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The lock file as a reader meets it ({@link Sealer#readLock}): one that belongs to another bucket or log, one of a
 * newer format, and the size limit of the small files.
 */
class SealedLockTest {

    private static Path lockOf(Path root, String log, java.time.Instant bucket) {
        return LogGeometry.bucketDir(root.resolve(log), Micros.of(bucket)).resolve(Names.LOCK);
    }

    private static void replace(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
    }

    /** Two sealed buckets of "log" ([T0, T0 + 1 s) and the next) and one of "other" at T0. */
    private static FileBagStore sealedBuckets(Path root, ManualTimeSource time) throws Exception {
        FileBagStore store = FileBagStore.open(config(root).build(), time);
        store.append(req("log", List.of(), "first"));
        store.append(req("other", List.of(), "elsewhere"));
        time.set(T0.plusMillis(1_100));
        store.append(req("log", List.of(), "second"));
        time.advance(Duration.ofSeconds(3));
        store.sealThrough("log", T0, T0.plusSeconds(2));
        store.sealThrough("other", T0, T0.plusSeconds(1));
        return store;
    }

    @Test
    void aLockFileCopiedFromAnotherBucketOrLogIsRefusedAsCorrupt() throws Exception {
        Path root = freshDir("lock-copied");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = sealedBuckets(root, time)) {
            Path lock = lockOf(root, "log", T0);
            byte[] own = Files.readAllBytes(lock);
            replace(lock, Files.readAllBytes(lockOf(root, "log", T0.plusSeconds(1))));
            CorruptRecordException bucket = assertThrows(CorruptRecordException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertEquals(Names.LOCK, bucket.file());
            assertTrue(bucket.getMessage().contains("describes bucket " + Micros.of(T0.plusSeconds(1))
                    + " of log 'log': it was copied from elsewhere"), bucket.getMessage());

            replace(lock, Files.readAllBytes(lockOf(root, "other", T0)));
            CorruptRecordException log = assertThrows(CorruptRecordException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertTrue(log.getMessage().contains("describes bucket " + Micros.of(T0) + " of log 'other'"),
                    log.getMessage());

            replace(lock, own);
            assertEquals(2, readAll(store, ReadRequest.all("log")).size(), "its own lock file reads again");
        }
    }

    @Test
    void aLockFileOfANewerFormatAsksForANewerReader() throws Exception {
        Path root = freshDir("lock-newer");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = sealedBuckets(root, time)) {
            byte[] body = "leasehold-lock 2\nsomething new\n".getBytes(StandardCharsets.US_ASCII);
            CRC32C crc = new CRC32C();
            crc.update(body);
            replace(lockOf(root, "log", T0), (new String(body, StandardCharsets.US_ASCII)
                    + String.format("crc32c %08x\n", crc.getValue())).getBytes(StandardCharsets.US_ASCII));
            UnsupportedFormatVersionException e = assertThrows(UnsupportedFormatVersionException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertEquals(2, e.version());
            assertEquals(Names.LOCK, e.file());
            assertTrue(e.getMessage().contains("is unreadable: the lock file is in format 'leasehold-lock 2'"),
                    e.getMessage());
            assertTrue(e.getMessage().endsWith("upgrade this reader"), e.getMessage());

            replace(lockOf(root, "log", T0), "leasehold-lock 1\ncrc32c 00000000\n".getBytes(StandardCharsets.US_ASCII));
            CorruptRecordException corrupt = assertThrows(CorruptRecordException.class,
                    () -> readAll(store, ReadRequest.all("log")));
            assertTrue(corrupt.getMessage().contains("is corrupt: the lock file fails its checksum"),
                    corrupt.getMessage());
        }
    }

    @Test
    void aSmallFileIsReadWholeUpToItsLimitAndRefusedOneByteOver() throws Exception {
        Path dir = freshDir("lock-small");
        NfsSafeFiles fs = new NfsSafeFiles();
        Path file = dir.resolve("small");
        byte[] bytes = "0123456789".getBytes(StandardCharsets.US_ASCII);
        Files.write(file, bytes);
        assertArrayEquals(bytes, Sealer.readSmall(fs, file, 10));
        IOException e = assertThrows(IOException.class, () -> Sealer.readSmall(fs, file, 9));
        assertEquals(file + " is 10 bytes; more than the 9 expected", e.getMessage());
        Files.write(dir.resolve("empty"), new byte[0]);
        assertArrayEquals(new byte[0], Sealer.readSmall(fs, dir.resolve("empty"), 0));
    }
}
