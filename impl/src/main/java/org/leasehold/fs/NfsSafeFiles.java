package org.leasehold.fs;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

/**
 * The only way Leasehold touches a shared file system (the bag store, the adapter's journal and ownership files, time
 * marks): the operations that behave unsurprisingly on NFS (close-to-open consistency) and on any POSIX mount, and
 * nothing else. No rename, move, copy, replace, delete or truncate; no
 * existence check other than listing the parent directory (which revalidates NFS's cached directory entries) or
 * trying to create.
 *
 * <ol>
 *   <li>{@link #list} a directory;
 *   <li>{@link #createDirectory} exclusively;
 *   <li>{@link #createNew} a file exclusively ({@code O_CREAT|O_EXCL});
 *   <li>{@link #link} a prepared file to a new name ({@code link(2)}, fails if the name exists);
 *   <li>{@link #openForAppend} an existing single-writer file (the caller writes at its size, then forces or closes);
 *   <li>{@link #openAndSize} (open, then the size of the open file);
 *   <li>{@link #openForRead};
 *   <li>{@link #chmod}.
 * </ol>
 *
 * <p>Works on {@link Path}s of any provider, so tests can record and police every call. Counts operations by kind.
 * Thread-safe.
 */
public final class NfsSafeFiles {

    /** The operations, as counted. */
    public enum Op { LIST, MKDIR, CREATE_NEW, LINK, OPEN_APPEND, OPEN_STAT, OPEN_READ, CHMOD }

    private final Map<Op, LongAdder> counts = new EnumMap<>(Op.class);

    public NfsSafeFiles() {
        for (Op op : Op.values()) {
            counts.put(op, new LongAdder());
        }
    }

    /**
     * The names in {@code dir}, in no particular order. Opening the directory revalidates a network client's cached
     * entries, so a name created by another machine before this call is seen.
     *
     * @throws java.nio.file.NoSuchFileException if {@code dir} does not exist
     */
    public List<String> list(Path dir) throws IOException {
        counts.get(Op.LIST).increment();
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                names.add(p.getFileName().toString());
            }
        }
        return names;
    }

    /** Creates {@code dir}; returns false if the name already exists (as anything). */
    public boolean createDirectory(Path dir) throws IOException {
        counts.get(Op.MKDIR).increment();
        try {
            Files.createDirectory(dir);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /**
     * Creates {@code file}, which must not exist, and opens it for writing.
     *
     * @throws FileAlreadyExistsException if the name exists
     */
    public FileChannel createNew(Path file) throws IOException {
        counts.get(Op.CREATE_NEW).increment();
        return FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    }

    /** Links the existing, fully written {@code prepared} file as {@code name}; returns false if {@code name} exists. */
    public boolean link(Path name, Path prepared) throws IOException {
        counts.get(Op.LINK).increment();
        try {
            Files.createLink(name, prepared);
            return true;
        } catch (FileAlreadyExistsException e) {
            return false;
        }
    }

    /** Opens an existing file for writing (never creates or truncates); the caller writes at its size. */
    public FileChannel openForAppend(Path file) throws IOException {
        counts.get(Op.OPEN_APPEND).increment();
        return FileChannel.open(file, StandardOpenOption.WRITE);
    }

    /** Opens an existing file and returns its size, read from the open file (fresh attributes on NFS). */
    public long openAndSize(Path file) throws IOException {
        counts.get(Op.OPEN_STAT).increment();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            return ch.size();
        }
    }

    /** Opens an existing file for reading. */
    public FileChannel openForRead(Path file) throws IOException {
        counts.get(Op.OPEN_READ).increment();
        return FileChannel.open(file, StandardOpenOption.READ);
    }

    /** Sets the POSIX permissions of {@code path}. */
    public void chmod(Path path, Set<PosixFilePermission> permissions) throws IOException {
        counts.get(Op.CHMOD).increment();
        Files.setPosixFilePermissions(path, permissions);
    }

    /** The number of operations of each kind so far. */
    public Map<Op, Long> counts() {
        Map<Op, Long> m = new EnumMap<>(Op.class);
        for (Map.Entry<Op, LongAdder> e : counts.entrySet()) {
            m.put(e.getKey(), e.getValue().sum());
        }
        return m;
    }

    /** The total number of operations so far. */
    public long total() {
        long t = 0;
        for (LongAdder a : counts.values()) {
            t += a.sum();
        }
        return t;
    }
}
