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

    /** Reads a big-endian int. */
    public static int getInt(byte[] a, int i) {
        return ((a[i] & 0xff) << 24) | ((a[i + 1] & 0xff) << 16) | ((a[i + 2] & 0xff) << 8) | (a[i + 3] & 0xff);
    }

    /** Reads a big-endian unsigned short. */
    public static int getUShort(byte[] a, int i) {
        return ((a[i] & 0xff) << 8) | (a[i + 1] & 0xff);
    }

    /** Reads a big-endian long. */
    public static long getLong(byte[] a, int i) {
        return ((long) getInt(a, i) << 32) | (getInt(a, i + 4) & 0xffff_ffffL);
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
        return getInt(a, off + 12) == checksum(a, off, length);
    }

    /** A decoded frame body. */
    public record Body(long timestamp, List<StampedLease> leases, byte[][] payloads) {
    }

    /**
     * Remembers the encoded leases of the last frame decoded with it and their decoded list, so that a run of frames
     * written under the same leases (the common case in one data file) shares one immutable list. Not thread-safe.
     */
    public static final class LeaseCache {
        private byte[] bytes = new byte[64];
        private int length = -1;
        private List<StampedLease> leases;
    }

    public static Body decode(byte[] a, int off, int length, long fileOffset) throws FormatException {
        return decode(a, off, length, fileOffset, null, null);
    }

    /**
     * Decodes the body of a complete frame whose header and checksum were checked; returns null without copying
     * payloads when {@code accept} (if given) rejects the frame's leases. Throws if the structure does not add up to
     * exactly {@code length} bytes. The lease list is immutable.
     */
    public static Body decode(byte[] a, int off, int length, long fileOffset,
            java.util.function.Predicate<List<StampedLease>> accept, LeaseCache cache) throws FormatException {
        int end = off + length;
        int p = off + HEADER;
        long t = getLong(a, p);
        p += 8;
        int n = getUShort(a, p);
        p += 2;
        int leasesStart = p;
        for (int i = 0; i < n; i++) {
            if (p + 2 > end) {
                throw structure(fileOffset, "lease " + i + " runs past the frame");
            }
            int nameLen = getUShort(a, p);
            p += 2;
            if (nameLen == 0 || p + nameLen + 12 > end) {
                throw structure(fileOffset, "lease " + i + " name length " + nameLen + " is empty or runs past the frame");
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
        List<StampedLease> leases;
        if (n == 0) {
            leases = List.of();
        } else if (cache != null && cache.length == leasesEnd - leasesStart
                && java.util.Arrays.equals(a, leasesStart, leasesEnd, cache.bytes, 0, cache.length)) {
            leases = cache.leases;
        } else {
            leases = decodeLeases(a, leasesStart, n);
            if (cache != null) {
                int len = leasesEnd - leasesStart;
                if (cache.bytes.length < len) {
                    cache.bytes = new byte[len];
                }
                System.arraycopy(a, leasesStart, cache.bytes, 0, len);
                cache.length = len;
                cache.leases = leases;
            }
        }
        if (accept != null && !accept.test(leases)) {
            return null;
        }
        if (p + 4 > end) {
            throw structure(fileOffset, "message count runs past the frame");
        }
        int m = getInt(a, p);
        p += 4;
        if (m < 1 || m > (end - p) / 4) {
            throw structure(fileOffset, "message count " + m + " is invalid for the frame's length");
        }
        byte[][] payloads = new byte[m][];
        for (int i = 0; i < m; i++) {
            if (p + 4 > end) {
                throw structure(fileOffset, "message " + i + " runs past the frame");
            }
            int len = getInt(a, p);
            p += 4;
            if (len < 0 || p + len > end) {
                throw structure(fileOffset, "message " + i + " length " + len + " runs past the frame");
            }
            byte[] payload = new byte[len];
            System.arraycopy(a, p, payload, 0, len);
            p += len;
            payloads[i] = payload;
        }
        if (p != end) {
            throw structure(fileOffset, (end - p) + " unexplained bytes at the end of the frame");
        }
        return new Body(t, leases, payloads);
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
            byte[] w = new byte[wl];
            System.arraycopy(a, p, w, 0, wl);
            p += wl;
            out[i] = new StampedLease(name, gen, w);
        }
        return List.of(out);
    }

    private static FormatException structure(long fileOffset, String detail) {
        return new FormatException(fileOffset, "frame structure: " + detail);
    }
}
