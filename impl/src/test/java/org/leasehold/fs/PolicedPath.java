package org.leasehold.fs;

import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;

/** A path of a {@link PolicedFileSystem}: a default-file-system path that routes file operations through the police. */
final class PolicedPath implements Path {
    final PolicedFileSystem fs;
    final Path delegate;

    PolicedPath(PolicedFileSystem fs, Path delegate) {
        this.fs = fs;
        this.delegate = delegate;
    }

    private Path wrap(Path p) {
        return p == null ? null : new PolicedPath(fs, p);
    }

    @Override
    public FileSystem getFileSystem() {
        return fs;
    }

    @Override
    public boolean isAbsolute() {
        return delegate.isAbsolute();
    }

    @Override
    public Path getRoot() {
        return wrap(delegate.getRoot());
    }

    @Override
    public Path getFileName() {
        return wrap(delegate.getFileName());
    }

    @Override
    public Path getParent() {
        return wrap(delegate.getParent());
    }

    @Override
    public int getNameCount() {
        return delegate.getNameCount();
    }

    @Override
    public Path getName(int index) {
        return wrap(delegate.getName(index));
    }

    @Override
    public Path subpath(int beginIndex, int endIndex) {
        return wrap(delegate.subpath(beginIndex, endIndex));
    }

    @Override
    public boolean startsWith(Path other) {
        return delegate.startsWith(PolicedFileSystem.unwrap(other));
    }

    @Override
    public boolean endsWith(Path other) {
        return delegate.endsWith(PolicedFileSystem.unwrap(other));
    }

    @Override
    public Path normalize() {
        return wrap(delegate.normalize());
    }

    @Override
    public Path resolve(Path other) {
        return wrap(delegate.resolve(PolicedFileSystem.unwrap(other)));
    }

    @Override
    public Path relativize(Path other) {
        return wrap(delegate.relativize(PolicedFileSystem.unwrap(other)));
    }

    @Override
    public URI toUri() {
        return delegate.toUri();
    }

    @Override
    public Path toAbsolutePath() {
        return wrap(delegate.toAbsolutePath());
    }

    @Override
    public Path toRealPath(LinkOption... options) throws IOException {
        throw new UnsupportedOperationException("toRealPath stats the file system; not NFS-safe here");
    }

    @Override
    public WatchKey register(WatchService watcher, WatchEvent.Kind<?>[] events, WatchEvent.Modifier... modifiers) {
        throw new UnsupportedOperationException("watch services are not NFS-safe");
    }

    @Override
    public int compareTo(Path other) {
        return delegate.compareTo(PolicedFileSystem.unwrap(other));
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PolicedPath p && p.delegate.equals(delegate);
    }

    @Override
    public int hashCode() {
        return delegate.hashCode();
    }

    @Override
    public String toString() {
        return delegate.toString();
    }
}
