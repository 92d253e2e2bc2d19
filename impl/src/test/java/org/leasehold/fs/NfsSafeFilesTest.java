package org.leasehold.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;

/**
 * The file-system floor on its own: the policed file system the tests run the store and the adapter over refuses
 * everything outside the NFS-safe list; every operation {@link NfsSafeFiles} offers passes it and is counted; a
 * {@link TimeMarkFiles} directory lives with those operations only.
 */
class NfsSafeFilesTest {
    private static final Path BASE = Paths.get("target", "fs-tests").toAbsolutePath();

    private static Path freshDir(String name) throws IOException {
        Path d = BASE.resolve(name);
        if (Files.exists(d)) {
            try (Stream<Path> all = Files.walk(d)) {
                for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Files.createDirectories(d);
        return d;
    }

    @Test
    void thePolicedFileSystemRefusesWhatNoPartMayDo() throws Exception {
        Path real = freshDir("police-self-test");
        Files.writeString(real.resolve("a"), "x");
        PolicedFileSystem fs = new PolicedFileSystem(false);
        Path a = fs.wrap(real.resolve("a"));
        Path b = fs.wrap(real.resolve("b"));
        assertThrows(UnsupportedOperationException.class, () -> Files.move(a, b), "rename");
        assertThrows(UnsupportedOperationException.class, () -> Files.move(a, b, StandardCopyOption.ATOMIC_MOVE));
        assertThrows(UnsupportedOperationException.class, () -> Files.move(a, b, StandardCopyOption.REPLACE_EXISTING));
        assertThrows(UnsupportedOperationException.class, () -> Files.copy(a, b), "copy");
        assertThrows(UnsupportedOperationException.class, () -> Files.delete(a), "delete");
        Files.createDirectories(real.resolve("07.250000").resolve("lock"));
        assertThrows(UnsupportedOperationException.class, () -> Files.delete(fs.wrap(real.resolve("07.250000")
                .resolve("lock"))), "rmdir, even under a bucket file's name");
        assertThrows(UnsupportedOperationException.class, () -> Files.deleteIfExists(a));
        assertThrows(UnsupportedOperationException.class, () -> Files.exists(a), "stat-based existence check");
        assertThrows(UnsupportedOperationException.class, () -> Files.size(a), "stat without open");
        assertThrows(UnsupportedOperationException.class, () -> Files.newByteChannel(a, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING), "truncate");
        assertThrows(UnsupportedOperationException.class, () -> Files.newByteChannel(b, StandardOpenOption.WRITE,
                StandardOpenOption.CREATE), "create without O_EXCL replaces nothing but is not in the list");
        assertThrows(UnsupportedOperationException.class, () -> Files.writeString(a, "y"), "write with truncate");
        assertThrows(UnsupportedOperationException.class, () -> Files.createSymbolicLink(b, a));
        assertEquals(13, fs.violations().size(), fs.violations().toString());
        assertEquals("x", Files.readString(real.resolve("a")), "nothing was changed");
    }

    @Test
    void everyOperationOfTheFloorPassesThePoliceAndIsCounted() throws Exception {
        Path real = freshDir("floor-operations");
        PolicedFileSystem police = new PolicedFileSystem(false);
        Path root = police.wrap(real);
        NfsSafeFiles files = new NfsSafeFiles();

        Path dir = root.resolve("d");
        assertTrue(files.createDirectory(dir));
        assertFalse(files.createDirectory(dir), "the name exists");
        Path prepared = dir.resolve("prepared");
        try (FileChannel ch = files.createNew(prepared)) {
            ch.write(ByteBuffer.wrap("abc".getBytes(StandardCharsets.UTF_8)));
            ch.force(true);
        }
        assertThrows(FileAlreadyExistsException.class, () -> files.createNew(prepared).close());
        assertTrue(files.link(dir.resolve("final"), prepared));
        assertFalse(files.link(dir.resolve("final"), prepared), "the name exists");
        try (FileChannel ch = files.openForAppend(dir.resolve("final"))) {
            ch.write(ByteBuffer.wrap("de".getBytes(StandardCharsets.UTF_8)), ch.size());
        }
        assertEquals(5, files.openAndSize(dir.resolve("final")));
        try (FileChannel ch = files.openForRead(prepared)) {
            assertEquals(5, ch.size(), "a link is the same file");
        }
        files.chmod(prepared, PosixFilePermissions.fromString("r--r--r--"));
        Path spare = dir.resolve("spare.0123456789abcdef");
        files.createNew(spare).close();
        assertTrue(files.unlinkPrepared(spare));
        assertFalse(files.unlinkPrepared(spare), "already gone");
        assertThrows(IllegalArgumentException.class, () -> files.unlinkPrepared(dir.resolve("final")),
                "a published name is never unlinked");
        // Retention's unlink: only a bucket's files, only in a bucket directory, never the directory.
        Path bucket = root.resolve("07.250000");
        assertTrue(files.createDirectory(bucket));
        for (String n : List.of("w-a.0.data", "w_b-1.12.data", "prelock", "lock", "lock.w-a.0123456789abcdef")) {
            files.createNew(bucket.resolve(n)).close();
            assertTrue(files.unlinkBucketFile(bucket.resolve(n)), n);
        }
        assertFalse(files.unlinkBucketFile(bucket.resolve("lock")), "already gone");
        files.createNew(bucket.resolve("notes")).close();
        files.createNew(dir.resolve("w-a.0.data")).close();
        for (Path p : List.of(bucket.resolve("notes"), bucket.resolve("w.a.0.data"), bucket.resolve("w-a.x.data"),
                bucket.resolve("lock.w-a.0123"), bucket.resolve("descriptor"), dir.resolve("w-a.0.data"),
                root.resolve("07.25000").resolve("lock"), bucket)) {
            assertThrows(IllegalArgumentException.class, () -> files.unlinkBucketFile(p), p.toString());
        }
        assertEquals(Set.of("notes"), Set.copyOf(files.list(bucket)));
        // Retention's rmdir: only an empty directory of the layout (a bucket's, or 2 or 4 digits).
        assertFalse(files.removeEmptyLayoutDirectory(bucket), "not empty: refused by rmdir itself, nothing removed");
        Path minute = root.resolve("59");
        assertTrue(files.createDirectory(minute));
        Path emptied = minute.resolve("01.000000");
        assertTrue(files.createDirectory(emptied));
        assertFalse(files.removeEmptyLayoutDirectory(minute), "holds a bucket directory");
        assertTrue(files.removeEmptyLayoutDirectory(emptied));
        assertFalse(files.removeEmptyLayoutDirectory(emptied), "already gone");
        assertTrue(files.removeEmptyLayoutDirectory(minute));
        for (Path p : List.of(dir, root.resolve("123"), root.resolve("07.25000"), dir.resolve("prepared"))) {
            assertThrows(IllegalArgumentException.class, () -> files.removeEmptyLayoutDirectory(p), p.toString());
        }
        assertEquals(Set.of("d", "07.250000"), Set.copyOf(files.list(root)));
        assertEquals(Set.of("prepared", "final", "w-a.0.data"), Set.copyOf(files.list(dir)));

        // A view build's unlink: only a published snapshot's name, only in a view's directory under views/.
        Path view = root.resolve("views").resolve("tally");
        assertTrue(files.createDirectory(root.resolve("views")));
        assertTrue(files.createDirectory(view));
        Path old = view.resolve("1764000000000000-0123456789abcdef.snapshot");
        files.createNew(old).close();
        assertTrue(files.unlinkSupersededSnapshot(old));
        assertFalse(files.unlinkSupersededSnapshot(old), "already gone");
        files.createNew(view.resolve("notes")).close();
        for (Path p : List.of(view.resolve("notes"), view.resolve("x1-0123456789abcdef.snapshot"),
                view.resolve("1-0123456789ABCDEF.snapshot"), view.resolve("1-0123456789abcde.snapshot"),
                dir.resolve("1-0123456789abcdef.snapshot"), view)) {
            assertThrows(IllegalArgumentException.class, () -> files.unlinkSupersededSnapshot(p), p.toString());
        }
        assertEquals(Set.of("notes"), Set.copyOf(files.list(view)));

        assertEquals(List.of(), police.violations());
        assertEquals(Set.of("LIST", "MKDIR", "CREATE_NEW", "LINK", "OPEN_WRITE", "OPEN_READ", "CHMOD", "UNLINK",
                "UNLINK_BUCKET", "UNLINK_SNAPSHOT", "RMDIR"), police.kinds());
        Map<NfsSafeFiles.Op, Long> expected = new EnumMap<>(NfsSafeFiles.Op.class);
        expected.put(NfsSafeFiles.Op.LIST, 4L);
        expected.put(NfsSafeFiles.Op.MKDIR, 7L);
        expected.put(NfsSafeFiles.Op.CREATE_NEW, 12L);
        expected.put(NfsSafeFiles.Op.LINK, 2L);
        expected.put(NfsSafeFiles.Op.OPEN_APPEND, 1L);
        expected.put(NfsSafeFiles.Op.OPEN_STAT, 1L);
        expected.put(NfsSafeFiles.Op.OPEN_READ, 1L);
        expected.put(NfsSafeFiles.Op.CHMOD, 1L);
        expected.put(NfsSafeFiles.Op.UNLINK, 2L);
        expected.put(NfsSafeFiles.Op.UNLINK_BUCKET, 6L);
        expected.put(NfsSafeFiles.Op.UNLINK_SNAPSHOT, 2L);
        expected.put(NfsSafeFiles.Op.RMDIR, 5L);
        assertEquals(expected, files.counts());
        assertEquals(44, files.total());
    }

    @Test
    void aTimeMarkLivesInADirectoryWithTheFloorsOperationsOnly() throws Exception {
        Path real = freshDir("time-mark");
        PolicedFileSystem police = new PolicedFileSystem(false);
        Path marks = police.wrap(real).resolve("marks");
        NfsSafeFiles files = new NfsSafeFiles();
        long at = Micros.of(Instant.parse("2026-11-22T02:43:10Z"));
        TimeMark.Recorded first = new TimeMark.Recorded(at + 6_000_000, at + 16_000_000, at);
        try (TimeMarkFiles mark = TimeMarkFiles.open(files, marks, false)) {
            assertEquals(null, mark.previous(), "a new directory has no record");
            mark.record(first);
        }
        try (TimeMarkFiles mark = TimeMarkFiles.open(files, marks, false)) {
            assertEquals(first, mark.previous(), "the next incarnation reads the last record");
        }
        assertEquals(List.of(), police.violations());
        assertTrue(Set.of("LIST", "MKDIR", "CREATE_NEW", "OPEN_READ").containsAll(police.kinds()), police.kinds()
                .toString());
    }
}
