package org.leasehold.fs;

import java.io.IOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.CopyOption;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.StandardOpenOption;
import java.nio.file.WatchService;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileAttributeView;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.nio.file.spi.FileSystemProvider;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * A file system that delegates to the default one, records every operation, and refuses every operation outside the
 * NFS-safe list (rename, move, copy, replace, delete, truncate, stat without open, access checks, symbolic links...).
 * Optionally it enforces POSIX mode bits the way the kernel does for a non-root user, since the tests run as root
 * and root ignores them.
 *
 * <p>Allowed: list a directory; create a directory; open with exactly {@code {READ}}, {@code {WRITE}} or
 * {@code {CREATE_NEW, WRITE}}; link; set POSIX permissions; unlink a prepared file (a name ending in
 * {@code .<16 hex digits>}, {@link NfsSafeFiles#unlinkPrepared}).
 */
public final class PolicedFileSystem extends FileSystem {
    private final FileSystem delegate = FileSystems.getDefault();
    private final Provider provider = new Provider();
    private final boolean enforceModeBits;
    private final ConcurrentLinkedQueue<String> operations = new ConcurrentLinkedQueue<>();
    private final ConcurrentLinkedQueue<String> violations = new ConcurrentLinkedQueue<>();

    public PolicedFileSystem(boolean enforceModeBits) {
        this.enforceModeBits = enforceModeBits;
    }

    /** The policed twin of a default-file-system path. */
    public Path wrap(Path real) {
        if (real instanceof PolicedPath) {
            throw new IllegalArgumentException("already policed: " + real);
        }
        return new PolicedPath(this, real);
    }

    /** Every operation, as "KIND path". */
    public List<String> operations() {
        return new ArrayList<>(operations);
    }

    /** The kinds of operation seen. */
    public Set<String> kinds() {
        Set<String> k = new TreeSet<>();
        for (String op : operations) {
            k.add(op.substring(0, op.indexOf(' ')));
        }
        return k;
    }

    /** Refused operations. */
    public List<String> violations() {
        return new ArrayList<>(violations);
    }

    static Path unwrap(Path p) {
        if (p instanceof PolicedPath pp) {
            return pp.delegate;
        }
        throw new IllegalArgumentException("not a policed path: " + p + " (" + p.getClass().getName() + ")");
    }

    private void record(String kind, Path p) {
        operations.add(kind + " " + unwrap(p));
    }

    private UnsupportedOperationException forbid(String what, Path p) {
        String v = what + " " + (p == null ? "" : p.toString());
        violations.add(v);
        return new UnsupportedOperationException("NFS-unsafe operation refused: " + v);
    }

    private void requireWritable(Path real, String what) throws IOException {
        if (!enforceModeBits) {
            return;
        }
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(real);
        if (!perms.contains(PosixFilePermission.OWNER_WRITE)) {
            throw new AccessDeniedException(real.toString(), null, what + ": permission denied (emulated non-root)");
        }
    }

    // ---------------------------------------------------------------------------------------------------- FileSystem

    @Override
    public FileSystemProvider provider() {
        return provider;
    }

    @Override
    public void close() {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean isOpen() {
        return true;
    }

    @Override
    public boolean isReadOnly() {
        return false;
    }

    @Override
    public String getSeparator() {
        return delegate.getSeparator();
    }

    @Override
    public Iterable<Path> getRootDirectories() {
        List<Path> roots = new ArrayList<>();
        for (Path r : delegate.getRootDirectories()) {
            roots.add(wrap(r));
        }
        return roots;
    }

    @Override
    public Iterable<FileStore> getFileStores() {
        throw forbid("getFileStores", null);
    }

    @Override
    public Set<String> supportedFileAttributeViews() {
        return delegate.supportedFileAttributeViews();
    }

    @Override
    public Path getPath(String first, String... more) {
        return wrap(delegate.getPath(first, more));
    }

    @Override
    public PathMatcher getPathMatcher(String syntaxAndPattern) {
        return delegate.getPathMatcher(syntaxAndPattern);
    }

    @Override
    public UserPrincipalLookupService getUserPrincipalLookupService() {
        throw forbid("getUserPrincipalLookupService", null);
    }

    @Override
    public WatchService newWatchService() {
        throw forbid("newWatchService", null);
    }

    // ---------------------------------------------------------------------------------------------------- provider

    private final class Provider extends FileSystemProvider {
        private final FileSystemProvider real = delegate.provider();

        @Override
        public String getScheme() {
            return "policed";
        }

        @Override
        public FileSystem newFileSystem(URI uri, Map<String, ?> env) {
            throw new UnsupportedOperationException();
        }

        @Override
        public FileSystem getFileSystem(URI uri) {
            throw new UnsupportedOperationException();
        }

        @Override
        public Path getPath(URI uri) {
            throw new UnsupportedOperationException();
        }

        private String openKind(Path path, Set<? extends OpenOption> options) throws IOException {
            Set<OpenOption> o = Set.copyOf(options);
            Path r = unwrap(path);
            if (o.equals(Set.of(StandardOpenOption.READ))) {
                return "OPEN_READ";
            }
            if (o.equals(Set.of(StandardOpenOption.WRITE))) {
                requireWritable(r, "open for writing");
                return "OPEN_WRITE";
            }
            if (o.equals(Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE))) {
                if (!Files.exists(r)) {
                    requireWritable(r.getParent(), "create");
                }
                return "CREATE_NEW";
            }
            throw forbid("open" + o, path);
        }

        @Override
        public FileChannel newFileChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs)
                throws IOException {
            String kind = openKind(path, options);
            record(kind, path);
            return real.newFileChannel(unwrap(path), options, attrs);
        }

        @Override
        public SeekableByteChannel newByteChannel(Path path, Set<? extends OpenOption> options,
                FileAttribute<?>... attrs) throws IOException {
            String kind = openKind(path, options);
            record(kind, path);
            return real.newByteChannel(unwrap(path), options, attrs);
        }

        @Override
        public DirectoryStream<Path> newDirectoryStream(Path dir, DirectoryStream.Filter<? super Path> filter)
                throws IOException {
            record("LIST", dir);
            DirectoryStream<Path> ds = real.newDirectoryStream(unwrap(dir), p -> filter.accept(wrap(p)));
            return new DirectoryStream<>() {
                @Override
                public Iterator<Path> iterator() {
                    Iterator<Path> it = ds.iterator();
                    return new Iterator<>() {
                        @Override
                        public boolean hasNext() {
                            return it.hasNext();
                        }

                        @Override
                        public Path next() {
                            return wrap(it.next());
                        }
                    };
                }

                @Override
                public void close() throws IOException {
                    ds.close();
                }
            };
        }

        @Override
        public void createDirectory(Path dir, FileAttribute<?>... attrs) throws IOException {
            record("MKDIR", dir);
            Path r = unwrap(dir);
            if (r.getParent() != null && Files.isDirectory(r.getParent()) && !Files.exists(r)) {
                requireWritable(r.getParent(), "mkdir");
            }
            real.createDirectory(r, attrs);
        }

        @Override
        public void createLink(Path link, Path existing) throws IOException {
            record("LINK", link);
            Path r = unwrap(link);
            if (!Files.exists(r)) {
                requireWritable(r.getParent(), "link");
            }
            real.createLink(r, unwrap(existing));
        }

        @Override
        public void createSymbolicLink(Path link, Path target, FileAttribute<?>... attrs) {
            throw forbid("symlink", link);
        }

        @Override
        public Path readSymbolicLink(Path link) {
            throw forbid("readlink", link);
        }

        @Override
        public void delete(Path path) throws IOException {
            // The three unlinks the floor allows: a prepared file's (NfsSafeFiles.unlinkPrepared), a file of a bucket
            // directory (NfsSafeFiles.unlinkBucketFile, retention) and a superseded view snapshot
            // (NfsSafeFiles.unlinkSupersededSnapshot); and one rmdir: an empty directory of the bucket
            // layout (NfsSafeFiles.removeEmptyLayoutDirectory, retention). Never a directory that holds anything.
            Path name = path.getFileName();
            Path parent = path.getParent();
            Path r = unwrap(path);
            if (name != null && (Files.isDirectory(r) || NfsSafeFiles.isLayoutDirName(name.toString())
                    && !Files.exists(r))) {
                if (!NfsSafeFiles.isLayoutDirName(name.toString())) {
                    throw forbid("rmdir", path);
                }
                // rmdir(2) itself refuses a directory that holds anything (DirectoryNotEmptyException).
                record("RMDIR", path);
                requireWritable(r.getParent(), "rmdir");
                real.delete(r);
                return;
            }
            if (name != null && parent != null && parent.getFileName() != null
                    && NfsSafeFiles.isBucketDirName(parent.getFileName().toString())
                    && NfsSafeFiles.isBucketFileName(name.toString()) && !Files.isDirectory(r)) {
                record("UNLINK_BUCKET", path);
                requireWritable(r.getParent(), "unlink");
                real.delete(r);
                return;
            }
            if (NfsSafeFiles.isSnapshotPath(path) && !Files.isDirectory(r)) {
                record("UNLINK_SNAPSHOT", path);
                real.delete(r);
                return;
            }
            if (name == null || !NfsSafeFiles.isPreparedName(name.toString()) || Files.isDirectory(r)) {
                throw forbid("delete", path);
            }
            record("UNLINK", path);
            real.delete(r);
        }

        @Override
        public boolean deleteIfExists(Path path) {
            throw forbid("deleteIfExists", path);
        }

        @Override
        public void copy(Path source, Path target, CopyOption... options) {
            throw forbid("copy", source);
        }

        @Override
        public void move(Path source, Path target, CopyOption... options) {
            throw forbid("move/rename", source);
        }

        @Override
        public boolean isSameFile(Path path, Path path2) {
            throw forbid("isSameFile", path);
        }

        @Override
        public boolean isHidden(Path path) {
            throw forbid("isHidden", path);
        }

        @Override
        public FileStore getFileStore(Path path) {
            throw forbid("getFileStore", path);
        }

        @Override
        public void checkAccess(Path path, AccessMode... modes) {
            throw forbid("checkAccess (exists/isWritable...)", path);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
            if (type != PosixFileAttributeView.class) {
                throw forbid("attribute view " + type.getSimpleName(), path);
            }
            PosixFileAttributeView view = real.getFileAttributeView(unwrap(path), PosixFileAttributeView.class, options);
            return (V) new PosixFileAttributeView() {
                @Override
                public String name() {
                    return "posix";
                }

                @Override
                public void setPermissions(Set<PosixFilePermission> perms) throws IOException {
                    record("CHMOD", path);
                    view.setPermissions(perms);
                }

                @Override
                public PosixFileAttributes readAttributes() {
                    throw forbid("stat (readAttributes)", path);
                }

                @Override
                public void setGroup(GroupPrincipal group) {
                    throw forbid("chgrp", path);
                }

                @Override
                public UserPrincipal getOwner() {
                    throw forbid("getOwner", path);
                }

                @Override
                public void setOwner(UserPrincipal owner) {
                    throw forbid("chown", path);
                }

                @Override
                public void setTimes(FileTime lastModifiedTime, FileTime lastAccessTime, FileTime createTime) {
                    throw forbid("utimes", path);
                }
            };
        }

        @Override
        public <A extends BasicFileAttributes> A readAttributes(Path path, Class<A> type, LinkOption... options) {
            throw forbid("stat (readAttributes)", path);
        }

        @Override
        public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options) {
            throw forbid("stat (readAttributes)", path);
        }

        @Override
        public void setAttribute(Path path, String attribute, Object value, LinkOption... options) {
            throw forbid("setAttribute " + attribute, path);
        }
    }

    /** All POSIX permissions; for tests that restore a mode. */
    public static Set<PosixFilePermission> all() {
        return EnumSet.allOf(PosixFilePermission.class);
    }
}
