package org.leasehold.simulation.nfs;

import java.io.IOException;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** A path of one simulated NFS client: absolute or relative, {@code /}-separated, compared by its names. */
final class SimPath implements Path {
    private final SimNfsClient fs;
    private final boolean absolute;
    private final String[] names;

    SimPath(SimNfsClient fs, boolean absolute, String[] names) {
        this.fs = fs;
        this.absolute = absolute;
        this.names = names;
    }

    static SimPath parse(SimNfsClient fs, String s) {
        boolean abs = s.startsWith("/");
        List<String> parts = new ArrayList<>();
        for (String p : s.split("/")) {
            if (!p.isEmpty()) {
                parts.add(p);
            }
        }
        return new SimPath(fs, abs, parts.toArray(new String[0]));
    }

    String[] names() {
        return names;
    }

    @Override
    public FileSystem getFileSystem() {
        return fs;
    }

    @Override
    public boolean isAbsolute() {
        return absolute;
    }

    @Override
    public Path getRoot() {
        return absolute ? new SimPath(fs, true, new String[0]) : null;
    }

    @Override
    public Path getFileName() {
        return names.length == 0 ? null : new SimPath(fs, false, new String[] {names[names.length - 1]});
    }

    @Override
    public Path getParent() {
        if (names.length == 0) {
            return null;
        }
        if (names.length == 1) {
            return absolute ? new SimPath(fs, true, new String[0]) : null;
        }
        return new SimPath(fs, absolute, Arrays.copyOf(names, names.length - 1));
    }

    @Override
    public int getNameCount() {
        return names.length;
    }

    @Override
    public Path getName(int index) {
        return new SimPath(fs, false, new String[] {names[index]});
    }

    @Override
    public Path subpath(int beginIndex, int endIndex) {
        return new SimPath(fs, false, Arrays.copyOfRange(names, beginIndex, endIndex));
    }

    @Override
    public boolean startsWith(Path other) {
        SimPath o = (SimPath) other;
        if (o.absolute != absolute || o.names.length > names.length) {
            return false;
        }
        for (int i = 0; i < o.names.length; i++) {
            if (!o.names[i].equals(names[i])) {
                return false;
            }
        }
        return true;
    }

    @Override
    public boolean endsWith(Path other) {
        SimPath o = (SimPath) other;
        if (o.absolute) {
            return equals(o);
        }
        if (o.names.length > names.length) {
            return false;
        }
        for (int i = 0; i < o.names.length; i++) {
            if (!o.names[o.names.length - 1 - i].equals(names[names.length - 1 - i])) {
                return false;
            }
        }
        return true;
    }

    @Override
    public Path normalize() {
        return this;
    }

    @Override
    public Path resolve(Path other) {
        SimPath o = (SimPath) other;
        if (o.absolute) {
            return o;
        }
        String[] n = Arrays.copyOf(names, names.length + o.names.length);
        System.arraycopy(o.names, 0, n, names.length, o.names.length);
        return new SimPath(fs, absolute, n);
    }

    @Override
    public Path resolve(String other) {
        return resolve(parse(fs, other));
    }

    @Override
    public Path relativize(Path other) {
        SimPath o = (SimPath) other;
        if (!o.startsWith(this)) {
            throw new IllegalArgumentException(o + " is not under " + this);
        }
        return new SimPath(fs, false, Arrays.copyOfRange(o.names, names.length, o.names.length));
    }

    @Override
    public URI toUri() {
        return URI.create("simnfs://" + fs.name() + toAbsolutePath());
    }

    @Override
    public Path toAbsolutePath() {
        return absolute ? this : new SimPath(fs, true, names);
    }

    @Override
    public Path toRealPath(LinkOption... options) throws IOException {
        fs.host().refused("REALPATH " + this);
        throw new IOException("toRealPath is not an NFS-safe operation: " + this);
    }

    @Override
    public WatchKey register(WatchService watcher, WatchEvent.Kind<?>[] events, WatchEvent.Modifier... modifiers) {
        throw new UnsupportedOperationException("no watch service on the simulated NFS");
    }

    @Override
    public int compareTo(Path other) {
        return toString().compareTo(other.toString());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SimPath p && p.fs == fs && p.absolute == absolute && Arrays.equals(p.names, names);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(names) * 31 + (absolute ? 1 : 0);
    }

    @Override
    public String toString() {
        String s = String.join("/", names);
        return absolute ? "/" + s : s;
    }
}
