package org.leasehold.audit;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The Merkle tree of a batch, as RFC 9162 (Certificate Transparency 2.0) defines it: SHA-256, leaf hash
 * {@code H(0x00 || leaf)}, node hash {@code H(0x01 || left || right)}, the left subtree of {@code n} leaves holding the
 * largest power of two below {@code n}. Built bottom-up, an unpaired last node moves up a level unchanged, which is
 * the same tree. Inclusion paths are checked with RFC 9162's algorithm (section 2.1.3.2).
 */
public final class Merkle {
    /** Bytes of a hash. */
    public static final int HASH = 32;

    private Merkle() {
    }

    /** A SHA-256 digest of its own (a digest is not thread-safe: one per thread at a time). */
    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /** {@code H(0x00 || leaf)}. */
    public static byte[] leafHash(byte[] leaf) {
        return leafHash(sha256(), leaf);
    }

    /** {@code H(0x00 || leaf)} with {@code d} (reset first), so that a batch's leaves share one digest. */
    static byte[] leafHash(MessageDigest d, byte[] leaf) {
        d.reset();
        d.update((byte) 0);
        d.update(leaf);
        return d.digest();
    }

    static byte[] nodeHash(MessageDigest d, byte[] left, byte[] right) {
        d.reset();
        d.update((byte) 1);
        d.update(left);
        d.update(right);
        return d.digest();
    }

    /** The tree's levels, level 0 the leaf hashes and the last level the root alone. */
    static List<byte[][]> levels(byte[][] leafHashes) {
        return levels(sha256(), leafHashes);
    }

    /** {@link #levels(byte[][])} hashed with {@code d}. */
    static List<byte[][]> levels(MessageDigest d, byte[][] leafHashes) {
        if (leafHashes.length == 0) {
            throw new IllegalArgumentException("a Merkle tree has at least one leaf");
        }
        List<byte[][]> levels = new ArrayList<>();
        byte[][] level = leafHashes;
        levels.add(level);
        while (level.length > 1) {
            byte[][] up = new byte[(level.length + 1) / 2][];
            for (int i = 0; i < up.length; i++) {
                up[i] = 2 * i + 1 < level.length ? nodeHash(d, level[2 * i], level[2 * i + 1]) : level[2 * i];
            }
            levels.add(up);
            level = up;
        }
        return levels;
    }

    /** The inclusion path of leaf {@code index}: its siblings from the leaf level up (unpaired levels skipped). */
    static byte[][] path(List<byte[][]> levels, int index) {
        int n = 0;
        for (int l = 0, i = index; l < levels.size() - 1; l++, i >>= 1) {
            if ((i ^ 1) < levels.get(l).length) {
                n++;
            }
        }
        byte[][] path = new byte[n][];
        n = 0;
        for (int l = 0, i = index; l < levels.size() - 1; l++, i >>= 1) {
            byte[][] level = levels.get(l);
            if ((i ^ 1) < level.length) {
                path[n++] = level[i ^ 1];
            }
        }
        return path;
    }

    /**
     * The root that leaf {@code leafHash} at {@code index} of a tree of {@code count} leaves reaches through
     * {@code path}, or null if the path cannot belong to such a tree (wrong length for the index and count).
     */
    public static byte[] rootFromPath(byte[] leafHash, int index, int count, byte[][] path) {
        if (index < 0 || count < 1 || index >= count) {
            return null;
        }
        MessageDigest d = sha256();
        long fn = index;
        long sn = count - 1L;
        byte[] r = leafHash;
        for (byte[] p : path) {
            if (sn == 0) {
                return null;
            }
            if ((fn & 1) == 1 || fn == sn) {
                r = nodeHash(d, p, r);
                if ((fn & 1) == 0) {
                    while ((fn & 1) == 0 && fn != 0) {
                        fn >>= 1;
                        sn >>= 1;
                    }
                }
            } else {
                r = nodeHash(d, r, p);
            }
            fn >>= 1;
            sn >>= 1;
        }
        return sn == 0 ? r : null;
    }

    /** True if the two hashes are equal (constant time). */
    static boolean same(byte[] a, byte[] b) {
        return a != null && b != null && MessageDigest.isEqual(a, b);
    }

    static byte[] copy(byte[] h) {
        return Arrays.copyOf(h, h.length);
    }
}
