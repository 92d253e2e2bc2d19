package org.leasehold.campaign;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32;

import org.leasehold.store.check.LogChecker;

/**
 * The campaign's judge. It uses no class of the store, the lease engine or the clients: the stored bytes are parsed by
 * {@link LogChecker} (written from docs/FORMAT.md alone, with its own frame and lock-file parser), and what the
 * processes were told comes from their journals (CampaignChild's line format, parsed here). It checks:
 * <ul>
 *   <li>the format rules of every bucket, lock file and frame (LogChecker's violations);
 *   <li>invariant 4: every acknowledged message is stored exactly once, at the timestamp it was acknowledged with;
 *       nothing refused is visible; nothing is stored that no writer sent; nothing is stored twice;
 *   <li>invariant 3: every stored message lies strictly between its grant's floor and the lease's deadline, and each
 *       of its (name, generation) pairs was granted;
 *   <li>invariants 1 and 2: per name, grants ordered by the time the server granted them have strictly increasing
 *       generations, and each starts no earlier than the previous one ended (released, or its deadline), unless the
 *       same holder took the name again (a re-take ends its earlier lease) or the previous release got no answer (it
 *       may have ended earlier; counted);
 *   <li>invariant 5: a holder whose predecessor expired saw, after sealing, exactly the messages the store holds
 *       under that name below its floor (nothing landed there later);
 *   <li>invariant 6: per name, the messages of one generation all come before those of the next (no two holders'
 *       messages overlap in time); every read of sealed buckets by a reader process returned exactly the messages,
 *       in the order, that the stored bytes hold for its range.
 * </ul>
 */
final class CampaignChecker {

    /** What was counted, and every violation found. */
    record Outcome(Map<String, Long> counts, List<String> violations) {
    }

    /** The count of torn tails found in the stored bytes. */
    static final String TORN_TAILS = "torn tails in the stored bytes";

    private record Grant(String holder, String name, long generation, long floor, long deadline, long grantedAt,
            boolean predecessorExpired) {
    }

    private CampaignChecker() {
    }

    /** The latest timestamp stored under {@code name} by {@code generation}, or the smallest value if none. */
    private static long lastWrite(Map<String, Map<Long, long[]>> spans, String name, long generation) {
        long[] span = spans.getOrDefault(name, Map.of()).get(generation);
        return span == null ? Long.MIN_VALUE : span[1];
    }

    static Outcome check(Path logDir, Path journalDir) throws IOException {
        Map<String, Long> counts = new LinkedHashMap<>();
        List<String> violations = new ArrayList<>();
        Set<String> sent = new HashSet<>();
        Map<String, Long> acked = new HashMap<>();
        Set<String> refused = new HashSet<>();
        Set<String> unknown = new HashSet<>();
        Map<String, Map<Long, Grant>> grants = new TreeMap<>();
        Map<String, Map<Long, Long>> released = new HashMap<>();
        Map<String, Set<Long>> releaseInDoubt = new HashMap<>();
        List<String[]> saws = new ArrayList<>();
        List<String[]> reads = new ArrayList<>();
        long clockRefusals = 0;
        long unsealedTails = 0;
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.list(journalDir)) {
            s.filter(p -> p.toString().endsWith(".journal")).sorted().forEach(files::add);
        }
        // The leases of the last acquisition of each journal that no release line closed: its process died holding
        // them, possibly after a release that the server carried out and the journal did not record.
        Map<String, Set<Long>> heldAtDeath = new HashMap<>();
        for (Path f : files) {
            List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
            Set<String> lastGroup = new HashSet<>();
            boolean lastWasGrant = false;
            for (int i = 0; i < lines.size(); i++) {
                String[] w = lines.get(i).split(" ");
                boolean last = i == lines.size() - 1;
                try {
                    switch (w[0]) {
                        case "SENT" -> sent.add(w[1]);
                        case "ACK" -> acked.put(w[1], Long.parseLong(w[2]));
                        case "REFUSED" -> refused.add(w[1]);
                        case "UNKNOWN" -> unknown.add(w[1]);
                        case "GRANT" -> {
                            Grant g = new Grant(w[1], w[2], Long.parseLong(w[3]), Long.parseLong(w[4]),
                                    Long.parseLong(w[5]), Long.parseLong(w[7]), "1".equals(w[8]));
                            if (!lastWasGrant) {
                                lastGroup.clear();
                            }
                            lastGroup.add(g.name + " " + g.generation);
                            Grant before = grants.computeIfAbsent(g.name, n -> new HashMap<>()).putIfAbsent(g.generation, g);
                            if (before != null && !before.equals(g)) {
                                violations.add("invariant 2: generation " + g.generation + " of '" + g.name
                                        + "' granted twice: " + before + " and " + g);
                            }
                        }
                        case "RELEASED" -> {
                            released.computeIfAbsent(w[1], n -> new HashMap<>()).put(Long.parseLong(w[2]),
                                    Long.parseLong(w[3]));
                            lastGroup.remove(w[1] + " " + w[2]);
                        }
                        case "UNRELEASED" -> {
                            lastGroup.remove(w[1] + " " + w[2]);
                            if (w[3].equals("unknown")) {
                                releaseInDoubt.computeIfAbsent(w[1], n -> new HashSet<>()).add(Long.parseLong(w[2]));
                            }
                        }
                        case "SAW" -> saws.add(w);
                        case "READ" -> reads.add(w);
                        case "CLOCK" -> clockRefusals++;
                        case "UNSEALED" -> unsealedTails++;
                        case "PROBLEM" -> violations.add("a reader was told of a problem other than a torn tail ("
                                + f.getFileName() + "): " + lines.get(i));
                        case "NOTE" -> {
                            // Information only.
                        }
                        default -> throw new IllegalArgumentException("unknown line");
                    }
                } catch (RuntimeException e) {
                    if (!last) {
                        violations.add("journal " + f.getFileName() + " line " + (i + 1) + " is unreadable: " + lines.get(i));
                    }
                    // A last line cut by kill -9 is not a record.
                }
                lastWasGrant = w[0].equals("GRANT");
            }
            for (String held : lastGroup) {
                String[] nw = held.split(" ");
                heldAtDeath.computeIfAbsent(nw[0], n -> new HashSet<>()).add(Long.parseLong(nw[1]));
            }
        }
        counts.put("journals (process incarnations)", (long) files.size());
        counts.put("messages sent", (long) sent.size());
        counts.put("messages acknowledged", (long) acked.size());
        counts.put("messages refused", (long) refused.size());
        counts.put("messages in doubt (unknown)", (long) unknown.size());
        counts.put("messages unanswered (writer killed)", (long) (sent.size() - acked.size() - refused.size()
                - unknown.size()));
        counts.put("writer clock refusals", clockRefusals);
        counts.put("reads that met an unsealed bucket's incomplete tail", unsealedTails);
        long grantCount = 0;
        for (Map<Long, Grant> m : grants.values()) {
            grantCount += m.size();
        }
        counts.put("grants", grantCount);

        LogChecker.Result stored = LogChecker.check(logDir);
        for (String v : stored.violations()) {
            violations.add("format: " + v);
        }
        List<LogChecker.Msg> all = stored.ordered();
        long unsealed = stored.buckets().stream().filter(b -> !b.sealed()).count();
        long torn = stored.buckets().stream().mapToLong(LogChecker.Bucket::tornTails).sum();
        counts.put("buckets", (long) stored.buckets().size());
        counts.put("buckets not sealed at the end", unsealed);
        counts.put(TORN_TAILS, torn);
        counts.put("messages stored", (long) all.size());

        // Invariant 4 and invariant 3.
        Map<String, Integer> seen = new HashMap<>();
        Map<String, Map<Long, long[]>> spans = new TreeMap<>();
        for (LogChecker.Msg m : all) {
            String id = m.text();
            int n = seen.merge(id, 1, Integer::sum);
            if (n == 2) {
                violations.add("invariant 4: message " + id + " is stored more than once (" + m.file() + "@" + m.offset() + ")");
            }
            if (!sent.contains(id)) {
                violations.add("invariant 4: stored message " + id + " was never sent (" + m.file() + "@" + m.offset() + ")");
            }
            if (refused.contains(id)) {
                violations.add("invariant 4: message " + id + " was refused but is visible (" + m.file() + "@" + m.offset()
                        + ")");
            }
            Long ackTs = acked.get(id);
            if (ackTs != null && ackTs != m.timestamp()) {
                violations.add("invariant 4: message " + id + " was acknowledged at " + ackTs + " but is stored at "
                        + m.timestamp());
            }
            for (LogChecker.Lease l : m.leases()) {
                Grant g = grants.getOrDefault(l.name(), Map.of()).get(l.generation());
                if (g == null) {
                    violations.add("invariant 3: message " + id + " is stored under '" + l.name() + "' generation "
                            + l.generation() + ", which no journal recorded as granted");
                    continue;
                }
                if (!(g.floor < m.timestamp() && m.timestamp() < g.deadline)) {
                    violations.add("invariant 3: message " + id + " at " + m.timestamp() + " lies outside (" + g.floor
                            + ", " + g.deadline + ") of '" + l.name() + "' generation " + l.generation());
                }
                long[] span = spans.computeIfAbsent(l.name(), x -> new TreeMap<>()).computeIfAbsent(l.generation(),
                        x -> new long[] {Long.MAX_VALUE, Long.MIN_VALUE});
                span[0] = Math.min(span[0], m.timestamp());
                span[1] = Math.max(span[1], m.timestamp());
            }
        }
        long missing = 0;
        for (Map.Entry<String, Long> e : acked.entrySet()) {
            if (!seen.containsKey(e.getKey())) {
                missing++;
                violations.add("invariant 4: acknowledged message " + e.getKey() + " (at " + e.getValue()
                        + ") is not stored");
            }
        }
        long unansweredFound = 0;
        for (String id : seen.keySet()) {
            if (!acked.containsKey(id)) {
                unansweredFound++;
            }
        }
        counts.put("acknowledged messages found", acked.size() - missing);
        counts.put("stored messages never acknowledged", unansweredFound);

        // Invariants 1 and 2.
        long retaken = 0;
        long inDoubt = 0;
        long unjournaled = 0;
        for (Map.Entry<String, Map<Long, Grant>> e : grants.entrySet()) {
            List<Grant> gs = new ArrayList<>(e.getValue().values());
            gs.sort(Comparator.comparingLong(Grant::grantedAt).thenComparingLong(Grant::generation));
            Map<Long, Long> rel = released.getOrDefault(e.getKey(), Map.of());
            for (int i = 1; i < gs.size(); i++) {
                Grant p = gs.get(i - 1);
                Grant n = gs.get(i);
                if (n.generation <= p.generation) {
                    violations.add("invariant 2: '" + e.getKey() + "' granted generation " + n.generation + " at "
                            + n.grantedAt + " after generation " + p.generation + " at " + p.grantedAt);
                }
                long end = Math.min(p.deadline, rel.getOrDefault(p.generation, Long.MAX_VALUE));
                if (n.grantedAt >= end) {
                    continue;
                }
                if (n.holder.equals(p.holder)) {
                    // The same holder took the name again: its earlier lease ended then, re-taken (L8).
                    retaken++;
                } else if (releaseInDoubt.getOrDefault(e.getKey(), Set.of()).contains(p.generation)) {
                    // Its release got no answer: it may have ended at any time before its deadline.
                    inDoubt++;
                } else if (heldAtDeath.getOrDefault(e.getKey(), Set.of()).contains(p.generation)
                        && !n.predecessorExpired && n.floor >= lastWrite(spans, e.getKey(), p.generation)) {
                    // Its holder died holding it, and the server reports it released (not expired) with a watermark
                    // at or above everything stored under it: a release carried out that the journal did not record.
                    unjournaled++;
                } else {
                    violations.add("invariant 1: '" + e.getKey() + "' generation " + n.generation + " (" + n.holder
                            + ") granted at " + n.grantedAt + " while generation " + p.generation + " (" + p.holder
                            + ") held it until " + end);
                }
            }
        }
        counts.put("grants re-taken by their holder", retaken);
        counts.put("grants after a release in doubt", inDoubt);
        counts.put("grants after a release not journaled", unjournaled);

        // Invariant 6: one holder's messages before the next one's, per name.
        for (Map.Entry<String, Map<Long, long[]>> e : spans.entrySet()) {
            long[] prev = null;
            long prevGen = 0;
            for (Map.Entry<Long, long[]> g : e.getValue().entrySet()) {
                if (prev != null && prev[1] >= g.getValue()[0]) {
                    violations.add("invariant 6: under '" + e.getKey() + "' generation " + prevGen + " wrote up to "
                            + prev[1] + " but generation " + g.getKey() + " from " + g.getValue()[0]);
                }
                prev = g.getValue();
                prevGen = g.getKey();
            }
        }

        // Invariant 5: what a successor of an expired holder saw is all that is stored below its floor.
        for (String[] w : saws) {
            String name = w[1];
            long from = Long.parseLong(w[3]);
            long to = Long.parseLong(w[4]);
            long saw = Long.parseLong(w[5]);
            long now = all.stream().filter(m -> m.timestamp() >= from && m.timestamp() < to && under(m, name)).count();
            if (now != saw) {
                violations.add("invariant 5: the holder of '" + name + "' generation " + w[2] + " saw " + saw
                        + " messages in [" + from + ", " + to + ") after sealing for its expired predecessor, but "
                        + now + " are stored there");
            }
        }
        counts.put("successors of expired holders checked", (long) saws.size());

        // Invariant 6: readers of sealed buckets read what is stored.
        for (String[] w : reads) {
            long from = Long.parseLong(w[1]);
            long to = Long.parseLong(w[2]);
            String name = w[3];
            CRC32 crc = new CRC32();
            long n = 0;
            for (LogChecker.Msg m : all) {
                if (m.timestamp() >= from && m.timestamp() < to && (name.equals("*") || under(m, name))) {
                    n++;
                    crc.update(ByteBuffer.allocate(8).putLong(m.timestamp()).array());
                    crc.update(m.payload());
                }
            }
            if (n != Long.parseLong(w[4]) || !Long.toHexString(crc.getValue()).equals(w[5])) {
                violations.add("invariant 6: a reader read " + w[4] + " messages (crc " + w[5] + ") in [" + from + ", "
                        + to + ") under " + name + ", the stored bytes hold " + n + " (crc "
                        + Long.toHexString(crc.getValue()) + ")");
            }
        }
        counts.put("sealed reads compared", (long) reads.size());
        return new Outcome(counts, violations);
    }

    private static boolean under(LogChecker.Msg m, String name) {
        for (LogChecker.Lease l : m.leases()) {
            if (l.name().equals(name)) {
                return true;
            }
        }
        return false;
    }
}
