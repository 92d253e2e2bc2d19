package org.leasehold.store.format;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * The segment file, version 1 (see {@code docs/FORMAT.md}): the frames of the sealed buckets of one time range of a
 * log, in read order, each behind a 16-byte entry header naming its source; then an index of lease names to entries,
 * a table of the source buckets, and a fixed trailer. All integers big-endian.
 *
 * <pre>
 * header   0  4  magic 0x4C485347 ("LHSG")
 *          4  2  version (1)
 *          6  2  flags (0)
 * entries  each: u32 source file number, u64 offset in that file, u32 CRC32C of those 12 bytes, the frame verbatim
 * index    u32 name count; each name (sorted by UTF-8 bytes): u16 length, UTF-8 name, u32 entry count k,
 *          k x { u64 entry offset, u32 entry length }
 * table    u32 bucket count; each bucket (in time order): u64 start, u8 state, u64 first entry, u64 end of entries,
 *          u32 file count, each: u16 length, name, u64 sealed size
 * trailer  u64 from, u64 to, u64 bucket width, u64 index offset, u64 table offset, u64 entry count, u16 version,
 *          u16 flags, u32 CRC32C of [index offset, trailer CRC), u32 magic 0x4C485345 ("LHSE")
 * </pre>
 */
public final class SegmentFile {
    public static final int MAGIC = 0x4C485347;
    public static final int END_MAGIC = 0x4C485345;
    public static final int VERSION = 1;
    public static final int HEADER = 8;
    /** Bytes of an entry before its frame: file number, source offset, CRC32C of the two. */
    public static final int ENTRY_HEADER = 16;
    public static final int TRAILER = 60;
    /** The largest index plus table plus trailer a reader loads at once. */
    public static final int MAX_META = 256 << 20;

    /** How a source bucket is read. */
    public enum State {
        /** Its frames are in the segment. */
        INCLUDED(1),
        /** It was not sealed when the segment was written: read from its directory. */
        UNSEALED(2),
        /** Reading it reported a problem (torn tail, corrupt or unsupported frame, bad lock file): read from its
         * directory, where the problem is reported as before. */
        UNREADABLE(3);

        final int code;

        State(int code) {
            this.code = code;
        }

        static State of(int code) {
            for (State s : values()) {
                if (s.code == code) {
                    return s;
                }
            }
            return null;
        }
    }

    /** A source data file of an included bucket, with the size its lock file lists. */
    public record Source(String name, long sealedSize) {
    }

    /**
     * A source bucket.
     *
     * @param start      its start, µs
     * @param state      how it is read
     * @param firstEntry the offset of its first entry (its entries are contiguous)
     * @param endEntry   the offset after its last entry
     * @param files      its data files as its lock file lists them (included buckets only), numbered in table order
     *                   across the segment
     */
    public record Bucket(long start, State state, long firstEntry, long endEntry, List<Source> files) {
    }

    /** The trailer's fields. */
    public record Trailer(long from, long to, long widthMicros, long indexOffset, long tableOffset, long entries) {
    }

    private SegmentFile() {
    }

    /** The file header. */
    public static byte[] header() {
        return ByteBuffer.allocate(HEADER).putInt(MAGIC).putShort((short) VERSION).putShort((short) 0).array();
    }

    /** Checks the file header of a segment. */
    public static void checkHeader(byte[] a) throws FormatException {
        if (a.length < HEADER || Frames.getInt(a, 0) != MAGIC) {
            throw new FormatException(0, "not a segment file (bad magic)");
        }
        int v = Frames.getUShort(a, 4);
        if (v != VERSION) {
            throw new FormatException(0, v, "segment format version " + v);
        }
    }

    /** The 16-byte entry header of a frame from source file {@code file} at {@code offset}. */
    public static void entryHeader(ByteBuffer b, int file, long offset) {
        int at = b.position();
        b.putInt(file).putLong(offset);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), b.arrayOffset() + at, 12);
        b.putInt((int) crc.getValue());
    }

    /** Whether the entry header at {@code off} matches its checksum. */
    public static boolean entryHeaderMatches(byte[] a, int off) {
        CRC32C crc = new CRC32C();
        crc.update(a, off, 12);
        return (int) crc.getValue() == Frames.getInt(a, off + 12);
    }

    /**
     * Encodes the index, table and trailer, to be written at {@code indexOffset} (the end of the entries).
     *
     * @param index entry offsets and lengths per lease name, each list in offset order
     */
    public static byte[] encodeMeta(long from, long to, long width, long indexOffset, long entries,
            Map<String, long[]> index, List<Bucket> buckets) {
        List<Map.Entry<byte[], long[]>> names = new ArrayList<>(index.size());
        for (Map.Entry<String, long[]> e : index.entrySet()) {
            names.add(Map.entry(e.getKey().getBytes(StandardCharsets.UTF_8), e.getValue()));
        }
        names.sort((x, y) -> Arrays.compareUnsigned(x.getKey(), y.getKey()));
        long size = 4;
        for (Map.Entry<byte[], long[]> n : names) {
            size += 2 + n.getKey().length + 4 + (long) 12 * (n.getValue().length / 2);
        }
        long tableOffsetRel = size;
        size += 4;
        for (Bucket b : buckets) {
            size += 8 + 1 + 8 + 8 + 4;
            for (Source s : b.files()) {
                size += 2 + s.name().length() + 8;
            }
        }
        size += TRAILER;
        if (size > MAX_META) {
            throw new IllegalArgumentException("the segment's index and table would take " + size + " bytes");
        }
        ByteBuffer b = ByteBuffer.allocate((int) size).order(ByteOrder.BIG_ENDIAN);
        b.putInt(names.size());
        for (Map.Entry<byte[], long[]> n : names) {
            long[] e = n.getValue();
            b.putShort((short) n.getKey().length).put(n.getKey()).putInt(e.length / 2);
            for (int i = 0; i < e.length; i += 2) {
                b.putLong(e[i]).putInt((int) e[i + 1]);
            }
        }
        b.putInt(buckets.size());
        for (Bucket k : buckets) {
            b.putLong(k.start()).put((byte) k.state().code).putLong(k.firstEntry()).putLong(k.endEntry())
                    .putInt(k.files().size());
            for (Source s : k.files()) {
                byte[] n = s.name().getBytes(StandardCharsets.US_ASCII);
                b.putShort((short) n.length).put(n).putLong(s.sealedSize());
            }
        }
        b.putLong(from).putLong(to).putLong(width).putLong(indexOffset).putLong(indexOffset + tableOffsetRel)
                .putLong(entries).putShort((short) VERSION).putShort((short) 0);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue()).putInt(END_MAGIC);
        return b.array();
    }

    /**
     * Reads the trailer from the last {@link #TRAILER} bytes of a file of {@code fileSize} bytes (checksum not yet
     * checked: see {@link #checkMeta}).
     */
    public static Trailer trailer(byte[] t, long fileSize) throws FormatException {
        if (t.length != TRAILER || Frames.getInt(t, TRAILER - 4) != END_MAGIC) {
            throw new FormatException(fileSize, "the segment's trailer is missing (bad end magic)");
        }
        int v = Frames.getUShort(t, 48);
        if (v != VERSION) {
            throw new FormatException(fileSize - TRAILER, v, "segment format version " + v);
        }
        Trailer tr = new Trailer(Frames.getLong(t, 0), Frames.getLong(t, 8), Frames.getLong(t, 16),
                Frames.getLong(t, 24), Frames.getLong(t, 32), Frames.getLong(t, 40));
        if (tr.indexOffset() < HEADER || tr.tableOffset() < tr.indexOffset()
                || tr.tableOffset() > fileSize - TRAILER || fileSize - tr.indexOffset() > MAX_META
                || tr.to() <= tr.from() || tr.widthMicros() <= 0) {
            throw new FormatException(fileSize - TRAILER, "the segment's trailer is inconsistent: " + tr);
        }
        return tr;
    }

    /** Checks the checksum of {@code meta}: the bytes from the index offset to the end of the file. */
    public static void checkMeta(byte[] meta, long indexOffset) throws FormatException {
        int crcAt = meta.length - 8;
        CRC32C crc = new CRC32C();
        crc.update(meta, 0, crcAt);
        if ((int) crc.getValue() != Frames.getInt(meta, crcAt)) {
            throw new FormatException(indexOffset, "the segment's index, table and trailer fail their CRC32C checksum");
        }
    }

    /** The bucket table, from {@code meta} (the bytes from the index offset to the end, checked). */
    public static List<Bucket> table(byte[] meta, Trailer t) throws FormatException {
        int p = (int) (t.tableOffset() - t.indexOffset());
        try {
            int n = Frames.getInt(meta, p);
            p += 4;
            List<Bucket> out = new ArrayList<>(Math.min(n, 1 << 16));
            for (int i = 0; i < n; i++) {
                long start = Frames.getLong(meta, p);
                State s = State.of(meta[p + 8]);
                long first = Frames.getLong(meta, p + 9);
                long end = Frames.getLong(meta, p + 17);
                int files = Frames.getInt(meta, p + 25);
                p += 29;
                if (s == null || files < 0 || first < HEADER || end < first || end > t.indexOffset()) {
                    throw new FormatException(t.tableOffset(), "bucket " + i + " of the segment's table is invalid");
                }
                List<Source> src = new ArrayList<>(files);
                for (int f = 0; f < files; f++) {
                    int len = Frames.getUShort(meta, p);
                    String name = new String(meta, p + 2, len, StandardCharsets.US_ASCII);
                    p += 2 + len;
                    src.add(new Source(name, Frames.getLong(meta, p)));
                    p += 8;
                }
                out.add(new Bucket(start, s, first, end, List.copyOf(src)));
            }
            return out;
        } catch (IndexOutOfBoundsException e) {
            throw new FormatException(t.tableOffset(), "the segment's table runs past its end");
        }
    }

    /**
     * The bucket table without its file names, for a read: per bucket its start, state, entries and where its file
     * list lies in the metadata ({@link #sources} parses one bucket's when it is needed); {@code fileBase[i]} is the
     * number of the bucket's first source file ({@code fileBase[size]} the total).
     */
    public record Table(long[] start, State[] state, long[] first, long[] end, int[] fileBase, int[] filesAt) {
        public int size() {
            return start.length;
        }
    }

    /** The bucket table of {@code meta} (checked) without parsing its file names: see {@link Table}. */
    public static Table tableIndex(byte[] meta, Trailer t) throws FormatException {
        int p = (int) (t.tableOffset() - t.indexOffset());
        try {
            int n = Frames.getInt(meta, p);
            p += 4;
            if (n < 0 || (long) n * 29 > meta.length - p) {
                throw new FormatException(t.tableOffset(), "the segment's table lists " + n + " buckets, more than fit");
            }
            long[] start = new long[n];
            State[] state = new State[n];
            long[] first = new long[n];
            long[] end = new long[n];
            int[] fileBase = new int[n + 1];
            int[] filesAt = new int[n];
            int files = 0;
            for (int i = 0; i < n; i++) {
                start[i] = Frames.getLong(meta, p);
                state[i] = State.of(meta[p + 8]);
                first[i] = Frames.getLong(meta, p + 9);
                end[i] = Frames.getLong(meta, p + 17);
                int count = Frames.getInt(meta, p + 25);
                p += 29;
                if (state[i] == null || count < 0 || first[i] < HEADER || end[i] < first[i]
                        || end[i] > t.indexOffset()) {
                    throw new FormatException(t.tableOffset(), "bucket " + i + " of the segment's table is invalid");
                }
                fileBase[i] = files;
                filesAt[i] = p;
                for (int f = 0; f < count; f++) {
                    p += 2 + Frames.getUShort(meta, p) + 8;
                }
                files += count;
            }
            fileBase[n] = files;
            if (p > meta.length - TRAILER) {
                throw new FormatException(t.tableOffset(), "the segment's table runs past its end");
            }
            return new Table(start, state, first, end, fileBase, filesAt);
        } catch (IndexOutOfBoundsException e) {
            throw new FormatException(t.tableOffset(), "the segment's table runs past its end");
        }
    }

    /** Bucket {@code i}'s source files, from {@code meta} and its {@link #tableIndex}. */
    public static List<Source> sources(byte[] meta, Table table, int i) {
        int p = table.filesAt()[i];
        int count = table.fileBase()[i + 1] - table.fileBase()[i];
        List<Source> src = new ArrayList<>(count);
        for (int f = 0; f < count; f++) {
            int len = Frames.getUShort(meta, p);
            String name = new String(meta, p + 2, len, StandardCharsets.US_ASCII);
            p += 2 + len;
            src.add(new Source(name, Frames.getLong(meta, p)));
            p += 8;
        }
        return List.copyOf(src);
    }

    /**
     * The entries of the frames naming any of {@code names}: offsets and lengths interleaved, in offset order, each
     * once.
     */
    public static long[] entriesNaming(byte[] meta, Set<String> names) throws FormatException {
        List<byte[]> wanted = new ArrayList<>();
        for (String n : names) {
            wanted.add(n.getBytes(StandardCharsets.UTF_8));
        }
        List<long[]> lists = new ArrayList<>();
        try {
            int count = Frames.getInt(meta, 0);
            int p = 4;
            for (int i = 0; i < count; i++) {
                int len = Frames.getUShort(meta, p);
                int nameAt = p + 2;
                p = nameAt + len;
                int k = Frames.getInt(meta, p);
                p += 4;
                if (k < 0 || (long) p + 12L * k > meta.length) {
                    throw new FormatException(0, "index entry " + i + " runs past the index");
                }
                for (byte[] w : wanted) {
                    if (w.length == len && Arrays.equals(meta, nameAt, nameAt + len, w, 0, len)) {
                        long[] e = new long[2 * k];
                        for (int j = 0; j < k; j++) {
                            e[2 * j] = Frames.getLong(meta, p + 12 * j);
                            e[2 * j + 1] = Frames.getInt(meta, p + 12 * j + 8);
                        }
                        lists.add(e);
                    }
                }
                p += 12 * k;
            }
        } catch (IndexOutOfBoundsException e) {
            throw new FormatException(0, "the segment's index runs past its end");
        }
        if (lists.isEmpty()) {
            return new long[0];
        }
        if (lists.size() == 1) {
            return lists.get(0);
        }
        // A frame naming several of the names is in several lists: merge by offset, each once.
        List<long[]> pairs = new ArrayList<>();
        for (long[] l : lists) {
            for (int i = 0; i < l.length; i += 2) {
                pairs.add(new long[] {l[i], l[i + 1]});
            }
        }
        Collections.sort(pairs, (x, y) -> Long.compare(x[0], y[0]));
        long[] out = new long[pairs.size() * 2];
        int n = 0;
        for (long[] x : pairs) {
            if (n > 0 && out[n - 2] == x[0]) {
                continue;
            }
            out[n++] = x[0];
            out[n++] = x[1];
        }
        return Arrays.copyOf(out, n);
    }

    /** The name of the published segment covering {@code [from, to)}. */
    public static String name(long from, long to) {
        return from + "-" + to + ".segment";
    }

    /** {@code [from, to)} of a published segment's name, or null if it is not one. */
    public static long[] parseName(String name) {
        if (!name.endsWith(".segment")) {
            return null;
        }
        String core = name.substring(0, name.length() - ".segment".length());
        int dash = core.indexOf('-');
        if (dash <= 0 || dash == core.length() - 1) {
            return null;
        }
        for (int i = 0; i < core.length(); i++) {
            char c = core.charAt(i);
            if (i != dash && (c < '0' || c > '9')) {
                return null;
            }
        }
        if (dash > 18 || core.length() - dash - 1 > 18) {
            return null;
        }
        long from = Long.parseLong(core.substring(0, dash));
        long to = Long.parseLong(core.substring(dash + 1));
        return to > from ? new long[] {from, to} : null;
    }
}
