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
 * nothing else. No rename, move, copy, replace or truncate, and no delete but the unlink of a prepared file or of a
 * retired bucket's file, and the {@code rmdir} of an emptied bucket directory and of the empty time directories above
 * it; no existence check other than listing the parent directory (which revalidates NFS's cached directory entries) or
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
 *   <li>{@link #chmod};
 *   <li>{@link #unlinkPrepared} a prepared file that no reader opens (a name ending in {@code .<16 hex digits>});
 *   <li>{@link #unlinkBucketFile} a file of a bucket directory whose messages a published segment holds (retention);
 *   <li>{@link #unlinkSupersededSnapshot} a published view snapshot that two newer readable ones supersede;
 *   <li>{@link #removeEmptyLayoutDirectory} ({@code rmdir}): an emptied bucket directory, or an empty
 *       year/month/day/hour/minute directory above one (retention).
 * </ol>
 *
 * <p>Works on {@link Path}s of any provider, so tests can record and police every call. Counts operations by kind.
 * Thread-safe.
 */
public final class NfsSafeFiles {

    /** The operations, as counted. */
    public enum Op { LIST, MKDIR, CREATE_NEW, LINK, OPEN_APPEND, OPEN_STAT, OPEN_READ, CHMOD, UNLINK, UNLINK_BUCKET, UNLINK_SNAPSHOT,
        RMDIR }

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

    /**
     * Unlinks {@code prepared}, a file written under a unique prepared name ({@code <anything>.<16 hex digits>}) that
     * readers never open; returns false if it was already gone. Safe on NFS: readers know only published names, and
     * a published name linked to the same file keeps it (the unlink removes one name, not the data); a retried
     * {@code REMOVE} that finds the name gone is the same outcome.
     *
     * @throws IllegalArgumentException if the name is not a prepared file's
     */
    public boolean unlinkPrepared(Path prepared) throws IOException {
        if (!isPreparedName(prepared.getFileName().toString())) {
            throw new IllegalArgumentException("only a prepared file (a name ending in .<16 hex digits>) may be "
                    + "unlinked; refused for " + prepared);
        }
        counts.get(Op.UNLINK).increment();
        try {
            Files.delete(prepared);
            return true;
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        }
    }

    /**
     * Unlinks {@code file}, a file of a bucket directory ({@code <ss>.<uuuuuu>}): a data file
     * ({@code <writer>.<n>.data}), {@code prelock}, {@code lock} or a prepared lock file
     * ({@code lock.<sealer>.<16 hex digits>}); returns false if it was already gone. Only the bag store's retention
     * calls it, for a sealed bucket that a published segment holds, verified, after the retention delay (see
     * ARCHITECTURE.md, "Retention"). Safe on NFS: the directory is not removed; a reader that opened the file before
     * keeps reading it (POSIX keeps an open file's data; an NFS client renames a file it has open instead of removing
     * it); a reader that lists or opens afterwards finds the name gone and reads the segment; a retried
     * {@code REMOVE} that finds the name gone is the same outcome.
     *
     * @throws IllegalArgumentException if the name is not one of a bucket's files, or its directory not a bucket's
     */
    public boolean unlinkBucketFile(Path file) throws IOException {
        Path parent = file.getParent();
        if (parent == null || parent.getFileName() == null || !isBucketDirName(parent.getFileName().toString())
                || !isBucketFileName(file.getFileName().toString())) {
            throw new IllegalArgumentException("only a bucket's data file, prelock, lock or prepared lock file, in a "
                    + "bucket directory (<ss>.<uuuuuu>), may be unlinked by retention; refused for " + file);
        }
        counts.get(Op.UNLINK_BUCKET).increment();
        try {
            Files.delete(file);
            return true;
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        }
    }

    /**
     * Unlinks {@code file}, a published view snapshot ({@code views/<view>/<boundary>-<16 hex>.snapshot}); returns
     * false if it was already gone. Only a view build calls it, for the snapshots of its version older than the one
     * it started from, once it has published a newer one (see FORMAT.md, "View snapshot file"). Safe on NFS: a
     * reader that opened the file before keeps reading it; a reader that listed the name and opens it afterwards
     * finds it gone and takes the next snapshot it listed, or lists again; a retried {@code REMOVE} that finds the
     * name gone is the same outcome.
     *
     * @throws IllegalArgumentException if the name is not a published snapshot's, or its directory not a view's
     */
    public boolean unlinkSupersededSnapshot(Path file) throws IOException {
        if (!isSnapshotPath(file)) {
            throw new IllegalArgumentException("only a published view snapshot (views/<view>/<boundary>-<16 hex "
                    + "digits>.snapshot) may be unlinked as superseded; refused for " + file);
        }
        counts.get(Op.UNLINK_SNAPSHOT).increment();
        try {
            Files.delete(file);
            return true;
        } catch (java.nio.file.NoSuchFileException e) {
            return false;
        }
    }

    /** Whether {@code file} is a published view snapshot's path: {@code views/<view>/<digits>-<16 hex>.snapshot}. */
    public static boolean isSnapshotPath(Path file) {
        Path name = file.getFileName();
        Path view = file.getParent();
        Path views = view == null ? null : view.getParent();
        if (name == null || views == null || views.getFileName() == null
                || !views.getFileName().toString().equals("views")) {
            return false;
        }
        String n = name.toString();
        int dash = n.indexOf('-');
        if (!n.endsWith(".snapshot") || dash <= 0 || dash > 19 || n.length() != dash + 1 + 16 + 9) {
            return false;
        }
        for (int i = 0; i < n.length() - 9; i++) {
            char c = n.charAt(i);
            boolean ok = i < dash ? c >= '0' && c <= '9' : i == dash ? c == '-' : c >= '0' && c <= '9' || c >= 'a'
                    && c <= 'f';
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /**
     * Removes {@code dir} if it is empty ({@code rmdir(2)}, which never removes a directory that holds anything):
     * a bucket directory ({@code <ss>.<uuuuuu>}) whose files retention removed, or a time directory of the layout
     * ({@code <yyyy>}, {@code <MM>}, {@code <dd>}, {@code <HH>}, {@code <mm>}) above one. Returns false if it is not
     * empty or already gone. Only the bag store's retention calls it, bottom up, after emptying a bucket (see
     * ARCHITECTURE.md, "Retention"). Safe on NFS: {@code rmdir} is atomic on the server and fails on a directory that
     * is not empty, so a file created in it concurrently is never lost; a reader that lists the directory afterwards
     * finds it gone, which it reads like an emptied bucket (it continues from the segment); a writer or sealer that
     * creates it again (only for a range sealed by hand, or a parent of a current bucket) retries its {@code mkdir}s
     * from the log directory down; a retried {@code RMDIR} that finds the name gone is the outcome wanted.
     *
     * @throws IllegalArgumentException if the name is not one of the layout's directories
     */
    public boolean removeEmptyLayoutDirectory(Path dir) throws IOException {
        Path name = dir.getFileName();
        if (name == null || !isLayoutDirName(name.toString())) {
            throw new IllegalArgumentException("only an empty bucket directory (<ss>.<uuuuuu>) or an empty time "
                    + "directory of the layout (<yyyy>, <MM>, <dd>, <HH>, <mm>) may be removed; refused for " + dir);
        }
        counts.get(Op.RMDIR).increment();
        try {
            Files.delete(dir);
            return true;
        } catch (java.nio.file.NoSuchFileException | java.nio.file.DirectoryNotEmptyException e) {
            return false;
        } catch (java.nio.file.FileSystemException e) {
            // EEXIST is how some systems (and NFS servers) say ENOTEMPTY.
            if (e.getReason() != null && e.getReason().toLowerCase(java.util.Locale.ROOT).contains("exists")) {
                return false;
            }
            throw e;
        }
    }

    /** Whether {@code name} is a directory name of the bucket layout: a bucket's, or 2 or 4 digits. */
    public static boolean isLayoutDirName(String name) {
        if (isBucketDirName(name)) {
            return true;
        }
        if (name.length() != 2 && name.length() != 4) {
            return false;
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code name} is a bucket directory's: two digits, a dot, six digits. */
    public static boolean isBucketDirName(String name) {
        if (name.length() != 9 || name.charAt(2) != '.') {
            return false;
        }
        for (int i = 0; i < 9; i++) {
            char c = name.charAt(i);
            if (i != 2 && (c < '0' || c > '9')) {
                return false;
            }
        }
        return true;
    }

    /**
     * Whether {@code name} is one of a bucket's files: {@code prelock}, {@code lock}, {@code lock.<id>.<16 hex>} or
     * {@code <writer>.<n>.data} (writer of letters, digits, {@code -} and {@code _}; {@code n} decimal).
     */
    public static boolean isBucketFileName(String name) {
        if (name.equals("prelock") || name.equals("lock")) {
            return true;
        }
        if (name.startsWith("lock.")) {
            return isPreparedName(name) && name.length() > 5 + 17 && idChars(name, 5, name.length() - 17);
        }
        if (!name.endsWith(".data")) {
            return false;
        }
        int end = name.length() - 5;
        int dot = name.lastIndexOf('.', end - 1);
        if (dot <= 0 || dot == end - 1 || !idChars(name, 0, dot)) {
            return false;
        }
        for (int i = dot + 1; i < end; i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    private static boolean idChars(String s, int from, int to) {
        if (from >= to) {
            return false;
        }
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (!(Character.isLetterOrDigit(c) && c < 128 || c == '-' || c == '_')) {
                return false;
            }
        }
        return true;
    }

    /** Whether {@code name} is a prepared file's: it ends in a dot and 16 lowercase hex digits. */
    public static boolean isPreparedName(String name) {
        int n = name.length();
        if (n < 18 || name.charAt(n - 17) != '.') {
            return false;
        }
        for (int i = n - 16; i < n; i++) {
            char c = name.charAt(i);
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
                return false;
            }
        }
        return true;
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
