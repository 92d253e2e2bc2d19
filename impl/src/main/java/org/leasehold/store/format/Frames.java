package org.leasehold.store.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.zip.CRC32C;

import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.StampedLease;

/**
 * The data-file frame, version 1 (see {@code docs/FORMAT.md}). All integers big-endian.
 *
 * <pre>
 * offset size  field
 *  0     4     magic 0x4C484246 ("LHBF")
 *  4     2     format version (1)
 *  6     2     flags (0; a version-1 reader refuses others)
 *  8     4     frame length L in bytes, header included
 * 12     4     CRC32C of bytes [0, 12) followed by bytes [16, L)
 * 16     8     timestamp, microseconds since the epoch (UTC), signed
 * 24     2     lease count n
 *        n x { u16 name length, UTF-8 name, i64 generation, u32 witness length, witness bytes }
 *        4     message count m (at least 1)
 *        m x { u32 payload length, payload bytes }
 * </pre>
 *
 * The frame ends exactly at L. One frame holds every message of one append, so a frame is all or nothing.
 */
public final class Frames {
    public static final int MAGIC = 0x4C484246;
    public static final int VERSION = 1;
    /** Bytes before the timestamp: magic, version, flags, length, CRC. */
    public static final int HEADER = 16;
    /** The smallest valid frame: header, timestamp, no lease, one empty message. */
    public static final int MIN_FRAME = HEADER + 8 + 2 + 4 + 4;
    /** The largest witness accepted per lease. */
    public static final int MAX_WITNESS = 64 << 10;
    /** The most leases per frame. */
    public static final int MAX_LEASES = 1_000;

    private Frames() {
    }

    /** The UTF-8 bytes of each lease name, computed once per append. */
    public static byte[][] names(List<LeaseStamp> leases) {
        byte[][] names = new byte[leases.size()][];
        for (int i = 0; i < names.length; i++) {
            names[i] = leases.get(i).name().getBytes(StandardCharsets.UTF_8);
        }
        return names;
    }

    /** The encoded size of a frame, as a long so that oversized requests can be reported exactly. */
    public static long size(List<LeaseStamp> leases, byte[][] names, List<byte[]> payloads) {
        long n = HEADER + 8 + 2;
        for (int i = 0; i < names.length; i++) {
            n += 2 + names[i].length + 8 + 4 + leases.get(i).witnessLength();
        }
        n += 4;
        for (byte[] p : payloads) {
            n += 4 + p.length;
        }
        return n;
    }

    /** Encodes a frame of exactly {@code size} bytes (from {@link #size}), checksum included. */
    public static ByteBuffer encode(long timestamp, List<LeaseStamp> leases, byte[][] names, List<byte[]> payloads,
            int size) {
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.BIG_ENDIAN);
        b.putInt(MAGIC).putShort((short) VERSION).putShort((short) 0).putInt(size).putInt(0);
        b.putLong(timestamp);
        b.putShort((short) leases.size());
        for (int i = 0; i < names.length; i++) {
            LeaseStamp l = leases.get(i);
            b.putShort((short) names[i].length).put(names[i]).putLong(l.generation());
            byte[] w = l.witness();
            b.putInt(w.length).put(w);
        }
        b.putInt(payloads.size());
        for (byte[] p : payloads) {
            b.putInt(p.length).put(p);
        }
        if (b.position() != size) {
            throw new IllegalStateException("frame size mismatch: " + b.position() + " != " + size);
        }
        b.putInt(12, checksum(b.array(), 0, size));
        b.clear();
        return b;
    }

    /** Rewrites the timestamp of an encoded frame and its checksum. */
    public static void retime(ByteBuffer frame, long timestamp) {
        frame.putLong(HEADER, timestamp);
        frame.putInt(12, checksum(frame.array(), frame.arrayOffset(), frame.capacity()));
    }

    /** The timestamp of an encoded frame. */
    public static long timestamp(ByteBuffer frame) {
        return frame.getLong(HEADER);
    }

    /** The CRC32C of a frame of {@code length} bytes at {@code off}: bytes [0, 12) and [16, length). */
    public static int checksum(byte[] a, int off, int length) {
        CRC32C crc = new CRC32C();
        crc.update(a, off, 12);
        crc.update(a, off + HEADER, length - HEADER);
        return (int) crc.getValue();
    }

    private static final java.lang.invoke.VarHandle INT = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
            int[].class, ByteOrder.BIG_ENDIAN);
    private static final java.lang.invoke.VarHandle LONG = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
            long[].class, ByteOrder.BIG_ENDIAN);
    private static final java.lang.invoke.VarHandle SHORT = java.lang.invoke.MethodHandles.byteArrayViewVarHandle(
            short[].class, ByteOrder.BIG_ENDIAN);

    /** Reads a big-endian int. */
    public static int getInt(byte[] a, int i) {
        return (int) INT.get(a, i);
    }

    /** Reads a big-endian long. */
    public static long getLong(byte[] a, int i) {
        return (long) LONG.get(a, i);
    }

    /** Reads a big-endian unsigned short. */
    public static int getUShort(byte[] a, int i) {
        return (short) SHORT.get(a, i) & 0xffff;
    }

    /**
     * Checks a frame header of 16 bytes at {@code off}. Returns the frame length, or throws why the header is not a
     * version-1 frame header. {@code fileOffset} is only for messages.
     */
    public static int checkHeader(byte[] a, int off, long fileOffset, int maxFrame) throws FormatException {
        int magic = getInt(a, off);
        if (magic != MAGIC) {
            throw new FormatException(fileOffset, String.format("bad magic 0x%08X (expected 0x%08X)", magic, MAGIC));
        }
        int version = getUShort(a, off + 4);
        if (version != VERSION) {
            throw new FormatException(fileOffset, version, "format version " + version + " (this reader knows "
                    + VERSION + ")");
        }
        int flags = getUShort(a, off + 6);
        if (flags != 0) {
            throw new FormatException(fileOffset, "unknown flags 0x" + Integer.toHexString(flags));
        }
        int length = getInt(a, off + 8);
        if (length < MIN_FRAME || length > maxFrame) {
            throw new FormatException(fileOffset, "frame length " + (length & 0xffff_ffffL) + " outside [" + MIN_FRAME
                    + ", " + maxFrame + "]");
        }
        return length;
    }

    /** True if the checksum of the complete frame at {@code off} matches. */
    public static boolean checksumMatches(byte[] a, int off, int length) {
        return checksumMatches(a, off, length, new CRC32C());
    }

    /** Like {@link #checksumMatches(byte[], int, int)}, reusing {@code crc} (reset first). */
    public static boolean checksumMatches(byte[] a, int off, int length, CRC32C crc) {
        crc.reset();
        crc.update(a, off, 12);
        crc.update(a, off + HEADER, length - HEADER);
        return getInt(a, off + 12) == (int) crc.getValue();
    }

    /**
     * A decoded frame body. The payloads are not copied: payload {@code i} is {@code lengths[i]} bytes of
     * {@code array} from {@code offsets[i]}.
     *
     * @param timestamp the frame's timestamp (µs)
     * @param leases    the leases, immutable
     * @param array     the array holding the frame
     * @param offsets   where each payload starts in {@code array}
     * @param lengths   each payload's length
     */
    public record Body(long timestamp, List<StampedLease> leases, byte[] array, int[] offsets, int[] lengths) {

        /** The number of messages. */
        public int count() {
            return offsets.length;
        }

        /** A copy of payload {@code i}. */
        public byte[] payload(int i) {
            return java.util.Arrays.copyOfRange(array, offsets[i], offsets[i] + lengths[i]);
        }
    }

    /**
     * Remembers the encoded leases of the last frame decoded with it and their decoded list, so that a run of frames
     * written under the same leases (the common case in one data file) shares one immutable list. Not thread-safe.
     */
    public static final class LeaseCache {
        private byte[] bytes = new byte[64];
        private int length = -1;
        private int count = -1;
        private List<StampedLease> leases;
    }

    public static Body decode(byte[] a, int off, int length, long fileOffset) throws FormatException {
        View v = new View();
        decode(a, off, length, fileOffset, null, null, v);
        return new Body(v.timestamp, v.leases, a, java.util.Arrays.copyOf(v.offsets, v.count),
                java.util.Arrays.copyOf(v.lengths, v.count));
    }

    /**
     * A reusable, mutable view of one decoded frame: its timestamp, leases, and where each payload lies in
     * {@link #array}. Valid until the next decode into it. Not thread-safe.
     */
    public static final class View {
        private long timestamp;
        private List<StampedLease> leases;
        private byte[] array;
        private int count;
        private int[] offsets = new int[4];
        private int[] lengths = new int[4];

        public long timestamp() {
            return timestamp;
        }

        public List<StampedLease> leases() {
            return leases;
        }

        public byte[] array() {
            return array;
        }

        /** The number of messages. */
        public int count() {
            return count;
        }

        public int offset(int i) {
            return offsets[i];
        }

        public int length(int i) {
            return lengths[i];
        }
    }

    /**
     * Decodes the body of a complete frame at {@code off} whose header and checksum were checked into {@code view};
     * returns false when {@code accept} (if given) rejects the frame's leases. Throws if the structure does not add
     * up to exactly {@code length} bytes. Payloads stay in {@code a}; the lease list is immutable.
     */
    public static boolean decode(byte[] a, int off, int length, long fileOffset,
            java.util.function.Predicate<List<StampedLease>> accept, LeaseCache cache, View view)
            throws FormatException {
        int end = off + length;
        int p = off + HEADER;
        long t = getLong(a, p);
        p += 8;
        int n = getUShort(a, p);
        p += 2;
        int leasesStart = p;
        List<StampedLease> leases;
        if (n == 0) {
            leases = List.of();
        } else if (cache != null && cache.count == n && leasesStart + cache.length <= end
                && java.util.Arrays.equals(a, leasesStart, leasesStart + cache.length, cache.bytes, 0, cache.length)) {
            // The same bytes as the previous frame's leases (a valid region of n leases): same structure, same list.
            leases = cache.leases;
            p = leasesStart + cache.length;
        } else {
            for (int i = 0; i < n; i++) {
                if (p + 2 > end) {
                    throw structure(fileOffset, "lease " + i + " runs past the frame");
                }
                int nameLen = getUShort(a, p);
                p += 2;
                if (nameLen == 0 || p + nameLen + 12 > end) {
                    throw structure(fileOffset, "lease " + i + " name length " + nameLen
                            + " is empty or runs past the frame");
                }
                p += nameLen + 8;
                int wl = getInt(a, p);
                p += 4;
                if (wl < 0 || wl > MAX_WITNESS || p + wl > end) {
                    throw structure(fileOffset, "lease " + i + " witness length " + wl + " is invalid");
                }
                p += wl;
            }
            int leasesEnd = p;
            leases = decodeLeases(a, leasesStart, n);
            if (cache != null) {
                int len = leasesEnd - leasesStart;
                if (cache.bytes.length < len) {
                    cache.bytes = new byte[len];
                }
                System.arraycopy(a, leasesStart, cache.bytes, 0, len);
                cache.length = len;
                cache.count = n;
                cache.leases = leases;
            }
        }
        if (accept != null && !accept.test(leases)) {
            return false;
        }
        if (p + 4 > end) {
            throw structure(fileOffset, "message count runs past the frame");
        }
        int m = getInt(a, p);
        p += 4;
        if (m < 1 || m > (end - p) / 4) {
            throw structure(fileOffset, "message count " + m + " is invalid for the frame's length");
        }
        if (view.offsets.length < m) {
            view.offsets = new int[m];
            view.lengths = new int[m];
        }
        for (int i = 0; i < m; i++) {
            if (p + 4 > end) {
                throw structure(fileOffset, "message " + i + " runs past the frame");
            }
            int len = getInt(a, p);
            p += 4;
            if (len < 0 || p + len > end) {
                throw structure(fileOffset, "message " + i + " length " + len + " runs past the frame");
            }
            view.offsets[i] = p;
            view.lengths[i] = len;
            p += len;
        }
        if (p != end) {
            throw structure(fileOffset, (end - p) + " unexplained bytes at the end of the frame");
        }
        view.timestamp = t;
        view.leases = leases;
        view.array = a;
        view.count = m;
        return true;
    }

    /** Decodes {@code n} leases whose structure was checked. */
    private static List<StampedLease> decodeLeases(byte[] a, int p, int n) {
        StampedLease[] out = new StampedLease[n];
        for (int i = 0; i < n; i++) {
            int nameLen = getUShort(a, p);
            p += 2;
            String name = new String(a, p, nameLen, StandardCharsets.UTF_8);
            p += nameLen;
            long gen = getLong(a, p);
            p += 8;
            int wl = getInt(a, p);
            p += 4;
            byte[] w = java.util.Arrays.copyOfRange(a, p, p + wl);
            p += wl;
            out[i] = new StampedLease(name, gen, w);
        }
        return List.of(out);
    }

    private static FormatException structure(long fileOffset, String detail) {
        return new FormatException(fileOffset, "frame structure: " + detail);
    }
}
