package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.zip.CRC32C;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;

/**
 * Reads the frames of one data file sequentially, up to a limit (the lock file's size for a sealed bucket, the size
 * at open for an unsealed one), in chunks of 64 KiB (larger only for a larger frame). Each refill reads into a fresh
 * chunk, so the messages decoded from a chunk can keep referring to it instead of copying their payloads. Verifies
 * every frame (header, checksum, timestamp inside the bucket and never decreasing) and tells torn tails from
 * corruption: a frame that is incomplete with no valid frame after it, zero-filled, or fails its checksum as the last
 * thing before the limit is a torn tail (in a sealed bucket, a write that was never acknowledged; in an unsealed one,
 * an incomplete tail unless the file grew since it was opened) and ends the file; anything else that fails is
 * corruption. When unreadable records are skipped, reading resumes after corruption at the next position where a
 * frame's header and checksum are valid (a frame whose checksum holds but whose timestamp is out of place is skipped
 * alone), and the skipped byte range is reported.
 */
final class FileCursor {
    static final int BUFFER = 64 << 10;

    final Names.DataFileName name;
    private final CursorBucket bucket;
    private final FileChannel ch;
    private final long limit;
    private final CRC32C crc = new CRC32C();
    private final int chunkSize;
    private byte[] buf;
    private long bufFileOffset;
    private int bufEnd;
    private long pos;
    private long prevT = Long.MIN_VALUE;

    /** This file's place among the bucket's files in {@code (writer, sequence)} order: breaks timestamp ties. */
    int rank;
    /** The leases of this file's last decoded frame, shared while they repeat. */
    final Frames.LeaseCache leases = new Frames.LeaseCache();
    long t;
    long frameOffset;
    int frameLength;
    int frameAt;

    FileCursor(Names.DataFileName name, CursorBucket bucket, FileChannel ch, long limit, int chunkSize) {
        this.name = name;
        this.bucket = bucket;
        this.ch = ch;
        this.limit = limit;
        this.chunkSize = chunkSize;
        this.buf = new byte[0];
    }

    /** The chunk holding the current frame at {@link #frameAt}; never written again once a frame was decoded from it. */
    byte[] frameBytes() {
        return buf;
    }

    /** Moves to the next valid frame; false at the end of the file (or of what can be read of it). */
    boolean advance() throws BagStoreException {
        try {
            while (true) {
                Boolean r = step();
                if (r != null) {
                    return r;
                }
            }
        } catch (IOException e) {
            throw new StoreUnavailableException("reading data file " + name.name() + " of " + bucket.describe()
                    + " failed at offset " + pos + ": " + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
    }

    /**
     * One frame: true if found, false at the end, null if damaged bytes were skipped and the next frame should be
     * tried.
     */
    private Boolean step() throws BagStoreException, IOException {
        long remaining = limit - pos;
        if (remaining <= 0) {
            return false;
        }
        if (remaining < Frames.HEADER) {
            if (ensure((int) remaining)) {
                torn("only " + remaining + " bytes remain: an incomplete frame header");
            }
            return false;
        }
        if (!ensure(Frames.HEADER)) {
            return false;
        }
        int at = (int) (pos - bufFileOffset);
        int length;
        try {
            length = Frames.checkHeader(buf, at, pos, bucket.maxFrame());
        } catch (FormatException e) {
            if (e.version() != 0) {
                unsupported(e.version(), e.getMessage());
                return false;
            } else if (zerosUntilLimit()) {
                torn("the rest of the file is zero bytes (space allocated by a write that never completed)");
                return false;
            }
            return damaged(e.getMessage());
        }
        if (length > remaining) {
            long bad = pos;
            long next = resync(pos + 1);
            pos = bad;
            if (next < 0) {
                torn("a frame of " + length + " bytes, but only " + remaining + " remain");
                return false;
            }
            return damaged("the frame's header gives a length of " + length + " bytes, more than the " + remaining
                    + " that remain, and a valid frame follows at offset " + next + " (a damaged length field)");
        }
        if (!ensure(length)) {
            return false;
        }
        at = (int) (pos - bufFileOffset);
        if (!Frames.checksumMatches(buf, at, length, crc)) {
            if (pos + length == limit) {
                torn("the last frame (" + length + " bytes) fails its CRC32C checksum");
                return false;
            }
            return damaged("the frame (" + length + " bytes) fails its CRC32C checksum");
        }
        long ts = Frames.getLong(buf, at + Frames.HEADER);
        if (ts < bucket.start() || ts >= bucket.end()) {
            corruptFrame(pos, length, "the frame's timestamp " + ts + " µs lies outside the bucket [" + bucket.start()
                    + ", " + bucket.end() + ")");
            pos += length;
            return null;
        }
        if (ts < prevT) {
            corruptFrame(pos, length, "the frame's timestamp " + ts + " µs is below the previous frame's " + prevT
                    + " µs (a data file is in timestamp order)");
            pos += length;
            return null;
        }
        t = ts;
        prevT = ts;
        frameOffset = pos;
        frameLength = length;
        frameAt = at;
        pos += length;
        return true;
    }

    /**
     * Damaged bytes at {@link #pos} whose end the header does not give: when skipping, reported from here to the next
     * position where a frame's header and checksum are valid, and reading resumes there (null), or to the limit if
     * there is none (false); otherwise thrown.
     */
    private Boolean damaged(String detail) throws BagStoreException, IOException {
        long bad = pos;
        if (!bucket.skip()) {
            corrupt(bad, detail);
            return false;
        }
        long next = resync(bad + 1);
        if (next < 0) {
            bucket.problem(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, bucket.log(), bucket.path(), name.name(),
                    bad, limit, detail + "; no valid frame follows, so the rest of the file (" + (limit - bad)
                    + " bytes) was skipped"));
            pos = limit;
            return false;
        }
        bucket.problem(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, bucket.log(), bucket.path(), name.name(), bad,
                next, detail + "; " + (next - bad) + " bytes were skipped, reading resumed at offset " + next
                + " (the next valid frame)"));
        pos = next;
        return null;
    }

    /**
     * The first offset at or after {@code from} where a frame starts whose header and checksum are valid and that ends
     * by the limit, or -1 if there is none. Moves {@link #pos}.
     */
    private long resync(long from) throws BagStoreException, IOException {
        for (long p = from; p + Frames.MIN_FRAME <= limit; p++) {
            pos = p;
            if (!ensure(Frames.HEADER)) {
                return -1;
            }
            int at = (int) (p - bufFileOffset);
            if (Frames.getInt(buf, at) != Frames.MAGIC) {
                continue;
            }
            if (validAt(p)) {
                return p;
            }
        }
        return -1;
    }

    /** Whether a frame with a valid header and checksum, ending by the limit, starts at {@code p}. Moves {@link #pos}. */
    private boolean validAt(long p) throws BagStoreException, IOException {
        if (p + Frames.MIN_FRAME > limit) {
            return false;
        }
        pos = p;
        if (!ensure(Frames.HEADER)) {
            return false;
        }
        int at = (int) (p - bufFileOffset);
        int length;
        try {
            length = Frames.checkHeader(buf, at, p, bucket.maxFrame());
        } catch (FormatException e) {
            return false;
        }
        if (length > limit - p || !ensure(length)) {
            return false;
        }
        return Frames.checksumMatches(buf, (int) (p - bufFileOffset), length, crc);
    }

    /**
     * Makes {@code n} bytes from {@link #pos} available in the buffer; false if the file ends first (shorter than its
     * limit), which is reported.
     */
    private boolean ensure(int n) throws IOException, BagStoreException {
        long have = bufFileOffset + bufEnd - pos;
        if (have >= n) {
            return true;
        }
        int keep = (int) have;
        int from = (int) (pos - bufFileOffset);
        // A fresh chunk: frames decoded from the old one may still be referenced by messages.
        int size = (int) Math.min(Math.max(n, chunkSize), Math.max(n, limit - pos));
        byte[] next = new byte[size];
        System.arraycopy(buf, from, next, 0, keep);
        buf = next;
        bufFileOffset = pos;
        bufEnd = keep;
        while (bufEnd < n) {
            long fileAt = bufFileOffset + bufEnd;
            int want = (int) Math.min(buf.length - bufEnd, limit - fileAt);
            int r = ch.read(ByteBuffer.wrap(buf, bufEnd, want), fileAt);
            if (r < 0) {
                shortFile(fileAt);
                return false;
            }
            bufEnd += r;
        }
        return true;
    }

    /** True if every byte from {@link #pos} to the limit is zero. */
    private boolean zerosUntilLimit() throws IOException, BagStoreException {
        long start = pos;
        try {
            long p = pos;
            while (p < limit) {
                int n = (int) Math.min(BUFFER, limit - p);
                pos = p;
                if (!ensure(n)) {
                    return false;
                }
                int at = (int) (p - bufFileOffset);
                for (int i = 0; i < n; i++) {
                    if (buf[at + i] != 0) {
                        return false;
                    }
                }
                p += n;
            }
            return true;
        } finally {
            pos = start;
        }
    }

    /**
     * An incomplete tail at {@link #pos}: in a sealed bucket a torn tail; in an unsealed one an incomplete tail,
     * unless the file has grown since it was opened (a write in progress, which a later read delivers).
     */
    private void torn(String detail) throws IOException {
        if (!bucket.sealed() && ch.size() > limit) {
            return;
        }
        bucket.torn(name.name(), pos, limit, detail);
    }

    private void corrupt(long offset, String detail) throws BagStoreException {
        String msg = "corrupt record in log '" + bucket.log() + "', bucket " + bucket.path() + ", data file "
                + name.name() + " at offset " + offset + ": " + detail + ". Restore the file from a replica or backup, "
                + "or read with skippingUnreadable() to skip the damaged bytes up to the next valid frame and get a "
                + "report";
        if (bucket.skip()) {
            bucket.problem(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, bucket.log(), bucket.path(), name.name(),
                    offset, limit, detail + "; the rest of the file was skipped"));
            return;
        }
        throw new CorruptRecordException(bucket.log(), bucket.path(), name.name(), offset, msg);
    }

    /** A corrupt frame whose length is trustworthy: reported and skipped alone, or thrown. */
    private void corruptFrame(long offset, int length, String detail) throws BagStoreException {
        if (bucket.skip()) {
            bucket.problem(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, bucket.log(), bucket.path(), name.name(),
                    offset, offset + length, detail + "; this frame (" + length + " bytes) was skipped"));
            return;
        }
        corrupt(offset, detail);
    }

    private void unsupported(int version, String detail) throws BagStoreException {
        String msg = "record in log '" + bucket.log() + "', bucket " + bucket.path() + ", data file " + name.name()
                + " at offset " + pos + " is in " + detail + ": it was written by a newer Leasehold; upgrade this reader "
                + "(or read with skippingUnreadable() to skip the rest of this file and get a report)";
        if (bucket.skip()) {
            bucket.problem(new ReadProblem(ReadProblem.Kind.UNSUPPORTED_VERSION, bucket.log(), bucket.path(),
                    name.name(), pos, limit, detail + "; the rest of the file was skipped"));
            return;
        }
        throw new UnsupportedFormatVersionException(bucket.log(), bucket.path(), name.name(), pos, version, msg);
    }

    private void shortFile(long at) throws BagStoreException {
        if (!bucket.sealed()) {
            bucket.torn(name.name(), at, limit, "the file ends at " + at + " bytes, shorter than the " + limit
                    + " it had when the read opened it: it was cut while being read");
            return;
        }
        corrupt(at, "the file ends at " + at + " bytes but the bucket's lock file lists " + limit
                + ": acknowledged bytes are missing (lost in a machine crash under a flush policy other than "
                + "every-batch, or the file was truncated)");
    }

    void close() {
        try {
            ch.close();
        } catch (IOException e) {
            // Read-only channel; nothing to lose.
        }
    }
}
