package org.leasehold.store.check;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * An independent reader of a bag-store log, written from docs/FORMAT.md alone: it shares no code with the store's
 * writer or reader (no store class is used), so a bug in their shared format code cannot hide itself. Tests use it to
 * prove invariants from the stored bytes.
 *
 * <p>It walks {@code <log>/yyyy/MM/dd/HH/mm/ss.uuuuuu}, parses and verifies each lock file, reads every data file
 * (to the lock's size when sealed), and checks every rule of the format: magic, version, flags, length, CRC32C,
 * structure, timestamp inside the bucket, non-decreasing timestamps in a file, and that only a file's last frame may
 * be torn. Violations are collected, not thrown, so a test can assert there are none.
 */
public final class LogChecker {

    /** A lease name as stored. */
    public record Lease(String name, long generation, byte[] witness) {
    }

    /** A message as stored. */
    public record Msg(long bucket, String file, String writer, int seq, long offset, int index, long timestamp,
            List<Lease> leases, byte[] payload, boolean sealed) {

        /** The payload as UTF-8 text. */
        public String text() {
            return new String(payload, StandardCharsets.UTF_8);
        }

        /** The stored generation of {@code name}, or -1. */
        public long generationOf(String name) {
            for (Lease l : leases) {
                if (l.name.equals(name)) {
                    return l.generation;
                }
            }
            return -1;
        }
    }

    /** A lock file, as parsed. */
    public record Lock(String log, long bucket, long width, String sealer, long sealedAt, Map<String, Long> sizes) {
    }

    /** One bucket. */
    public record Bucket(long start, boolean sealed, boolean prelocked, Lock lock, Map<String, Long> fileSizes,
            List<Msg> messages, int tornTails) {
    }

    /** The whole log. */
    public record Result(List<Bucket> buckets, List<String> violations) {

        /** Every message, in the store's order: (timestamp, writer, sequence, offset, index). */
        public List<Msg> ordered() {
            List<Msg> all = new ArrayList<>();
            for (Bucket b : buckets) {
                all.addAll(b.messages);
            }
            all.sort(ORDER);
            return all;
        }

        /** True if every bucket has a lock file. */
        public boolean allSealed() {
            for (Bucket b : buckets) {
                if (!b.sealed) {
                    return false;
                }
            }
            return true;
        }

        /** The bucket starting at {@code start}, or null. */
        public Bucket bucket(long start) {
            for (Bucket b : buckets) {
                if (b.start == start) {
                    return b;
                }
            }
            return null;
        }
    }

    public static final Comparator<Msg> ORDER = Comparator.comparingLong(Msg::timestamp).thenComparing(Msg::writer)
            .thenComparingInt(Msg::seq).thenComparingLong(Msg::offset).thenComparingInt(Msg::index);

    private LogChecker() {
    }

    /** Reads and checks the log directory {@code logDir}. */
    public static Result check(Path logDir) throws IOException {
        List<String> violations = new ArrayList<>();
        long width = readWidth(logDir, violations);
        List<Bucket> buckets = new ArrayList<>();
        List<Path> leaves = new ArrayList<>();
        try (Stream<Path> s = Files.walk(logDir, 6)) {
            s.filter(p -> logDir.relativize(p).getNameCount() == 6 && Files.isDirectory(p)).forEach(leaves::add);
        }
        for (Path leaf : leaves) {
            Path rel = logDir.relativize(leaf);
            long start = startOf(rel);
            if (start < 0) {
                violations.add("unexpected directory " + rel);
                continue;
            }
            if (width > 0 && start % width != 0) {
                violations.add("bucket " + rel + " is not aligned to the width " + width);
            }
            buckets.add(readBucket(leaf, rel.toString(), start, width, violations));
        }
        buckets.sort(Comparator.comparingLong(Bucket::start));
        return new Result(buckets, violations);
    }

    private static long readWidth(Path logDir, List<String> violations) throws IOException {
        Path d = logDir.resolve("descriptor");
        if (!Files.exists(d)) {
            violations.add("no descriptor in " + logDir);
            return -1;
        }
        List<String> lines = verifiedLines(Files.readAllBytes(d), "descriptor", violations);
        if (lines == null || lines.size() != 4 || !lines.get(0).equals("leasehold-log 1")) {
            violations.add("malformed descriptor " + lines);
            return -1;
        }
        return Long.parseLong(lines.get(1).substring("bucket-width-micros ".length()));
    }

    /** The bucket start of {@code yyyy/MM/dd/HH/mm/ss.uuuuuu}. */
    static long startOf(Path rel) {
        try {
            int y = Integer.parseInt(rel.getName(0).toString());
            int mo = Integer.parseInt(rel.getName(1).toString());
            int d = Integer.parseInt(rel.getName(2).toString());
            int h = Integer.parseInt(rel.getName(3).toString());
            int mi = Integer.parseInt(rel.getName(4).toString());
            String leaf = rel.getName(5).toString();
            int s = Integer.parseInt(leaf.substring(0, 2));
            int us = Integer.parseInt(leaf.substring(3));
            if (leaf.length() != 9 || leaf.charAt(2) != '.') {
                return -1;
            }
            long epochSec = java.time.LocalDateTime.of(y, mo, d, h, mi, s).toEpochSecond(java.time.ZoneOffset.UTC);
            return epochSec * 1_000_000L + us;
        } catch (RuntimeException e) {
            return -1;
        }
    }

    private static Bucket readBucket(Path dir, String rel, long start, long width, List<String> violations)
            throws IOException {
        List<String> names = new ArrayList<>();
        try (Stream<Path> s = Files.list(dir)) {
            s.forEach(p -> names.add(p.getFileName().toString()));
        }
        boolean sealed = names.contains("lock");
        Lock lock = null;
        if (sealed) {
            lock = parseLock(Files.readAllBytes(dir.resolve("lock")), rel, violations);
            if (lock != null && lock.bucket != start) {
                violations.add(rel + ": lock names bucket " + lock.bucket);
            }
            if (!names.contains("prelock")) {
                violations.add(rel + ": sealed without a prelock");
            }
        }
        Map<String, Long> fileSizes = new HashMap<>();
        List<Msg> msgs = new ArrayList<>();
        int torn = 0;
        for (String n : names) {
            if (!n.endsWith(".data")) {
                continue;
            }
            long actual = Files.size(dir.resolve(n));
            fileSizes.put(n, actual);
            long limit = actual;
            if (sealed && lock != null) {
                Long listed = lock.sizes.get(n);
                if (listed == null) {
                    // Created after the sealer listed the bucket: its writer saw the prelock and wrote nothing.
                    if (actual != 0) {
                        violations.add(rel + "/" + n + ": not in the lock file but holds " + actual + " bytes");
                    }
                    continue;
                }
                if (listed > actual) {
                    violations.add(rel + "/" + n + ": lock lists " + listed + " bytes, file has " + actual);
                }
                limit = Math.min(listed, actual);
            }
            torn += readFrames(dir.resolve(n), rel, n, start, width, limit, sealed, msgs, violations);
        }
        if (lock != null) {
            for (String listed : lock.sizes.keySet()) {
                if (!fileSizes.containsKey(listed)) {
                    violations.add(rel + ": lock lists missing file " + listed);
                }
            }
        }
        return new Bucket(start, sealed, names.contains("prelock"), lock, fileSizes, msgs, torn);
    }

    /** Reads frames of one file up to {@code limit}; returns 1 if it ends in a torn tail. */
    private static int readFrames(Path file, String rel, String name, long start, long width, long limit,
            boolean sealed, List<Msg> out, List<String> violations) throws IOException {
        byte[] all = Files.readAllBytes(file);
        int end = (int) Math.min(limit, all.length);
        String stem = name.substring(0, name.length() - ".data".length());
        int dot = stem.lastIndexOf('.');
        String writer = stem.substring(0, dot);
        int seq = Integer.parseInt(stem.substring(dot + 1));
        int p = 0;
        long prev = Long.MIN_VALUE;
        while (p < end) {
            int rem = end - p;
            if (rem < 16) {
                return 1;
            }
            int magic = i32(all, p);
            int version = u16(all, p + 4);
            int flags = u16(all, p + 6);
            long len = i32(all, p + 8) & 0xffff_ffffL;
            if (magic != 0x4C484246) {
                boolean zeros = true;
                for (int i = p; i < end; i++) {
                    zeros &= all[i] == 0;
                }
                if (zeros) {
                    return 1;
                }
                violations.add(rel + "/" + name + "@" + p + ": bad magic");
                return 0;
            }
            if (version != 1 || flags != 0) {
                violations.add(rel + "/" + name + "@" + p + ": version " + version + " flags " + flags);
                return 0;
            }
            if (len < 34) {
                violations.add(rel + "/" + name + "@" + p + ": length " + len);
                return 0;
            }
            if (len > rem) {
                return 1;
            }
            int l = (int) len;
            CRC32C crc = new CRC32C();
            crc.update(all, p, 12);
            crc.update(all, p + 16, l - 16);
            if ((int) crc.getValue() != i32(all, p + 12)) {
                if (p + l == end) {
                    return 1;
                }
                violations.add(rel + "/" + name + "@" + p + ": checksum mismatch inside the file");
                return 0;
            }
            int q = p + 16;
            long ts = i64(all, q);
            q += 8;
            if (width > 0 && (ts < start || ts >= start + width)) {
                violations.add(rel + "/" + name + "@" + p + ": timestamp " + ts + " outside the bucket");
            }
            if (ts < prev) {
                violations.add(rel + "/" + name + "@" + p + ": timestamp decreases");
            }
            prev = ts;
            int n = u16(all, q);
            q += 2;
            List<Lease> leases = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                int nl = u16(all, q);
                q += 2;
                String ln = new String(all, q, nl, StandardCharsets.UTF_8);
                q += nl;
                long gen = i64(all, q);
                q += 8;
                int wl = i32(all, q);
                q += 4;
                byte[] w = new byte[wl];
                System.arraycopy(all, q, w, 0, wl);
                q += wl;
                leases.add(new Lease(ln, gen, w));
            }
            int m = i32(all, q);
            q += 4;
            for (int i = 0; i < m; i++) {
                int pl = i32(all, q);
                q += 4;
                byte[] payload = new byte[pl];
                System.arraycopy(all, q, payload, 0, pl);
                q += pl;
                out.add(new Msg(start, name, writer, seq, p, i, ts, leases, payload, sealed));
            }
            if (q != p + l) {
                violations.add(rel + "/" + name + "@" + p + ": structure ends at " + (q - p) + " of " + l);
            }
            p += l;
        }
        return 0;
    }

    /** Parses and verifies a lock file per docs/FORMAT.md. */
    public static Lock parseLock(byte[] bytes, String rel, List<String> violations) {
        List<String> lines = verifiedLines(bytes, rel + "/lock", violations);
        if (lines == null || lines.size() < 6 || !lines.get(0).equals("leasehold-lock 1")) {
            violations.add(rel + ": malformed lock file");
            return null;
        }
        String log = lines.get(1).substring(4);
        String[] b = lines.get(2).substring(7).split(" ");
        String sealer = lines.get(3).substring(7);
        long sealedAt = Long.parseLong(lines.get(4).substring(10));
        int n = Integer.parseInt(lines.get(5).substring(6));
        Map<String, Long> sizes = new HashMap<>();
        for (int i = 0; i < n; i++) {
            String[] e = lines.get(6 + i).split(" ");
            sizes.put(e[0], Long.parseLong(e[1]));
        }
        if (lines.size() != 6 + n) {
            violations.add(rel + ": lock file count mismatch");
        }
        return new Lock(log, Long.parseLong(b[0]), Long.parseLong(b[1]), sealer, sealedAt, sizes);
    }

    private static List<String> verifiedLines(byte[] bytes, String what, List<String> violations) {
        String text = new String(bytes, StandardCharsets.US_ASCII);
        if (!text.endsWith("\n")) {
            violations.add(what + ": does not end with a newline");
            return null;
        }
        int last = text.lastIndexOf('\n', text.length() - 2) + 1;
        String crcLine = text.substring(last, text.length() - 1);
        if (!crcLine.startsWith("crc32c ")) {
            violations.add(what + ": no checksum line");
            return null;
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, last);
        if (crc.getValue() != Long.parseLong(crcLine.substring(7), 16)) {
            violations.add(what + ": checksum mismatch");
            return null;
        }
        return List.of(text.substring(0, last).split("\n"));
    }

    private static int i32(byte[] a, int i) {
        return ((a[i] & 0xff) << 24) | ((a[i + 1] & 0xff) << 16) | ((a[i + 2] & 0xff) << 8) | (a[i + 3] & 0xff);
    }

    private static int u16(byte[] a, int i) {
        return ((a[i] & 0xff) << 8) | (a[i + 1] & 0xff);
    }

    private static long i64(byte[] a, int i) {
        return ((long) i32(a, i) << 32) | (i32(a, i + 4) & 0xffff_ffffL);
    }
}
