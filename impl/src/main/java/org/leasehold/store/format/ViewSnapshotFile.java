package org.leasehold.store.format;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.zip.CRC32C;

/**
 * The view snapshot file, version 1 (see {@code docs/FORMAT.md}): the encoded state of one view of a log as of a
 * sealed boundary. All integers big-endian.
 *
 * <pre>
 * header   0  4  magic 0x4C485657 ("LHVW")
 *          4  2  version (1)
 *          6  2  flags (0)
 *          8  8  boundary, µs
 *         16 32  SHA-256 of the definition's version string (UTF-8)
 *         48  2  view name length n
 *         50  n  view name (ASCII)
 * state   50+n  8  state length s; then s bytes, the definition's encoding
 * trailer  8 boundary again, 4 CRC32C of every byte before it, 4 magic 0x4C485645 ("LHVE")
 * </pre>
 */
public final class ViewSnapshotFile {
    public static final int MAGIC = 0x4C485657;
    public static final int END_MAGIC = 0x4C485645;
    public static final int VERSION = 1;
    public static final int DIGEST = 32;
    public static final int TRAILER = 16;
    /** The largest encoded state a snapshot holds (a reader loads it at once). */
    public static final int MAX_STATE = 1 << 30;
    /** The suffix of a published snapshot's name. */
    public static final String SUFFIX = ".snapshot";
    private static final int FIXED = 50;

    /**
     * A snapshot's fields.
     *
     * @param boundary      every message before it (µs) is folded in
     * @param versionDigest the SHA-256 of the definition's version string
     * @param view          the view's name
     * @param state         the encoded state
     */
    public record Snapshot(long boundary, byte[] versionDigest, String view, byte[] state) {
    }

    private ViewSnapshotFile() {
    }

    /** The SHA-256 of a definition's version string. */
    public static byte[] versionDigest(String version) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(version.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this Java runtime", e);
        }
    }

    /** The published name of the snapshot at {@code boundary} of the version with {@code digest}. */
    public static String name(long boundary, byte[] digest) {
        return boundary + "-" + HexFormat.of().formatHex(digest, 0, 8) + SUFFIX;
    }

    /**
     * The boundary of a published snapshot's name if it belongs to the version with {@code digest}; -1 if the name is
     * not a published snapshot's or belongs to another version.
     */
    public static long parseName(String name, byte[] digest) {
        if (!name.endsWith(SUFFIX)) {
            return -1;
        }
        String core = name.substring(0, name.length() - SUFFIX.length());
        int dash = core.indexOf('-');
        if (dash <= 0 || dash > 19 || !core.substring(dash + 1).equals(HexFormat.of().formatHex(digest, 0, 8))) {
            return -1;
        }
        for (int i = 0; i < dash; i++) {
            char c = core.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
        }
        try {
            return Long.parseLong(core.substring(0, dash));
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** A snapshot's bytes. */
    public static byte[] encode(Snapshot s) {
        byte[] name = s.view().getBytes(StandardCharsets.US_ASCII);
        if (s.versionDigest().length != DIGEST || name.length > 0xFFFF || s.state().length > MAX_STATE) {
            throw new IllegalArgumentException("snapshot of view '" + s.view() + "': a " + s.versionDigest().length
                    + "-byte digest, a " + name.length + "-byte name and " + s.state().length + " bytes of state do "
                    + "not fit the format (32, at most 65535, at most " + MAX_STATE + ")");
        }
        ByteBuffer b = ByteBuffer.allocate(FIXED + name.length + 8 + s.state().length + TRAILER);
        b.putInt(MAGIC).putShort((short) VERSION).putShort((short) 0).putLong(s.boundary()).put(s.versionDigest())
                .putShort((short) name.length).put(name).putLong(s.state().length).put(s.state())
                .putLong(s.boundary());
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue()).putInt(END_MAGIC);
        return b.array();
    }

    /**
     * Parses and checks a whole snapshot file.
     *
     * @throws FormatException the bytes are not a complete, intact snapshot of this format version
     */
    public static Snapshot decode(byte[] a) throws FormatException {
        if (a.length < FIXED + 8 + TRAILER || Frames.getInt(a, 0) != MAGIC) {
            throw new FormatException(0, "not a view snapshot (bad magic or " + a.length + " bytes)");
        }
        int v = Frames.getUShort(a, 4);
        if (v != VERSION) {
            throw new FormatException(0, v, "view snapshot format version " + v);
        }
        if (Frames.getInt(a, a.length - 4) != END_MAGIC) {
            throw new FormatException(a.length - 4, "no end magic: the snapshot is short or damaged");
        }
        int crcAt = a.length - 8;
        CRC32C crc = new CRC32C();
        crc.update(a, 0, crcAt);
        if ((int) crc.getValue() != Frames.getInt(a, crcAt)) {
            throw new FormatException(crcAt, "checksum mismatch");
        }
        long boundary = Frames.getLong(a, 8);
        int n = Frames.getUShort(a, 48);
        long s = FIXED + n + 8L <= a.length ? Frames.getLong(a, FIXED + n) : -1;
        if (s < 0 || FIXED + n + 8L + s + TRAILER != a.length) {
            throw new FormatException(FIXED + n, "the state length " + s + " does not match the file's "
                    + a.length + " bytes");
        }
        if (Frames.getLong(a, a.length - TRAILER) != boundary) {
            throw new FormatException(a.length - TRAILER, "the trailer's boundary differs from the header's");
        }
        int at = FIXED + n + 8;
        return new Snapshot(boundary, Arrays.copyOfRange(a, 16, 16 + DIGEST),
                new String(a, FIXED, n, StandardCharsets.US_ASCII), Arrays.copyOfRange(a, at, at + (int) s));
    }
}
