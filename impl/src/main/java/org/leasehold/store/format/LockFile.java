package org.leasehold.store.format;

import java.util.ArrayList;
import java.util.List;

/**
 * The lock file of a sealed bucket: which data files the bucket holds and how many bytes of each belong to it.
 * Readers read each listed file exactly to its listed size and ignore everything else. Text, verified by a CRC32C
 * (see {@code docs/FORMAT.md}):
 *
 * <pre>
 * leasehold-lock 1
 * log orders
 * bucket 1795315381000000 1000000
 * sealer host-a-0
 * sealed-at 1795315384012345
 * files 2
 * host-a-0.0.data 40960
 * host-b-0.0.data 1234
 * crc32c 1a2b3c4d
 * </pre>
 *
 * @param log         the log
 * @param bucketStart the bucket's start (µs)
 * @param widthMicros the bucket's width (µs)
 * @param sealer      the identity of the process whose lock file won
 * @param sealedAt    the sealer's clock when it listed the sizes (µs)
 * @param files       the data files, sorted by name
 */
public record LockFile(String log, long bucketStart, long widthMicros, String sealer, long sealedAt, List<Entry> files) {
    private static final String FIRST = "leasehold-lock 1";

    public LockFile {
        files = List.copyOf(files);
    }

    /**
     * One data file.
     *
     * @param name the data file's name
     * @param size its size when the bucket was sealed
     */
    public record Entry(String name, long size) {
    }

    /** The listed size of {@code name}, or -1 if it is not listed. */
    public long sizeOf(String name) {
        for (Entry e : files) {
            if (e.name.equals(name)) {
                return e.size;
            }
        }
        return -1;
    }

    /** The sum of the listed sizes. */
    public long totalBytes() {
        long t = 0;
        for (Entry e : files) {
            t += e.size;
        }
        return t;
    }

    /** The file's bytes. */
    public byte[] encode() {
        List<String> lines = new ArrayList<>();
        lines.add(FIRST);
        lines.add("log " + log);
        lines.add("bucket " + bucketStart + " " + widthMicros);
        lines.add("sealer " + sealer);
        lines.add("sealed-at " + sealedAt);
        lines.add("files " + files.size());
        for (Entry e : files) {
            lines.add(e.name + " " + e.size);
        }
        return TextRecord.seal(lines);
    }

    /** Parses and verifies a lock file. */
    public static LockFile parse(byte[] bytes) throws FormatException {
        String what = "the lock file";
        List<String> lines = TextRecord.open(bytes, what);
        if (lines.isEmpty() || !lines.get(0).equals(FIRST)) {
            String first = lines.isEmpty() ? "" : lines.get(0);
            if (first.startsWith("leasehold-lock ")) {
                throw new FormatException(0, parseVersion(first.substring(15)), what + " is in format '" + first
                        + "'; this reader knows '" + FIRST + "'");
            }
            throw new FormatException(0, what + " does not start with '" + FIRST + "'");
        }
        String log = TextRecord.field(lines, 1, "log", what);
        String[] bucket = TextRecord.field(lines, 2, "bucket", what).split(" ");
        if (bucket.length != 2) {
            throw new FormatException(0, what + " has a malformed 'bucket' line");
        }
        long start = TextRecord.number(bucket[0], "bucket", what);
        long width = TextRecord.number(bucket[1], "bucket", what);
        String sealer = TextRecord.field(lines, 3, "sealer", what);
        long sealedAt = TextRecord.number(TextRecord.field(lines, 4, "sealed-at", what), "sealed-at", what);
        long n = TextRecord.number(TextRecord.field(lines, 5, "files", what), "files", what);
        if (n < 0 || n != lines.size() - 6) {
            throw new FormatException(0, what + " says 'files " + n + "' but lists " + (lines.size() - 6));
        }
        List<Entry> files = new ArrayList<>();
        for (int i = 6; i < lines.size(); i++) {
            String l = lines.get(i);
            int sp = l.indexOf(' ');
            if (sp <= 0 || l.indexOf(' ', sp + 1) >= 0 || l.indexOf('/') >= 0) {
                throw new FormatException(0, what + " line " + (i + 1) + " is not '<data file> <size>': '" + l + "'");
            }
            long size = TextRecord.number(l.substring(sp + 1), "size", what);
            if (size < 0) {
                throw new FormatException(0, what + " lists a negative size: '" + l + "'");
            }
            files.add(new Entry(l.substring(0, sp), size));
        }
        return new LockFile(log, start, width, sealer, sealedAt, files);
    }

    private static int parseVersion(String s) {
        try {
            int v = Integer.parseInt(s.trim());
            return v == 0 ? -1 : v;
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
