package org.leasehold.simulation;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

import org.leasehold.simulation.nfs.SimNfsServer;

/**
 * Judges a run from the bytes on the simulated server and the clients' recorded answers, with nothing of the
 * store's code: its own walk of the layout, its own parser of lock files and frames (written from docs/FORMAT.md),
 * its own ordering. Checks:
 * <ul>
 *   <li>every bucket is sealed (after the operator's final sealing), its lock file well formed, every file it lists
 *       present and at least as long, every frame up to the listed size valid (a torn last frame excepted);
 *   <li>invariant 1: full exclusive grants of a name never overlap in lease-service time;
 *   <li>invariant 2: generations of a name strictly increase in grant order;
 *   <li>invariant 3: every visible message lies strictly between its grant's floor and deadline;
 *   <li>invariant 4: every acknowledged message is visible exactly once, where the store said; nothing refused is
 *       visible; nothing is visible twice or without having been appended;
 *   <li>invariant 5: a successor saw every visible message of its predecessor before it wrote;
 *   <li>invariant 6: every reader of a sealed bucket saw exactly its messages in the order
 *       {@code (timestamp, writer, n, offset, index)}, and one name's messages are in generation order;
 *   <li>invariant 8: no operation outside the NFS-safe list.
 * </ul>
 * Invariant 7 (XA recovery) has no counterpart here: the simulation runs no transactions.
 */
final class Checker {
    private static final int MAGIC = 0x4C484246;
    private static final int MAX_REPORTED = 40;

    private final SimNfsServer server;
    private final String log;
    private final History history;
    private final long width;
    private final List<String> violations = new ArrayList<>();
    private int suppressed;
    private final Map<Long, List<Seen>> visible = new HashMap<>();
    private final TreeMap<Long, List<Seen>> byBucket = new TreeMap<>();
    private int buckets;
    private long visibleCount;

    /** One visible message. */
    private record Seen(long id, long bucket, long t, String writer, long n, String file, long offset, int index,
            List<String> names, List<Long> generations) {
    }

    Checker(SimNfsServer server, String log, History history, long width) {
        this.server = server;
        this.log = log;
        this.history = history;
        this.width = width;
    }

    int buckets() {
        return buckets;
    }

    long visible() {
        return visibleCount;
    }

    private void violation(String s) {
        if (violations.size() < MAX_REPORTED) {
            violations.add(s);
        } else {
            suppressed++;
        }
    }

    List<String> check() {
        SimNfsServer.Node logDir = server.root().child("store").child(log);
        walk(logDir, new ArrayList<>());
        for (List<Seen> l : byBucket.values()) {
            l.sort(Comparator.comparingLong(Seen::t).thenComparing(Seen::writer).thenComparingLong(Seen::n)
                    .thenComparingLong(Seen::offset).thenComparingInt(Seen::index));
        }
        checkGrants();
        checkMessages();
        checkSuccessors();
        checkReaders();
        checkOrderOfNames();
        for (String r : history.refusedOperations) {
            violation("invariant 8: an operation outside the NFS-safe list: " + r);
        }
        if (suppressed > 0) {
            violations.add("... and " + suppressed + " more violations");
        }
        return violations;
    }

    // ------------------------------------------------------------------------------------------------ the bytes

    private void walk(SimNfsServer.Node dir, List<String> path) {
        for (String name : dir.names()) {
            SimNfsServer.Node n = dir.child(name);
            if (!n.isDirectory()) {
                continue;
            }
            if (path.size() < 5) {
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                List<String> p = new ArrayList<>(path);
                p.add(name);
                walk(n, p);
            } else if (path.size() == 5 && name.length() == 9 && name.charAt(2) == '.') {
                long start = LocalDateTime.of(Integer.parseInt(path.get(0)), Integer.parseInt(path.get(1)),
                        Integer.parseInt(path.get(2)), Integer.parseInt(path.get(3)), Integer.parseInt(path.get(4)))
                        .toEpochSecond(ZoneOffset.UTC) * 1_000_000L + Long.parseLong(name.substring(0, 2)) * 1_000_000L
                        + Long.parseLong(name.substring(3));
                bucket(String.join("/", path) + "/" + name, start, n);
            }
        }
    }

    private void bucket(String where, long start, SimNfsServer.Node dir) {
        buckets++;
        byBucket.put(start, new ArrayList<>());
        SimNfsServer.Node lock = dir.child("lock");
        if (lock == null) {
            violation("bucket " + where + " is not sealed after the final sealing");
            return;
        }
        Map<String, Long> listed = parseLock(where, start, lock.bytes());
        if (listed == null) {
            return;
        }
        for (Map.Entry<String, Long> e : listed.entrySet()) {
            SimNfsServer.Node f = dir.child(e.getKey());
            if (f == null) {
                violation("bucket " + where + ": the lock file lists " + e.getKey() + ", which does not exist");
                continue;
            }
            byte[] data = f.bytes();
            if (data.length < e.getValue()) {
                violation("bucket " + where + ": the lock file lists " + e.getKey() + " at " + e.getValue()
                        + " bytes, but it holds " + data.length);
                continue;
            }
            frames(where, start, e.getKey(), data, e.getValue().intValue());
        }
    }

    /** The files and sizes of a lock file, or null (reported) if it is malformed. */
    private Map<String, Long> parseLock(String where, long start, byte[] bytes) {
        String text = new String(bytes, StandardCharsets.US_ASCII);
        int crcLine = text.lastIndexOf("crc32c ");
        if (crcLine < 0 || !text.endsWith("\n")) {
            violation("bucket " + where + ": the lock file has no checksum line");
            return null;
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, crcLine);
        String expected = String.format("%08x", crc.getValue());
        if (!text.substring(crcLine + 7).trim().equals(expected)) {
            violation("bucket " + where + ": the lock file's checksum does not match");
            return null;
        }
        String[] lines = text.substring(0, crcLine).split("\n");
        if (!lines[0].equals("leasehold-lock 1") || !lines[1].equals("log " + log)
                || !lines[2].equals("bucket " + start + " " + width) || !lines[5].startsWith("files ")) {
            violation("bucket " + where + ": the lock file's header does not describe it: " + String.join(" | ",
                    List.of(lines).subList(0, Math.min(6, lines.length))));
            return null;
        }
        int k = Integer.parseInt(lines[5].substring(6));
        Map<String, Long> m = new TreeMap<>();
        for (int i = 0; i < k; i++) {
            String[] f = lines[6 + i].split(" ");
            m.put(f[0], Long.parseLong(f[1]));
        }
        return m;
    }

    private void frames(String where, long start, String file, byte[] data, int limit) {
        int dot = file.lastIndexOf('.', file.length() - 6);
        String writer = file.substring(0, dot);
        long n = Long.parseLong(file.substring(dot + 1, file.length() - 5));
        ByteBuffer b = ByteBuffer.wrap(data, 0, limit);
        int o = 0;
        long previous = Long.MIN_VALUE;
        while (o < limit) {
            String at = "bucket " + where + ", " + file + " at " + o;
            if (limit - o < 16) {
                return;
            }
            int magic = b.getInt(o);
            int length = b.getInt(o + 8);
            if (magic != MAGIC) {
                boolean zero = true;
                for (int i = o; i < limit; i++) {
                    zero &= data[i] == 0;
                }
                if (!zero) {
                    violation(at + ": no frame here (magic " + Integer.toHexString(magic) + ")");
                }
                return;
            }
            if (b.getShort(o + 4) != 1 || b.getShort(o + 6) != 0 || length < 34) {
                violation(at + ": a frame header with a wrong version, flags or length");
                return;
            }
            if (o + (long) length > limit) {
                return;
            }
            CRC32C crc = new CRC32C();
            crc.update(data, o, 12);
            crc.update(data, o + 16, length - 16);
            if ((int) crc.getValue() != b.getInt(o + 12)) {
                if (o + length != limit) {
                    violation(at + ": a frame whose checksum fails before the end of the listed size");
                }
                return;
            }
            long t = b.getLong(o + 16);
            if (t < start || t >= start + width || t < previous) {
                violation(at + ": timestamp " + t + " outside the bucket or below the previous frame's");
            }
            previous = t;
            int p = o + 24;
            int leases = b.getShort(p) & 0xffff;
            p += 2;
            List<String> names = new ArrayList<>();
            List<Long> gens = new ArrayList<>();
            for (int i = 0; i < leases; i++) {
                int len = b.getShort(p) & 0xffff;
                names.add(new String(data, p + 2, len, StandardCharsets.UTF_8));
                p += 2 + len;
                gens.add(b.getLong(p));
                p += 8;
                p += 4 + b.getInt(p);
            }
            int messages = b.getInt(p);
            p += 4;
            for (int i = 0; i < messages; i++) {
                int len = b.getInt(p);
                long id = b.getLong(p + 4);
                p += 4 + len;
                Seen s = new Seen(id, start, t, writer, n, file, o, i, names, gens);
                visible.computeIfAbsent(id, x -> new ArrayList<>()).add(s);
                byBucket.get(start).add(s);
                visibleCount++;
            }
            if (p != o + length) {
                violation(at + ": the frame's fields do not add up to its length");
            }
            o += length;
        }
    }

    // ------------------------------------------------------------------------------------------------ judgments

    private void checkGrants() {
        Map<String, List<History.Grant>> byName = new TreeMap<>();
        for (History.Grant g : history.grants) {
            byName.computeIfAbsent(g.name, k -> new ArrayList<>()).add(g);
        }
        for (List<History.Grant> gs : byName.values()) {
            gs.sort(Comparator.comparingLong((History.Grant g) -> g.grantedAt).thenComparingLong(g -> g.generation));
            for (int i = 1; i < gs.size(); i++) {
                History.Grant a = gs.get(i - 1);
                History.Grant b = gs.get(i);
                // The same identity re-taking its own lease ends the earlier holding (L8); others must wait.
                if (b.grantedAt < a.end() && !b.holder.equals(a.holder)) {
                    violation("invariant 1: '" + a.name + "' granted to " + b.holder + " at " + b.grantedAt
                            + " while " + a.holder + " held it until " + a.end());
                }
                if (b.generation <= a.generation) {
                    violation("invariant 2: '" + a.name + "' granted with generation " + b.generation + " after "
                            + a.generation);
                }
            }
        }
    }

    private void checkMessages() {
        for (Map.Entry<Long, List<Seen>> e : visible.entrySet()) {
            long id = e.getKey();
            List<Seen> seen = e.getValue();
            History.Answer a = history.answers.get(id);
            if (a == null) {
                violation("invariant 4: message " + id + " is visible but was never appended");
                continue;
            }
            if (seen.size() > 1) {
                violation("invariant 4: message " + id + " is visible " + seen.size() + " times");
            }
            if (a.status() == History.Status.REFUSED) {
                violation("invariant 4: message " + id + " was refused (" + a.reason() + ") but is visible in "
                        + seen.get(0).file() + " at " + seen.get(0).offset() + " of bucket " + seen.get(0).bucket());
            }
            for (Seen s : seen) {
                for (int i = 0; i < s.names().size(); i++) {
                    Map<Long, History.Grant> gens = history.byGeneration.get(s.names().get(i));
                    History.Grant g = gens == null ? null : gens.get(s.generations().get(i));
                    if (g == null) {
                        violation("invariant 3: message " + id + " carries '" + s.names().get(i) + "' generation "
                                + s.generations().get(i) + ", which was never granted");
                    } else if (!(g.floor < s.t() && s.t() < g.deadline)) {
                        violation("invariant 3: message " + id + " at " + s.t() + " outside (" + g.floor + ", "
                                + g.deadline + ") of '" + g.name + "' grant " + g.ordinal);
                    }
                }
            }
        }
        for (History.Answer a : history.answers.values()) {
            if (a.status() != History.Status.ACKNOWLEDGED) {
                continue;
            }
            List<Seen> seen = visible.get(a.id());
            if (seen == null) {
                violation("invariant 4: acknowledged message " + a.id() + " (" + a.file() + " at " + a.offset()
                        + ", t " + a.timestamp() + ") is not readable");
            } else if (!seen.get(0).file().equals(a.file()) || seen.get(0).offset() != a.offset()) {
                violation("invariant 4: acknowledged message " + a.id() + " is in " + seen.get(0).file() + " at "
                        + seen.get(0).offset() + ", not where the store said (" + a.file() + " at " + a.offset() + ")");
            }
        }
    }

    private void checkSuccessors() {
        Map<String, List<History.Grant>> byName = new HashMap<>();
        for (History.Grant g : history.grants) {
            byName.computeIfAbsent(g.name, k -> new ArrayList<>()).add(g);
        }
        for (List<History.Grant> gs : byName.values()) {
            gs.sort(Comparator.comparingLong((History.Grant g) -> g.grantedAt).thenComparingLong(g -> g.generation));
        }
        Map<String, List<Seen>> byGrant = new HashMap<>();
        for (List<Seen> seen : visible.values()) {
            for (Seen s : seen) {
                for (int i = 0; i < s.names().size(); i++) {
                    byGrant.computeIfAbsent(s.names().get(i) + "#" + s.generations().get(i), k -> new ArrayList<>())
                            .add(s);
                }
            }
        }
        for (History.SuccessorRead r : history.successorReads) {
            List<History.Grant> gs = byName.get(r.grant().name);
            int i = gs.indexOf(r.grant());
            if (i <= 0) {
                continue;
            }
            History.Grant previous = gs.get(i - 1);
            for (Seen s : byGrant.getOrDefault(previous.name + "#" + previous.generation, List.of())) {
                if (s.t() >= r.from() && !r.seen().contains(s.id())) {
                    violation("invariant 5: message " + s.id() + " of '" + previous.name + "' grant "
                            + previous.ordinal + " (t " + s.t() + ", " + s.file() + " at " + s.offset()
                            + ") is visible, but grant " + r.grant().ordinal + " did not see it before writing");
                }
            }
        }
    }

    private void checkReaders() {
        for (History.Observation o : history.observations) {
            List<Seen> all = byBucket.get(o.bucket());
            List<Long> expected = new ArrayList<>();
            if (all != null) {
                for (Seen s : all) {
                    expected.add(s.id());
                }
            }
            if (!expected.equals(o.ids())) {
                violation("invariant 6: reader " + o.reader() + " saw bucket " + o.bucket() + " sealed as "
                        + abbreviate(o.ids()) + ", but it holds " + abbreviate(expected));
            }
        }
    }

    private void checkOrderOfNames() {
        Map<String, Long> last = new HashMap<>();
        for (List<Seen> l : byBucket.values()) {
            for (Seen s : l) {
                for (int i = 0; i < s.names().size(); i++) {
                    String name = s.names().get(i);
                    long g = s.generations().get(i);
                    Long before = last.get(name);
                    if (before != null && g < before) {
                        violation("invariant 6: message " + s.id() + " of '" + name + "' generation " + g
                                + " is ordered after one of generation " + before);
                    }
                    last.put(name, before == null ? g : Math.max(before, g));
                }
            }
        }
    }

    private static String abbreviate(List<Long> ids) {
        return ids.size() <= 12 ? ids.toString() : ids.subList(0, 12) + "... (" + ids.size() + ")";
    }
}
