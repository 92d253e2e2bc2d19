package org.leasehold.simulation.nfs;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The server's state of a simulated NFS export: one tree of directories and files, each operation atomic on the
 * server ({@code CREATE} with {@code EXCLUSIVE}, {@code MKDIR}, {@code LINK} and {@code SETATTR} of the mode decide on
 * the server, whatever the clients cached). The server neither crashes nor loses data; what it holds is what
 * the clients flushed. The checker reads it directly: {@link #root()}.
 */
public final class SimNfsServer {
    private long ids;
    private long changes;
    private final Node root = new Node(ids++, true, 0755);

    /** A file or directory on the server. */
    public static final class Node {
        final long id;
        final boolean dir;
        int mode;
        byte[] data = new byte[0];
        int size;
        long change;
        final Map<String, Node> entries;

        Node(long id, boolean dir, int mode) {
            this.id = id;
            this.dir = dir;
            this.mode = mode;
            this.entries = dir ? new LinkedHashMap<>() : null;
        }

        public boolean isDirectory() {
            return dir;
        }

        /** The names in this directory, in creation order. */
        public List<String> names() {
            return new ArrayList<>(entries.keySet());
        }

        /** The entry {@code name} of this directory, or null. */
        public Node child(String name) {
            return entries.get(name);
        }

        /** The bytes of this file on the server. */
        public byte[] bytes() {
            return Arrays.copyOf(data, size);
        }

        public int mode() {
            return mode;
        }
    }

    public Node root() {
        return root;
    }

    Node lookup(Node dir, String name) {
        return dir.entries.get(name);
    }

    /** Creates {@code name} in {@code dir}; null if the name exists. */
    public Node create(Node dir, String name, boolean directory, int mode) {
        if (dir.entries.containsKey(name)) {
            return null;
        }
        Node n = new Node(ids++, directory, mode);
        dir.entries.put(name, n);
        dir.change = ++changes;
        return n;
    }

    /** Links {@code target} as {@code name} in {@code dir}; false if the name exists. */
    boolean link(Node dir, String name, Node target) {
        if (dir.entries.containsKey(name)) {
            return false;
        }
        dir.entries.put(name, target);
        dir.change = ++changes;
        return true;
    }

    void chmod(Node n, int mode) {
        n.mode = mode;
        n.change = ++changes;
    }

    /** Writes {@code len} bytes of {@code src} from {@code from} at offset {@code at} of file {@code n}. */
    void write(Node n, byte[] src, int from, int len, long at) {
        int end = Math.toIntExact(at + len);
        if (end > n.data.length) {
            n.data = Arrays.copyOf(n.data, Math.max(end, n.data.length * 2));
        }
        System.arraycopy(src, from, n.data, (int) at, len);
        n.size = Math.max(n.size, end);
        n.change = ++changes;
    }

    void unlink(Node dir, String name) {
        dir.entries.remove(name);
        dir.change = ++changes;
    }
}
