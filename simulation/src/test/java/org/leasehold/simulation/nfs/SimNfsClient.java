package org.leasehold.simulation.nfs;

import java.io.IOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.CopyOption;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
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
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One machine's NFS client of a {@link SimNfsServer}, as a {@link FileSystem}: the store's real code runs on its
 * paths. It caches what real clients cache and revalidates when they do:
 * <ul>
 *   <li>directory entries, positive and negative, on path lookups, trusted for {@link NfsModel#entryLifetime()};
 *       a server reply about a name (exists, created, linked) replaces the entry;
 *   <li>listing a directory revalidates it: the listing comes from the server and replaces the client's entries of
 *       that directory, negative ones included;
 *   <li>close-to-open: opening a file looks its name up again (a positive entry is revalidated; a negative one is
 *       trusted while it lives) and fetches its attributes; the size of an open file comes from those attributes
 *       while they live;
 *   <li>writes stay in the client (dirty) until {@code force} or {@code close} sends them, except that the client may
 *       send a part of them earlier ({@link NfsModel#writebackChance()}); a crash loses what was not sent;
 *   <li>exclusive create, mkdir, link and chmod are decided by the server.
 * </ul>
 * Any operation outside the NFS-safe list (rename, move, copy, delete, stat without open, access checks, truncate,
 * symbolic links) is recorded as refused and fails.
 */
public final class SimNfsClient extends FileSystem {
    private final SimNfsServer server;
    private final NfsHost host;
    private final NfsModel model;
    private final String name;
    private final Provider provider = new Provider();
    private final Map<Long, Map<String, Entry>> entries = new HashMap<>();
    private final Map<Long, Attributes> attributes = new HashMap<>();
    private final Map<Long, Listing> listings = new HashMap<>();
    private final List<SimChannel> open = new ArrayList<>();
    private boolean dead;

    public SimNfsClient(SimNfsServer server, NfsHost host, NfsModel model, String name) {
        this.server = server;
        this.host = host;
        this.model = model;
        this.name = name;
    }

    private record Entry(SimNfsServer.Node node, long expires) {
    }

    private record Attributes(int size, int mode, long expires) {
    }

    private record Listing(List<String> names, long expires) {
    }

    String name() {
        return name;
    }

    NfsHost host() {
        return host;
    }

    NfsModel model() {
        return model;
    }

    SimNfsServer server() {
        return server;
    }

    /** A path of this client. */
    public Path path(String absolute) {
        return SimPath.parse(this, absolute);
    }

    /**
     * The machine crashed: every write not yet sent to the server is lost, every cache is gone, and every later call
     * ends with the machine's crash.
     */
    public void crash() {
        dead = true;
        for (SimChannel c : open) {
            c.lose();
        }
        open.clear();
        entries.clear();
        attributes.clear();
        listings.clear();
    }

    void checkAlive() {
        if (dead) {
            throw host.crashed();
        }
    }

    void closed(SimChannel c) {
        open.remove(c);
    }

    void attributesFetched(SimNfsServer.Node n) {
        attributes.put(n.id, new Attributes(n.size, n.mode, host.now() + model.attributeLifetime()));
    }

    /** The size of an open file: from the cached attributes while they live, else fetched again. */
    int cachedSize(SimNfsServer.Node n) {
        Attributes a = attributes.get(n.id);
        if (a != null && a.expires > host.now()) {
            return a.size;
        }
        attributesFetched(n);
        return n.size;
    }

    // ------------------------------------------------------------------------------------------------ lookups

    private SimNfsServer.Node cachedLookup(SimNfsServer.Node dir, String n) {
        Map<String, Entry> m = entries.computeIfAbsent(dir.id, k -> new HashMap<>());
        Entry e = m.get(n);
        if (e != null && e.expires > host.now()) {
            return e.node;
        }
        return freshLookup(dir, n);
    }

    private SimNfsServer.Node freshLookup(SimNfsServer.Node dir, String n) {
        SimNfsServer.Node found = server.lookup(dir, n);
        remember(dir, n, found);
        return found;
    }

    private void remember(SimNfsServer.Node dir, String n, SimNfsServer.Node found) {
        Map<String, Entry> m = entries.computeIfAbsent(dir.id, k -> new HashMap<>());
        if (found == null && !model.negativeEntries()) {
            m.remove(n);
        } else {
            m.put(n, new Entry(found, host.now() + model.entryLifetime()));
        }
    }

    /** The directory holding the last name of {@code p}, through cached entries. */
    private SimNfsServer.Node parent(SimPath p) throws IOException {
        String[] names = p.names();
        SimNfsServer.Node at = server.root();
        for (int i = 0; i < names.length - 1; i++) {
            SimNfsServer.Node next = cachedLookup(at, names[i]);
            if (next == null) {
                throw new NoSuchFileException(p.toString());
            }
            if (!next.dir) {
                throw new NotDirectoryException(p.toString());
            }
            at = next;
        }
        return at;
    }

    private static String last(SimPath p) {
        String[] names = p.names();
        return names[names.length - 1];
    }

    /** Opens {@code p} (close-to-open): a positive entry is looked up again, a negative one trusted while it lives. */
    private SimNfsServer.Node openLookup(SimPath p) throws IOException {
        if (p.names().length == 0) {
            return server.root();
        }
        SimNfsServer.Node dir = parent(p);
        String n = last(p);
        Entry e = entries.computeIfAbsent(dir.id, k -> new HashMap<>()).get(n);
        SimNfsServer.Node node;
        if (e != null && e.node == null && e.expires > host.now()) {
            node = null;
        } else {
            node = freshLookup(dir, n);
        }
        if (node == null) {
            throw new NoSuchFileException(p.toString());
        }
        return node;
    }

    private static SimPath sim(Path p) {
        if (!(p instanceof SimPath s)) {
            throw new java.nio.file.ProviderMismatchException("not a simulated NFS path: " + p);
        }
        return s;
    }

    // ------------------------------------------------------------------------------------------------ operations

    List<String> list(SimPath p) throws IOException {
        checkAlive();
        host.step("LIST", p.toString());
        SimNfsServer.Node dir = openLookup(p);
        if (!dir.dir) {
            throw new NotDirectoryException(p.toString());
        }
        Listing cached = listings.get(dir.id);
        if (model.listFromCache() && cached != null && cached.expires > host.now()) {
            return cached.names;
        }
        List<String> names = dir.names();
        listings.put(dir.id, new Listing(names, host.now() + model.entryLifetime()));
        Map<String, Entry> m = new HashMap<>();
        long expires = host.now() + model.entryLifetime();
        for (String n : names) {
            m.put(n, new Entry(dir.entries.get(n), expires));
        }
        entries.put(dir.id, m);
        return names;
    }

    private void mkdir(SimPath p, int mode) throws IOException {
        checkAlive();
        host.step("MKDIR", p.toString());
        SimNfsServer.Node dir = parent(p);
        if (!model.root() && (dir.mode & 0200) == 0) {
            throw new AccessDeniedException(p.toString());
        }
        String n = last(p);
        SimNfsServer.Node made = server.create(dir, n, true, mode);
        if (made == null) {
            remember(dir, n, server.lookup(dir, n));
            throw new FileAlreadyExistsException(p.toString());
        }
        remember(dir, n, made);
    }

    private SimChannel openChannel(SimPath p, Set<? extends OpenOption> options) throws IOException {
        checkAlive();
        boolean create = options.contains(StandardOpenOption.CREATE_NEW);
        boolean write = options.contains(StandardOpenOption.WRITE);
        boolean read = options.contains(StandardOpenOption.READ) || !write;
        for (OpenOption o : options) {
            if (o != StandardOpenOption.CREATE_NEW && o != StandardOpenOption.WRITE && o != StandardOpenOption.READ) {
                host.refused("OPEN " + o + " " + p);
                throw new IOException("open option " + o + " is not NFS-safe: " + p);
            }
        }
        if (create) {
            host.step("CREATE_EXCLUSIVE", p.toString());
            SimNfsServer.Node dir = parent(p);
            if (!model.root() && (dir.mode & 0200) == 0) {
                throw new AccessDeniedException(p.toString());
            }
            String n = last(p);
            SimNfsServer.Node made = server.create(dir, n, false, 0644);
            if (made == null) {
                remember(dir, n, server.lookup(dir, n));
                throw new FileAlreadyExistsException(p.toString());
            }
            remember(dir, n, made);
            attributesFetched(made);
            return track(new SimChannel(this, made, p, true));
        }
        host.step(write ? "OPEN_WRITE" : "OPEN_READ", p.toString());
        SimNfsServer.Node node = openLookup(p);
        if (node.dir) {
            throw new IOException("is a directory: " + p);
        }
        if (write && !model.root() && (node.mode & 0200) == 0) {
            throw new AccessDeniedException(p.toString());
        }
        if (!read && !write) {
            throw new IOException("no access mode: " + p);
        }
        Attributes a = attributes.get(node.id);
        if (!(model.sizeFromCache() && a != null && a.expires > host.now())) {
            // Close-to-open: fresh attributes at open; the size of the open file comes from them while they live.
            attributesFetched(node);
        }
        return track(new SimChannel(this, node, p, write));
    }

    private SimChannel track(SimChannel c) {
        open.add(c);
        return c;
    }

    private void link(SimPath link, SimPath existing) throws IOException {
        checkAlive();
        host.step("LINK", link.toString());
        SimNfsServer.Node target = openLookup(existing);
        SimNfsServer.Node dir = parent(link);
        String n = last(link);
        if (!server.link(dir, n, target)) {
            remember(dir, n, server.lookup(dir, n));
            throw new FileAlreadyExistsException(link.toString());
        }
        remember(dir, n, target);
    }

    private void chmod(SimPath p, Set<PosixFilePermission> perms) throws IOException {
        checkAlive();
        host.step("CHMOD", p.toString());
        SimNfsServer.Node dir = parent(p);
        SimNfsServer.Node node = p.names().length == 0 ? server.root() : cachedLookup(dir, last(p));
        if (node == null) {
            throw new NoSuchFileException(p.toString());
        }
        int mode = 0;
        for (PosixFilePermission perm : perms) {
            mode |= 1 << (8 - perm.ordinal());
        }
        server.chmod(node, mode);
        attributesFetched(node);
    }

    private void delete(SimPath p) throws IOException {
        checkAlive();
        String n = last(p);
        if (!org.leasehold.fs.NfsSafeFiles.isPreparedName(n) && !org.leasehold.fs.NfsSafeFiles.isBucketFileName(n)) {
            host.refused("DELETE " + p);
            throw new IOException("delete of " + p + " is not NFS-safe");
        }
        host.step("REMOVE", p.toString());
        SimNfsServer.Node dir = parent(p);
        if (server.lookup(dir, n) == null) {
            throw new NoSuchFileException(p.toString());
        }
        server.unlink(dir, n);
        remember(dir, n, null);
    }

    private IOException refuse(String what, Path p) {
        host.refused(what + " " + p);
        return new IOException(what + " is not an NFS-safe operation (refused by the simulated NFS): " + p);
    }

    // ------------------------------------------------------------------------------------------------ FileSystem

    @Override
    public FileSystemProvider provider() {
        return provider;
    }

    @Override
    public void close() {
        // Nothing to release.
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
        return "/";
    }

    @Override
    public Iterable<Path> getRootDirectories() {
        return List.of(path("/"));
    }

    @Override
    public Iterable<FileStore> getFileStores() {
        return List.of();
    }

    @Override
    public Set<String> supportedFileAttributeViews() {
        return Set.of("basic", "posix");
    }

    @Override
    public Path getPath(String first, String... more) {
        StringBuilder sb = new StringBuilder(first);
        for (String m : more) {
            sb.append('/').append(m);
        }
        return SimPath.parse(this, sb.toString());
    }

    @Override
    public PathMatcher getPathMatcher(String syntaxAndPattern) {
        throw new UnsupportedOperationException("no path matchers on the simulated NFS");
    }

    @Override
    public UserPrincipalLookupService getUserPrincipalLookupService() {
        throw new UnsupportedOperationException("no principals on the simulated NFS");
    }

    @Override
    public WatchService newWatchService() {
        throw new UnsupportedOperationException("no watch service on the simulated NFS");
    }

    private final class Provider extends FileSystemProvider {
        @Override
        public String getScheme() {
            return "simnfs";
        }

        @Override
        public FileSystem newFileSystem(URI uri, Map<String, ?> env) {
            throw new UnsupportedOperationException("simulated NFS clients are made by the simulation");
        }

        @Override
        public FileSystem getFileSystem(URI uri) {
            return SimNfsClient.this;
        }

        @Override
        public Path getPath(URI uri) {
            return path(uri.getPath());
        }

        @Override
        public FileChannel newFileChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attrs)
                throws IOException {
            return openChannel(sim(path), options);
        }

        @Override
        public SeekableByteChannel newByteChannel(Path path, Set<? extends OpenOption> options,
                FileAttribute<?>... attrs) throws IOException {
            return openChannel(sim(path), options);
        }

        @Override
        public DirectoryStream<Path> newDirectoryStream(Path dir, DirectoryStream.Filter<? super Path> filter)
                throws IOException {
            SimPath d = sim(dir);
            List<String> names = list(d);
            List<Path> out = new ArrayList<>(names.size());
            for (String n : names) {
                Path p = d.resolve(n);
                if (filter.accept(p)) {
                    out.add(p);
                }
            }
            return new DirectoryStream<>() {
                @Override
                public Iterator<Path> iterator() {
                    return out.iterator();
                }

                @Override
                public void close() {
                    // Nothing held.
                }
            };
        }

        @Override
        public void createDirectory(Path dir, FileAttribute<?>... attrs) throws IOException {
            mkdir(sim(dir), 0755);
        }

        @Override
        public void createLink(Path link, Path existing) throws IOException {
            SimNfsClient.this.link(sim(link), sim(existing));
        }

        @Override
        public void delete(Path path) throws IOException {
            SimNfsClient.this.delete(sim(path));
        }

        @Override
        public void copy(Path source, Path target, CopyOption... options) throws IOException {
            throw refuse("COPY", source);
        }

        @Override
        public void move(Path source, Path target, CopyOption... options) throws IOException {
            throw refuse("RENAME", source);
        }

        @Override
        public boolean isSameFile(Path path, Path path2) throws IOException {
            throw refuse("STAT", path);
        }

        @Override
        public boolean isHidden(Path path) throws IOException {
            throw refuse("STAT", path);
        }

        @Override
        public FileStore getFileStore(Path path) throws IOException {
            throw refuse("STATFS", path);
        }

        @Override
        public void checkAccess(Path path, AccessMode... modes) throws IOException {
            throw refuse("ACCESS", path);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
            if (type != PosixFileAttributeView.class) {
                return null;
            }
            SimPath p = sim(path);
            return (V) new PosixFileAttributeView() {
                @Override
                public String name() {
                    return "posix";
                }

                @Override
                public PosixFileAttributes readAttributes() throws IOException {
                    throw refuse("STAT", p);
                }

                @Override
                public void setPermissions(Set<PosixFilePermission> perms) throws IOException {
                    chmod(p, perms);
                }

                @Override
                public void setGroup(GroupPrincipal group) throws IOException {
                    throw refuse("CHGRP", p);
                }

                @Override
                public UserPrincipal getOwner() throws IOException {
                    throw refuse("STAT", p);
                }

                @Override
                public void setOwner(UserPrincipal owner) throws IOException {
                    throw refuse("CHOWN", p);
                }

                @Override
                public void setTimes(FileTime lastModifiedTime, FileTime lastAccessTime, FileTime createTime)
                        throws IOException {
                    throw refuse("UTIMES", p);
                }
            };
        }

        @Override
        public <A extends BasicFileAttributes> A readAttributes(Path path, Class<A> type, LinkOption... options)
                throws IOException {
            throw refuse("STAT", path);
        }

        @Override
        public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options)
                throws IOException {
            throw refuse("STAT", path);
        }

        @Override
        public void setAttribute(Path path, String attribute, Object value, LinkOption... options) throws IOException {
            throw refuse("SETATTR " + attribute, path);
        }
    }
}
