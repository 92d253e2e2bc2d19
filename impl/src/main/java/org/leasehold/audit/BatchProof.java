package org.leasehold.audit;

import java.util.Arrays;
import java.util.Objects;

/**
 * Proof that a statement (a witness or a signed time) was signed: the Ed25519 signature of its batch's Merkle root
 * and the statement's inclusion path. The root is not stored; it is recomputed from the statement and the path, so a
 * changed statement or path yields another root, which the signature does not cover.
 *
 * @param keyId     the key that signed the root
 * @param leafCount how many statements the batch holds (1 to {@value #MAX_LEAVES})
 * @param leafIndex this statement's position in the batch
 * @param path      the sibling hashes from the leaf up, 32 bytes each (at most 32 of them)
 * @param signature the 64-byte Ed25519 signature of {@link #signedMessage(KeyId, int, byte[])}
 */
public record BatchProof(KeyId keyId, int leafCount, int leafIndex, byte[][] path, byte[] signature) {

    /** The encoding version. */
    public static final int VERSION = 1;
    /** The most statements one batch signs. */
    public static final int MAX_LEAVES = 1 << 20;
    /** The first four bytes of a signed root message, {@code LHBR}. */
    public static final int ROOT_MAGIC = 0x4C484252;

    public BatchProof {
        Objects.requireNonNull(keyId, "BatchProof.keyId");
        path = path.clone();
        for (int i = 0; i < path.length; i++) {
            if (path[i].length != Merkle.HASH) {
                throw new IllegalArgumentException("a Merkle path holds 32-byte hashes, entry " + i + " has "
                        + path[i].length);
            }
            path[i] = path[i].clone();
        }
        signature = signature.clone();
    }

    /** The path (a copy). */
    @Override
    public byte[][] path() {
        byte[][] out = new byte[path.length][];
        for (int i = 0; i < path.length; i++) {
            out[i] = path[i].clone();
        }
        return out;
    }

    /** The signature (a copy). */
    @Override
    public byte[] signature() {
        return signature.clone();
    }

    /**
     * What the key signs for a batch: {@code "LHBR"}, version 1, the key id (16 bytes), the leaf count (4 bytes) and
     * the root (32 bytes).
     */
    public static byte[] signedMessage(KeyId keyId, int leafCount, byte[] root) {
        return new Codec.Out(57).i32(ROOT_MAGIC).u8(VERSION).i64(keyId.high()).i64(keyId.low()).i32(leafCount)
                .bytes(root).toByteArray();
    }

    /**
     * The root this proof claims for {@code statement} (the encoded witness or signed time), or null if the path
     * cannot belong to a batch of {@link #leafCount()} statements.
     */
    public byte[] rootFor(byte[] statement) {
        return Merkle.rootFromPath(Merkle.leafHash(statement), leafIndex, leafCount, path);
    }

    /** The canonical bytes (FORMAT.md, "Batch proof"). */
    public byte[] encode() {
        Codec.Out o = new Codec.Out(90 + path.length * Merkle.HASH).u8(VERSION).i64(keyId.high()).i64(keyId.low())
                .i32(leafCount).i32(leafIndex).u8(path.length);
        for (byte[] p : path) {
            o.bytes(p);
        }
        return o.bytes(signature).toByteArray();
    }

    /** Decodes {@link #encode()}'s bytes. */
    public static BatchProof decode(byte[] bytes) throws AuditFormatException {
        Codec.In in = new Codec.In(bytes, "batch proof");
        in.version(VERSION);
        KeyId key = new KeyId(in.i64("key id"), in.i64("key id"));
        int count = in.i32("leaf count");
        int index = in.i32("leaf index");
        if (count < 1 || count > MAX_LEAVES || index < 0 || index >= count) {
            throw new AuditFormatException("a batch proof's leaf index " + index + " and count " + count
                    + " are out of range (1 <= count <= " + MAX_LEAVES + ", 0 <= index < count)");
        }
        int n = in.u8("path length");
        if (n > 32) {
            throw new AuditFormatException("a batch proof's path has " + n + " hashes; at most 32");
        }
        byte[][] path = new byte[n][];
        for (int i = 0; i < n; i++) {
            path[i] = in.bytes(Merkle.HASH, "path hash " + i);
        }
        byte[] sig = in.bytes(64, "signature");
        in.end();
        return new BatchProof(key, count, index, path, sig);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BatchProof p && p.keyId.equals(keyId) && p.leafCount == leafCount
                && p.leafIndex == leafIndex && Arrays.deepEquals(p.path, path) && Arrays.equals(p.signature, signature);
    }

    @Override
    public int hashCode() {
        return Objects.hash(keyId, leafCount, leafIndex) * 31 + Arrays.hashCode(signature);
    }

    @Override
    public String toString() {
        return "BatchProof[key " + keyId + ", leaf " + leafIndex + " of " + leafCount + ", path " + path.length + "]";
    }
}
