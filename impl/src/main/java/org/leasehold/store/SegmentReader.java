package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Set;

import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.SegmentFile;

/**
 * Reads one published segment for a read: its source buckets that intersect the read's range in time order, and of
 * each included bucket its frames in read order (all of them sequentially, or through the index only those naming
 * one of the read's lease names, copied out of the segment mapped into memory). Verifies the index, table and
 * trailer checksum when opened, and every entry it returns (entry header checksum, frame header and checksum,
 * timestamp inside its bucket); anything wrong is a {@link Damage}, after which the reader falls back to the bucket
 * directories.
 */
final class SegmentReader implements AutoCloseable {
    private static final int CHUNK = 256 << 10;

    /** The segment does not read as written; {@link #bucket} is the source bucket where it was found. */
    static final class Damage extends Exception {
        private static final long serialVersionUID = 1L;
        final long bucket;

        Damage(long bucket, String detail) {
            super(detail, null, false, false);
            this.bucket = bucket;
        }
    }

    private final FileChannel ch;
    private final String name;
    private final SegmentFile.Trailer trailer;
    /** The index, table and trailer; the table without its file names, which are parsed per bucket read. */
    private final byte[] meta;
    private final SegmentFile.Table table;
    /** The source data files by number, parsed when first needed. */
    private final Names.DataFileName[] files;
    private final long from;
    private final long to;
    /** Entry offsets and lengths interleaved, for a read by lease names; null to read every entry. */
    private final long[] selected;
    private int bucketIndex = -1;
    private long pos;
    private long end;
    private int sel;
    private byte[] buf = new byte[0];
    /** The segment in memory, for a read by names ({@link #entry}); null until its first entry. */
    private MappedByteBuffer mapped;
    private long bufAt;
    private int bufEnd;

    /** The bucket being read, and the frame found by {@link #next}. */
    SegmentFile.Bucket bucket;
    byte[] frameBytes;
    int frameAt;
    int frameLength;
    long t;
    long sourceOffset;
    Names.DataFileName source;

    private SegmentReader(FileChannel ch, String name, SegmentFile.Trailer trailer, byte[] meta,
            SegmentFile.Table table, long[] selected, long from, long to) {
        this.ch = ch;
        this.name = name;
        this.trailer = trailer;
        this.meta = meta;
        this.table = table;
        this.selected = selected;
        this.from = from;
        this.to = to;
        this.files = new Names.DataFileName[table.fileBase()[table.size()]];
    }

    /** Reads everything but the entries: trailer, then index, table and their checksum. */
    private static byte[] meta(FileChannel ch, long size, SegmentFile.Trailer[] trailer) throws IOException,
            FormatException {
        checkSize(size);
        byte[] head = read(ch, 0, SegmentFile.HEADER);
        SegmentFile.checkHeader(head);
        SegmentFile.Trailer t = SegmentFile.trailer(read(ch, size - SegmentFile.TRAILER, SegmentFile.TRAILER), size);
        byte[] meta = read(ch, t.indexOffset(), (int) (size - t.indexOffset()));
        SegmentFile.checkMeta(meta, t.indexOffset());
        trailer[0] = t;
        return meta;
    }

    private static void checkSize(long size) throws FormatException {
        if (size < SegmentFile.HEADER + SegmentFile.TRAILER) {
            throw new FormatException(0, "the file is " + size + " bytes, shorter than a header and a trailer");
        }
    }

    /**
     * The verified metadata of the segment open on {@code ch}: from {@code cache} when it holds this file's (same
     * path, size and trailer bytes), else read, checked and parsed, and kept there.
     */
    private static SegmentMetaCache.Meta verified(FileChannel ch, Path file, SegmentMetaCache cache)
            throws IOException, FormatException {
        long size = ch.size();
        checkSize(size);
        if (cache == null) {
            SegmentFile.Trailer[] t = new SegmentFile.Trailer[1];
            byte[] meta = meta(ch, size, t);
            return new SegmentMetaCache.Meta(t[0], meta, SegmentFile.tableIndex(meta, t[0]));
        }
        byte[] tail = read(ch, size - SegmentFile.TRAILER, SegmentFile.TRAILER);
        String key = file.toString();
        SegmentMetaCache.Meta m = cache.get(key, size, tail);
        if (m != null) {
            return m;
        }
        SegmentFile.checkHeader(read(ch, 0, SegmentFile.HEADER));
        SegmentFile.Trailer t = SegmentFile.trailer(tail, size);
        byte[] meta = read(ch, t.indexOffset(), (int) (size - t.indexOffset()));
        SegmentFile.checkMeta(meta, t.indexOffset());
        if (!java.util.Arrays.equals(meta, meta.length - SegmentFile.TRAILER, meta.length, tail, 0, tail.length)) {
            throw new FormatException(t.indexOffset(), "the segment changed while it was read");
        }
        m = new SegmentMetaCache.Meta(t, meta, SegmentFile.tableIndex(meta, t));
        cache.put(key, size, tail, m);
        return m;
    }

    /**
     * Opens segment {@code file} for a read of {@code [from, to)}, by {@code names} through the index if not empty,
     * taking its verified metadata from {@code cache} when it holds it (null: no cache).
     *
     * @throws Damage the segment's header, trailer, index or table does not read as written
     */
    static SegmentReader open(NfsSafeFiles fs, Path file, long width, long from, long to, Set<String> names,
            SegmentMetaCache cache) throws IOException, Damage {
        FileChannel ch = fs.openForRead(file);
        try {
            SegmentMetaCache.Meta m = verified(ch, file, cache);
            SegmentFile.Trailer t = m.trailer();
            long[] range = SegmentFile.parseName(file.getFileName().toString());
            if (range == null || range[0] != t.from() || range[1] != t.to() || t.widthMicros() != width) {
                throw new FormatException(0, "its trailer covers [" + t.from() + ", " + t.to() + ") in buckets of "
                        + t.widthMicros() + " µs, not what its name and the log say");
            }
            long[] selected = names.isEmpty() ? null : SegmentFile.entriesNaming(m.meta(), names);
            return new SegmentReader(ch, file.getFileName().toString(), t, m.meta(), m.table(), selected, from, to);
        } catch (FormatException e) {
            close(ch);
            throw new Damage(Math.max(from, rangeStart(file)), e.getMessage());
        } catch (java.io.EOFException e) {
            close(ch);
            throw new Damage(Math.max(from, rangeStart(file)), e.getMessage());
        } catch (IOException | RuntimeException e) {
            close(ch);
            throw e;
        }
    }

    private static long rangeStart(Path file) {
        long[] r = SegmentFile.parseName(file.getFileName().toString());
        return r == null ? 0 : r[0];
    }

    /** Null if segment {@code file}'s header, trailer, index and table read as written, else what is wrong. */
    static String verify(NfsSafeFiles fs, Path file) throws IOException {
        try (FileChannel ch = fs.openForRead(file)) {
            SegmentFile.Trailer[] t = new SegmentFile.Trailer[1];
            byte[] meta = meta(ch, ch.size(), t);
            SegmentFile.table(meta, t[0]);
            return null;
        } catch (FormatException | java.io.EOFException e) {
            return e.getMessage();
        }
    }

    /** The starts of the buckets the segment's table lists in {@code [a, b)}, in time order. */
    long[] bucketsIn(long a, long b) {
        long width = trailer.widthMicros();
        long[] out = new long[table.size()];
        int n = 0;
        for (long k : table.start()) {
            if (k + width > a && k < b) {
                out[n++] = k;
            }
        }
        return java.util.Arrays.copyOf(out, n);
    }

    /** The segment's file name. */
    String name() {
        return name;
    }

    /** {@code [from, to)} of the segment. */
    long segmentFrom() {
        return trailer.from();
    }

    long segmentTo() {
        return trailer.to();
    }

    /**
     * Moves to the next source bucket that intersects the read's range; false at the end. Then, for an included
     * bucket, {@link #next} returns its frames.
     */
    boolean nextBucket() {
        long width = trailer.widthMicros();
        long[] starts = table.start();
        while (++bucketIndex < starts.length) {
            int i = bucketIndex;
            if (starts[i] + width <= from || starts[i] >= to) {
                continue;
            }
            SegmentFile.State state = table.state()[i];
            if (selected != null) {
                sel = lowerBound(selected, table.first()[i]);
                if (state == SegmentFile.State.INCLUDED && (sel >= selected.length || selected[sel] >= table.end()[i])) {
                    // A read by names: none of this bucket's frames carries one of them.
                    continue;
                }
            }
            bucket = new SegmentFile.Bucket(starts[i], state, table.first()[i], table.end()[i],
                    SegmentFile.sources(meta, table, i));
            pos = bucket.firstEntry();
            end = bucket.endEntry();
            return true;
        }
        bucket = null;
        return false;
    }

    private static int lowerBound(long[] pairs, long offset) {
        int lo = 0;
        int hi = pairs.length / 2;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (pairs[2 * mid] < offset) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return 2 * lo;
    }

    /** The next frame of the current (included) bucket into the public fields; false at its end. */
    boolean next() throws IOException, Damage {
        if (bucket.state() != SegmentFile.State.INCLUDED) {
            return false;
        }
        long at;
        int length;
        if (selected != null) {
            if (sel >= selected.length || selected[sel] >= end) {
                return false;
            }
            at = selected[sel];
            length = (int) selected[sel + 1];
            sel += 2;
            if (length < SegmentFile.ENTRY_HEADER + Frames.MIN_FRAME || at + length > end) {
                throw damage("index entry at " + at + " of " + length + " bytes lies outside its bucket's entries");
            }
            buf = entry(at, length);
            bufAt = at;
            bufEnd = length;
        } else {
            if (pos >= end) {
                return false;
            }
            at = pos;
            ensure(at, SegmentFile.ENTRY_HEADER + Frames.HEADER);
            int frameLen = Frames.getInt(buf, (int) (at - bufAt) + SegmentFile.ENTRY_HEADER + 8);
            if (frameLen < Frames.MIN_FRAME || at + SegmentFile.ENTRY_HEADER + frameLen > end) {
                throw damage("the entry at " + at + " has a frame length of " + frameLen + " bytes");
            }
            length = SegmentFile.ENTRY_HEADER + frameLen;
            ensure(at, length);
            pos = at + length;
        }
        int e = (int) (at - bufAt);
        if (!SegmentFile.entryHeaderMatches(buf, e)) {
            throw damage("the entry header at " + at + " fails its checksum");
        }
        int fileNo = Frames.getInt(buf, e);
        int[] fileBase = table.fileBase();
        if (fileNo < fileBase[bucketIndex] || fileNo >= fileBase[bucketIndex + 1]) {
            throw damage("the entry at " + at + " names source file " + fileNo + ", not one of its bucket's");
        }
        if (files[fileNo] == null) {
            String n = bucket.files().get(fileNo - fileBase[bucketIndex]).name();
            files[fileNo] = Names.parseDataFile(n);
            if (files[fileNo] == null) {
                throw damage("the table lists '" + n + "', not a data file name");
            }
        }
        int f = e + SegmentFile.ENTRY_HEADER;
        int len;
        try {
            len = Frames.checkHeader(buf, f, at, BagStoreConfig.FRAME_LIMIT);
        } catch (FormatException ex) {
            throw damage("the frame of the entry at " + at + ": " + ex.getMessage());
        }
        if (len != length - SegmentFile.ENTRY_HEADER || !Frames.checksumMatches(buf, f, len)) {
            throw damage("the frame of the entry at " + at + " fails its checksum or length");
        }
        long ts = Frames.getLong(buf, f + Frames.HEADER);
        if (ts < bucket.start() || ts >= bucket.start() + trailer.widthMicros()) {
            throw damage("the frame of the entry at " + at + " has timestamp " + ts + " µs, outside its bucket");
        }
        frameBytes = buf;
        frameAt = f;
        frameLength = len;
        t = ts;
        sourceOffset = Frames.getLong(buf, e + 4);
        source = files[fileNo];
        return true;
    }

    /**
     * The {@code length} bytes of the entry at {@code at}, for a read by names. The entries of a name lie apart (those
     * of every other name between them), so the segment is mapped into memory on the first such entry and each entry
     * copied out of it: no system call per entry, where a positioned read each made the read of a name's messages one
     * system call per message. A published segment is never written again, so the mapping stays what was verified.
     */
    private byte[] entry(long at, int length) throws IOException, Damage {
        if (mapped == null) {
            long size = ch.size();
            if (size > Integer.MAX_VALUE) {
                try {
                    return read(ch, at, length);
                } catch (java.io.EOFException ex) {
                    throw damage(ex.getMessage());
                }
            }
            mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, size);
        }
        if (at + length > mapped.capacity()) {
            throw damage("the file ends at " + mapped.capacity() + "; " + length + " bytes were expected from " + at);
        }
        byte[] a = new byte[length];
        try {
            mapped.get((int) at, a);
        } catch (InternalError e) {
            // The JVM's word for a page that could not be read (the file shrank or the storage failed under it).
            throw damage("the entry at " + at + " could not be read from the mapped segment (" + e.getMessage() + ")");
        }
        return a;
    }

    private Damage damage(String detail) {
        return new Damage(bucket.start(), detail);
    }

    /** Makes {@code n} bytes from {@code at} available, in a fresh chunk when they are not (messages keep chunks). */
    private void ensure(long at, int n) throws IOException, Damage {
        if (at >= bufAt && at + n <= bufAt + bufEnd) {
            return;
        }
        int size = (int) Math.min(Math.max(n, CHUNK), Math.max(n, end - at));
        byte[] next = new byte[size];
        int got = 0;
        while (got < size) {
            int r = ch.read(ByteBuffer.wrap(next, got, size - got), at + got);
            if (r < 0) {
                throw damage("the file ends at " + (at + got) + ", inside its entries");
            }
            got += r;
        }
        buf = next;
        bufAt = at;
        bufEnd = size;
    }

    private static byte[] read(FileChannel ch, long at, int n) throws IOException {
        byte[] a = new byte[n];
        int got = 0;
        while (got < n) {
            int r = ch.read(ByteBuffer.wrap(a, got, n - got), at + got);
            if (r < 0) {
                throw new java.io.EOFException("the file ends at " + (at + got) + "; " + n + " bytes were expected from "
                        + at);
            }
            got += r;
        }
        return a;
    }

    private static void close(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException e) {
            // Read-only channel; nothing to lose.
        }
    }

    @Override
    public void close() {
        close(ch);
    }
}
