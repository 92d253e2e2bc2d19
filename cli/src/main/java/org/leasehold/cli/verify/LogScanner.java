package org.leasehold.cli.verify;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * Reads one log from its directory alone, following docs/FORMAT.md: the descriptor, every bucket directory, its lock
 * file, its data files (to the lock file's sizes when sealed), and the published segments. It shares no code with the
 * store's writer or reader, so a bug in their format code cannot hide itself from the verifier. Everything that does
 * not read as the format says is reported as a {@link Finding}; each bucket's valid frames go to a {@link Sink}, the
 * buckets in time order.
 */
final class LogScanner {
    private static final int FRAME_MAGIC = 0x4C484246;
    private static final int SEGMENT_MAGIC = 0x4C485347;
    private static final int SEGMENT_END_MAGIC = 0x4C485345;
    private static final int TRAILER = 60;
    private static final int MAX_FRAME = 256 << 20;

    /** Where the frames and findings go. */
    interface Sink {
        /** The log's buckets are known: {@code buckets} of them will follow. */
        void starting(String log, int buckets);

        /** The valid frames of one bucket, in file order (not yet in read order). */
        void bucket(String log, long start, boolean sealed, List<StoredFrame> frames);

        /** Something that does not read as the format says. */
        void finding(Finding f);
    }

    /** A bucket of a segment's table in state "included", with its entries. */
    private record SegmentBucket(String segment, List<StoredFrame> frames, List<String> files) {
    }

    private final Path logDir;
    private final String log;
    private final Sink sink;
    private long width;

    LogScanner(Path logDir, String log, Sink sink) {
        this.logDir = logDir;
        this.log = log;
        this.sink = sink;
    }

    /** Reads the whole log. */
    void scan() throws IOException {
        width = descriptorWidth();
        TreeMap<Long, Path> buckets = new TreeMap<>();
        findBuckets(logDir, 0, new int[6], buckets);
        Map<Long, SegmentBucket> segmented = readSegments();
        for (Long s : segmented.keySet()) {
            buckets.putIfAbsent(s, null);
        }
        sink.starting(log, buckets.size());
        for (Map.Entry<Long, Path> e : buckets.entrySet()) {
            readBucket(e.getKey(), e.getValue(), segmented.get(e.getKey()));
        }
    }

    private void finding(Finding.Kind kind, long bucket, String file, long offset, String message) {
        sink.finding(new Finding(kind, log, bucket, file, offset, null, message));
    }

    // ---- descriptor and lock file (FORMAT.md, "Log descriptor", "Lock file")

    private long descriptorWidth() throws IOException {
        Path d = logDir.resolve("descriptor");
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(d);
        } catch (NoSuchFileException e) {
            finding(Finding.Kind.BAD_DESCRIPTOR, Long.MIN_VALUE, "descriptor", -1, "the log has no descriptor: "
                    + "bucket timestamps are not checked against a width");
            return -1;
        }
        List<String> lines = checkedLines(bytes);
        if (lines == null || lines.size() != 4 || !lines.get(0).equals("leasehold-log 1")
                || !lines.get(1).startsWith("bucket-width-micros ")) {
            finding(Finding.Kind.BAD_DESCRIPTOR, Long.MIN_VALUE, "descriptor", -1, "the descriptor does not read as "
                    + "'leasehold-log 1' with a bucket width and a valid checksum line");
            return -1;
        }
        try {
            long w = Long.parseLong(lines.get(1).substring("bucket-width-micros ".length()));
            return w > 0 && 86_400_000_000L % w == 0 ? w : -1;
        } catch (NumberFormatException e) {
            finding(Finding.Kind.BAD_DESCRIPTOR, Long.MIN_VALUE, "descriptor", -1, "the descriptor's bucket width '"
                    + lines.get(1) + "' is not a number");
            return -1;
        }
    }

    /** The lines before the {@code crc32c} line if it matches, else null. */
    private static List<String> checkedLines(byte[] bytes) {
        int n = bytes.length;
        if (n == 0 || bytes[n - 1] != '\n') {
            return null;
        }
        int last = n - 2;
        while (last >= 0 && bytes[last] != '\n') {
            last--;
        }
        last++;
        String crcLine = new String(bytes, last, n - 1 - last, StandardCharsets.US_ASCII);
        if (!crcLine.startsWith("crc32c ") || crcLine.length() != 15) {
            return null;
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, last);
        try {
            if (crc.getValue() != Long.parseLong(crcLine.substring(7), 16)) {
                return null;
            }
        } catch (NumberFormatException e) {
            return null;
        }
        String body = new String(bytes, 0, last, StandardCharsets.US_ASCII);
        return body.isEmpty() ? List.of() : List.of(body.substring(0, body.length() - 1).split("\n", -1));
    }

    /** The sizes a bucket's lock file lists, by file name, or null (reported) if it is not valid for the bucket. */
    private Map<String, Long> lockSizes(byte[] bytes, long start, String rel) {
        List<String> lines = checkedLines(bytes);
        String why = null;
        Map<String, Long> sizes = new HashMap<>();
        if (lines == null) {
            why = "its checksum line is missing or does not match";
        } else if (lines.size() < 6 || !lines.get(0).equals("leasehold-lock 1")) {
            why = "it does not start with 'leasehold-lock 1' and the five lines after it";
        } else if (!lines.get(1).equals("log " + log)) {
            why = "it names another log ('" + lines.get(1) + "')";
        } else if (width > 0 && !lines.get(2).equals("bucket " + start + " " + width)) {
            why = "it names another bucket ('" + lines.get(2) + "', expected 'bucket " + start + " " + width + "')";
        } else {
            try {
                int k = Integer.parseInt(lines.get(5).substring("files ".length()));
                if (!lines.get(5).startsWith("files ") || lines.size() != 6 + k) {
                    why = "its 'files' line says " + k + " files but " + (lines.size() - 6) + " are listed";
                }
                for (int i = 0; why == null && i < k; i++) {
                    String[] f = lines.get(6 + i).split(" ");
                    long size = Long.parseLong(f[1]);
                    if (f.length != 2 || size < 0) {
                        why = "line " + (7 + i) + " is not '<file> <size>'";
                    }
                    sizes.put(f[0], size);
                }
            } catch (RuntimeException e) {
                why = "its file list does not read as '<file> <size>' lines";
            }
        }
        if (why != null) {
            finding(Finding.Kind.BAD_LOCK, start, rel + "/lock", -1, "the lock file is not valid: " + why
                    + "; readers cannot agree on the bucket's messages");
            return null;
        }
        return sizes;
    }

    // ---- buckets (FORMAT.md, "Layout")

    private void findBuckets(Path dir, int depth, int[] fields, TreeMap<Long, Path> out) throws IOException {
        int[] digits = {4, 2, 2, 2, 2};
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                if (depth < 5) {
                    if (n.length() == digits[depth] && allDigits(n, 0, n.length()) && Files.isDirectory(p)) {
                        fields[depth] = Integer.parseInt(n);
                        findBuckets(p, depth + 1, fields, out);
                    }
                } else if (n.length() == 9 && n.charAt(2) == '.' && allDigits(n, 0, 2) && allDigits(n, 3, 9)
                        && Files.isDirectory(p)) {
                    try {
                        long sec = LocalDateTime.of(fields[0], fields[1], fields[2], fields[3], fields[4],
                                Integer.parseInt(n.substring(0, 2))).toEpochSecond(ZoneOffset.UTC);
                        out.put(sec * 1_000_000L + Integer.parseInt(n.substring(3)), p);
                    } catch (java.time.DateTimeException e) {
                        // Not a bucket name: readers ignore names they do not recognise.
                    }
                }
            }
        }
    }

    private static boolean allDigits(String s, int from, int to) {
        for (int i = from; i < to; i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private String relative(Path p) {
        return logDir.relativize(p).toString().replace('\\', '/');
    }

    private void readBucket(long start, Path dir, SegmentBucket seg) throws IOException {
        List<String> names = new ArrayList<>();
        if (dir != null) {
            try (DirectoryStream<Path> s = Files.newDirectoryStream(dir)) {
                for (Path p : s) {
                    names.add(p.getFileName().toString());
                }
            }
        }
        String rel = dir == null ? null : relative(dir);
        boolean hasData = names.stream().anyMatch(n -> n.endsWith(".data"));
        boolean sealed = names.contains("lock");
        if (seg != null && !sealed && !hasData) {
            // Retention removed the bucket's files: the segment is the only copy.
            sink.bucket(log, start, true, seg.frames);
            return;
        }
        Map<String, Long> sizes = null;
        if (sealed) {
            sizes = lockSizes(Files.readAllBytes(dir.resolve("lock")), start, rel);
            if (sizes == null) {
                return;
            }
            for (Map.Entry<String, Long> e : sizes.entrySet()) {
                Path f = dir.resolve(e.getKey());
                long actual = Files.exists(f) ? Files.size(f) : -1;
                if (actual < e.getValue()) {
                    finding(Finding.Kind.MISSING_DATA, start, rel + "/" + e.getKey(), -1, "the lock file lists "
                            + e.getValue() + " bytes of this data file but " + (actual < 0 ? "it is missing"
                            : "it holds " + actual) + ": acknowledged messages are lost");
                }
            }
        }
        List<StoredFrame> frames = new ArrayList<>();
        names.sort(null);
        for (String n : names) {
            if (!n.endsWith(".data")) {
                continue;
            }
            String stem = n.substring(0, n.length() - 5);
            int dot = stem.lastIndexOf('.');
            if (dot <= 0 || !allDigits(stem, dot + 1, stem.length()) || dot + 1 == stem.length()) {
                continue;
            }
            Path f = dir.resolve(n);
            long limit;
            if (sealed) {
                Long listed = sizes.get(n);
                if (listed == null) {
                    continue;
                }
                limit = Math.min(listed, Files.size(f));
            } else {
                limit = Files.size(f);
            }
            if (limit > Integer.MAX_VALUE - 16) {
                finding(Finding.Kind.CORRUPT_FRAME, start, rel + "/" + n, -1, "the data file's " + limit
                        + " bytes are more than this verifier reads (2 GiB)");
                continue;
            }
            byte[] bytes = readPrefix(f, (int) limit);
            readFrames(bytes, start, rel + "/" + n, stem.substring(0, dot),
                    Integer.parseInt(stem.substring(dot + 1)), sealed, frames);
        }
        if (seg != null) {
            compare(start, seg, frames);
        }
        sink.bucket(log, start, sealed, frames);
    }

    private static byte[] readPrefix(Path f, int limit) throws IOException {
        try (java.io.InputStream in = Files.newInputStream(f)) {
            return in.readNBytes(limit);
        }
    }

    // ---- frames (FORMAT.md, "Data file", "Reading a data file")

    private void readFrames(byte[] b, long start, String file, String writer, int seq, boolean sealed,
            List<StoredFrame> out) {
        int end = b.length;
        int o = 0;
        long prev = Long.MIN_VALUE;
        CRC32C crc = new CRC32C();
        while (o < end) {
            int rem = end - o;
            if (rem < 16) {
                torn(sealed, start, file, o, "fewer than 16 bytes remain");
                return;
            }
            int magic = i32(b, o);
            int version = u16(b, o + 4);
            long len = i32(b, o + 8) & 0xFFFF_FFFFL;
            if (magic != FRAME_MAGIC) {
                boolean zeros = true;
                for (int i = o; i < end && zeros; i++) {
                    zeros = b[i] == 0;
                }
                if (zeros) {
                    torn(sealed, start, file, o, "the rest of the file is zero");
                } else {
                    finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "no frame magic (LHBF) here: the rest of the "
                            + "file cannot be read");
                }
                return;
            }
            if (version != 1) {
                finding(Finding.Kind.UNSUPPORTED_VERSION, start, file, o, "frame version " + version
                        + " is not known (only 1): the rest of the file is not verified");
                return;
            }
            if (u16(b, o + 6) != 0 || len < 34 || len > MAX_FRAME) {
                finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "the frame's flags (" + u16(b, o + 6)
                        + ") or length (" + len + ") are invalid: the rest of the file cannot be read");
                return;
            }
            if (o + len > end) {
                torn(sealed, start, file, o, "the frame's " + len + " bytes run past the end (" + end + ")");
                return;
            }
            int l = (int) len;
            crc.reset();
            crc.update(b, o, 12);
            crc.update(b, o + 16, l - 16);
            int stored = i32(b, o + 12);
            if ((int) crc.getValue() != stored) {
                if (o + l == end) {
                    torn(sealed, start, file, o, "the last frame's checksum fails");
                    return;
                }
                finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "the frame's CRC32C does not match its bytes");
                o += l;
                continue;
            }
            StoredFrame f = parseFrame(b, o, l, stored, start, file, writer, seq, sealed);
            if (f != null) {
                if (width > 0 && (f.timestamp() < start || f.timestamp() >= start + width)) {
                    finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "the frame's timestamp " + f.timestamp()
                            + " lies outside its bucket [" + start + ", " + (start + width) + ")");
                } else if (f.timestamp() < prev) {
                    finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "the frame's timestamp " + f.timestamp()
                            + " is below the previous frame's (" + prev + ") in the same file");
                } else {
                    prev = f.timestamp();
                    out.add(f);
                }
            }
            o += l;
        }
    }

    private void torn(boolean sealed, long start, String file, int o, String why) {
        if (sealed) {
            finding(Finding.Kind.TORN_TAIL, start, file, o, "a torn frame (" + why + ") inside the lock file's size; "
                    + "it was never acknowledged and is not read");
        }
    }

    /** The frame at {@code o} of length {@code l} (checksum already verified), or null (reported) if malformed. */
    private StoredFrame parseFrame(byte[] b, int o, int l, int crc, long start, String file, String writer, int seq,
            boolean sealed) {
        int end = o + l;
        int q = o + 16;
        long ts = i64(b, q);
        q += 8;
        int n = u16(b, q);
        q += 2;
        if (n > 1000) {
            return malformed(start, file, o, "it lists " + n + " leases (at most 1000)");
        }
        String[] names = new String[n];
        long[] gens = new long[n];
        byte[][] wits = new byte[n][];
        for (int i = 0; i < n; i++) {
            if (q + 2 > end) {
                return malformed(start, file, o, "lease " + i + " runs past the frame");
            }
            int nl = u16(b, q);
            q += 2;
            if (nl < 1 || nl > 512 || q + nl + 12 > end) {
                return malformed(start, file, o, "lease " + i + "'s name length " + nl + " is invalid");
            }
            names[i] = new String(b, q, nl, StandardCharsets.UTF_8);
            q += nl;
            gens[i] = i64(b, q);
            q += 8;
            int wl = i32(b, q);
            q += 4;
            if (wl < 0 || wl > 65_536 || q + wl > end) {
                return malformed(start, file, o, "lease " + i + "'s witness length " + wl + " is invalid");
            }
            wits[i] = java.util.Arrays.copyOfRange(b, q, q + wl);
            q += wl;
        }
        if (q + 4 > end) {
            return malformed(start, file, o, "the message count runs past the frame");
        }
        int m = i32(b, q);
        q += 4;
        if (m < 1) {
            return malformed(start, file, o, "it holds " + m + " messages (at least 1)");
        }
        for (int i = 0; i < m; i++) {
            if (q + 4 > end) {
                return malformed(start, file, o, "message " + i + " runs past the frame");
            }
            int pl = i32(b, q);
            q += 4;
            if (pl < 0 || q + pl > end) {
                return malformed(start, file, o, "message " + i + "'s length " + pl + " runs past the frame");
            }
            q += pl;
        }
        if (q != end) {
            return malformed(start, file, o, "its fields end at " + (q - o) + " of its " + l + " bytes");
        }
        return new StoredFrame(start, file, writer, seq, o, ts, crc, l, names, gens, wits, m, sealed);
    }

    private StoredFrame malformed(long start, String file, int o, String why) {
        finding(Finding.Kind.CORRUPT_FRAME, start, file, o, "the frame's checksum matches but its structure does "
                + "not: " + why);
        return null;
    }

    // ---- segments (FORMAT.md, "Segment file")

    private Map<Long, SegmentBucket> readSegments() throws IOException {
        Map<Long, SegmentBucket> out = new HashMap<>();
        Path dir = logDir.resolve("segments");
        if (!Files.isDirectory(dir) || width <= 0) {
            return out;
        }
        List<long[]> ranges = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*.segment")) {
            for (Path p : s) {
                String n = p.getFileName().toString();
                String[] r = n.substring(0, n.length() - ".segment".length()).split("-");
                try {
                    long from = Long.parseLong(r[0]);
                    long to = Long.parseLong(r[1]);
                    if (r.length == 2 && from < to && from % width == 0 && to % width == 0) {
                        ranges.add(new long[] {from, to});
                    }
                } catch (RuntimeException e) {
                    // Not a published segment's name.
                }
            }
        }
        // As a reader takes them: by from, the longest first, each unless it overlaps one taken before.
        ranges.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(b[1], a[1]));
        long taken = Long.MIN_VALUE;
        for (long[] r : ranges) {
            if (r[0] < taken) {
                continue;
            }
            taken = r[1];
            String name = r[0] + "-" + r[1] + ".segment";
            readSegment(name, Files.readAllBytes(dir.resolve(name)), r[0], r[1], out);
        }
        return out;
    }

    private void readSegment(String name, byte[] b, long from, long to, Map<Long, SegmentBucket> out) {
        String file = "segments/" + name;
        int n = b.length;
        if (n < 8 + TRAILER || i32(b, 0) != SEGMENT_MAGIC || u16(b, 4) != 1 || i32(b, n - 4) != SEGMENT_END_MAGIC) {
            finding(Finding.Kind.BAD_SEGMENT, Long.MIN_VALUE, file, -1, "the segment's magic, version or end magic is "
                    + "wrong: readers use the buckets");
            return;
        }
        int t = n - TRAILER;
        long indexOffset = i64(b, t + 24);
        long tableOffset = i64(b, t + 32);
        if (i64(b, t) != from || i64(b, t + 8) != to || i64(b, t + 16) != width || indexOffset < 8
                || tableOffset < indexOffset || tableOffset > t) {
            finding(Finding.Kind.BAD_SEGMENT, Long.MIN_VALUE, file, t, "the trailer's range, width or offsets do not "
                    + "match the segment's name and log");
            return;
        }
        CRC32C crc = new CRC32C();
        crc.update(b, (int) indexOffset, n - 8 - (int) indexOffset);
        if ((int) crc.getValue() != i32(b, n - 8)) {
            finding(Finding.Kind.BAD_SEGMENT, Long.MIN_VALUE, file, t, "the trailer's checksum does not match");
            return;
        }
        try {
            int q = (int) tableOffset;
            int count = i32(b, q);
            q += 4;
            List<String> allFiles = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                long start = i64(b, q);
                int state = b[q + 8];
                long first = i64(b, q + 9);
                long after = i64(b, q + 17);
                int files = i32(b, q + 25);
                q += 29;
                List<String> names = new ArrayList<>();
                for (int k = 0; k < files; k++) {
                    int nl = u16(b, q);
                    names.add(new String(b, q + 2, nl, StandardCharsets.US_ASCII));
                    q += 2 + nl + 8;
                }
                int base = allFiles.size();
                allFiles.addAll(names);
                if (state == 1) {
                    out.put(start, new SegmentBucket(file, entries(b, file, start, first, after, base, allFiles,
                            names), names));
                }
            }
        } catch (IndexOutOfBoundsException | IllegalStateException e) {
            finding(Finding.Kind.BAD_SEGMENT, Long.MIN_VALUE, file, -1, "the segment's table or entries do not read "
                    + "as FORMAT.md describes them: " + e.getMessage());
        }
    }

    private List<StoredFrame> entries(byte[] b, String file, long start, long first, long after, int base,
            List<String> allFiles, List<String> names) {
        List<StoredFrame> frames = new ArrayList<>();
        CRC32C crc = new CRC32C();
        int q = (int) first;
        while (q < after) {
            crc.reset();
            crc.update(b, q, 12);
            int fileNo = i32(b, q);
            long srcOffset = i64(b, q + 4);
            if ((int) crc.getValue() != i32(b, q + 12) || fileNo < base || fileNo >= base + names.size()) {
                throw new IllegalStateException("entry at " + q + " fails its checksum or names no file of its bucket");
            }
            int o = q + 16;
            int l = i32(b, o + 8);
            if (i32(b, o) != FRAME_MAGIC || l < 34 || o + l > after) {
                throw new IllegalStateException("the frame of the entry at " + q + " is not a frame");
            }
            crc.reset();
            crc.update(b, o, 12);
            crc.update(b, o + 16, l - 16);
            if ((int) crc.getValue() != i32(b, o + 12)) {
                throw new IllegalStateException("the frame of the entry at " + q + " fails its checksum");
            }
            String dataFile = allFiles.get(fileNo);
            String stem = dataFile.substring(0, dataFile.length() - 5);
            int dot = stem.lastIndexOf('.');
            String rel = bucketPath(start) + "/" + dataFile;
            StoredFrame f = parseFrame(b, o, l, i32(b, o + 12), start, rel, stem.substring(0, dot),
                    Integer.parseInt(stem.substring(dot + 1)), true);
            if (f != null) {
                frames.add(new StoredFrame(start, rel, f.writer(), f.seq(), srcOffset, f.timestamp(), f.crc(),
                        f.length(), f.names(), f.generations(), f.witnesses(), f.messages(), true));
            }
            q = o + l;
        }
        return frames;
    }

    /** Checks that a segment holds exactly the frames its bucket's files hold (invariant 6). */
    private void compare(long start, SegmentBucket seg, List<StoredFrame> frames) {
        Map<String, StoredFrame> byPlace = new HashMap<>();
        for (StoredFrame f : frames) {
            byPlace.put(f.file() + "@" + f.offset(), f);
        }
        int matched = 0;
        for (StoredFrame s : seg.frames) {
            StoredFrame f = byPlace.get(s.file() + "@" + s.offset());
            if (f == null || f.crc() != s.crc() || f.length() != s.length()) {
                finding(Finding.Kind.BAD_SEGMENT, start, seg.segment, -1, "the segment holds a frame of " + s.file()
                        + " at offset " + s.offset() + " that the bucket's files do not hold: readers of the segment "
                        + "and of the bucket see different messages");
                return;
            }
            matched++;
        }
        if (matched != frames.size()) {
            finding(Finding.Kind.BAD_SEGMENT, start, seg.segment, -1, "the segment holds " + matched + " frames of "
                    + "the bucket but its files hold " + frames.size() + ": readers of the segment and of the bucket "
                    + "see different messages");
        }
    }

    private static String bucketPath(long start) {
        long sec = Math.floorDiv(start, 1_000_000L);
        LocalDateTime t = LocalDateTime.ofEpochSecond(sec, 0, ZoneOffset.UTC);
        return String.format("%04d/%02d/%02d/%02d/%02d/%02d.%06d", t.getYear(), t.getMonthValue(), t.getDayOfMonth(),
                t.getHour(), t.getMinute(), t.getSecond(), Math.floorMod(start, 1_000_000L));
    }

    static int i32(byte[] a, int i) {
        return ((a[i] & 0xff) << 24) | ((a[i + 1] & 0xff) << 16) | ((a[i + 2] & 0xff) << 8) | (a[i + 3] & 0xff);
    }

    static int u16(byte[] a, int i) {
        return ((a[i] & 0xff) << 8) | (a[i + 1] & 0xff);
    }

    static long i64(byte[] a, int i) {
        return ((long) i32(a, i) << 32) | (i32(a, i + 4) & 0xffff_ffffL);
    }
}
