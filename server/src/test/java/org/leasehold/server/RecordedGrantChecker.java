package org.leasehold.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * Proves invariants 1 and 2 (and the floor hand-off) from record files alone: it reads the JSON lines that client
 * processes wrote about every answer of the lease service (see {@link ContentionClientMain}) and shares no code with
 * the client or the server.
 *
 * <ul>
 *   <li><b>Invariant 1.</b> Two full leases on one name (granted full, or tentative and upgraded) never overlap in
 *       service time, unless both are shared. A lease holds from its grant to its release, or to its last known
 *       deadline when it was never released.
 *   <li><b>Invariant 2.</b> No generation of a name is granted twice; a grant with a higher generation is never
 *       granted earlier. A record may carry {@code requestedAt} (the client's estimate of service time when it asked):
 *       a lease taken part by part on several servers (during a migration) reports its latest part's grant time, so
 *       its generation's own grant lies between the two, and only a higher generation granted before
 *       {@code requestedAt} (less {@link #CLOCK_ESTIMATE_SLACK}) is a certain violation.
 *   <li><b>Floors.</b> Each grant's floor is at least every watermark released on the name before it was granted and
 *       the deadline of every full lease that expired unreleased before it; its {@code writableFrom} is not before such
 *       a deadline. Watermarks lie in {@code [floor, deadline)} of their lease, and releases are not after the deadline.
 * </ul>
 */
final class RecordedGrantChecker {
    /** How far a client's estimate of service time ({@code requestedAt}) may be ahead of the server's clock. */
    static final java.time.Duration CLOCK_ESTIMATE_SLACK = java.time.Duration.ofMillis(10);

    /** One grant of one name, assembled from its events. */
    static final class Grant {
        final String name;
        final long generation;
        final String holder;
        final String mode;
        final Instant grantedAt;
        /** The earliest the grant can have been made: {@code requestedAt} if recorded, else {@link #grantedAt}. */
        Instant earliest;
        final Instant floor;
        final Instant writableFrom;
        Instant deadline;
        boolean full;
        boolean broken;
        Instant releasedAt;
        Instant watermark;
        final String source;

        Grant(String name, long generation, String holder, String mode, boolean full, Instant grantedAt, Instant deadline,
                Instant floor, Instant writableFrom, String source) {
            this.name = name;
            this.generation = generation;
            this.holder = holder;
            this.mode = mode;
            this.full = full;
            this.grantedAt = grantedAt;
            this.earliest = grantedAt;
            this.deadline = deadline;
            this.floor = floor;
            this.writableFrom = writableFrom;
            this.source = source;
        }

        Instant end() {
            return releasedAt != null ? releasedAt : deadline;
        }

        @Override
        public String toString() {
            return name + "#" + generation + "[" + holder + " " + mode + (full ? " full" : " tentative")
                    + (broken ? " broken" : "") + " " + grantedAt + ".." + end() + " floor " + floor + " from " + source + "]";
        }
    }

    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, Grant> grants = new LinkedHashMap<>();
    private final List<String> violations = new ArrayList<>();
    private final List<JsonNode> summaries = new ArrayList<>();
    private final List<String> errors = new ArrayList<>();

    /** Reads one client's record file. */
    void read(Path file) throws IOException {
        int lineNo = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            add(json.readTree(line), file.getFileName() + ":" + lineNo);
        }
    }

    /** Adds one recorded event. */
    void add(JsonNode e, String source) {
        String ev = e.path("ev").asText();
        if (ev.equals("summary")) {
            summaries.add(e);
            return;
        }
        if (ev.equals("error")) {
            errors.add(source + ": " + e);
            return;
        }
        String name = e.path("name").asText();
        long generation = e.path("generation").asLong();
        String key = name + "#" + generation;
        Grant g = grants.get(key);
        if (ev.equals("grant")) {
            if (g != null) {
                violations.add("invariant 2: generation " + generation + " of " + name + " granted twice: " + g + " and at "
                        + source + " to " + e.path("holder").asText());
                return;
            }
            Grant added = new Grant(name, generation, e.path("holder").asText(), e.path("mode").asText(),
                    e.path("kind").asText().equals("FULL"), instant(e, "grantedAt"), instant(e, "deadline"),
                    instant(e, "floor"), instant(e, "writableFrom"), source);
            if (e.hasNonNull("requestedAt")) {
                Instant requested = instant(e, "requestedAt").minus(CLOCK_ESTIMATE_SLACK);
                added.earliest = requested.isBefore(added.grantedAt) ? requested : added.grantedAt;
            }
            grants.put(key, added);
            return;
        }
        if (g == null) {
            violations.add("record: " + ev + " at " + source + " for " + key + ", which was never granted");
            return;
        }
        if (!g.holder.equals(e.path("holder").asText())) {
            violations.add("record: " + ev + " at " + source + " by " + e.path("holder").asText() + " for " + g);
        }
        switch (ev) {
            case "upgrade" -> {
                g.full = true;
                g.deadline = instant(e, "deadline");
            }
            case "renew" -> g.deadline = instant(e, "deadline");
            case "broken" -> g.broken = true;
            case "expired" -> {
                // It ended at its deadline; nothing more to note.
            }
            case "release" -> {
                g.releasedAt = instant(e, "endedAt");
                g.watermark = e.hasNonNull("watermark") ? instant(e, "watermark") : null;
            }
            default -> violations.add("record: unknown event '" + ev + "' at " + source);
        }
    }

    List<JsonNode> summaries() {
        return summaries;
    }

    List<String> errors() {
        return errors;
    }

    int grantCount() {
        return grants.size();
    }

    /** Every violation found (empty when the history keeps the invariants). */
    List<String> check() {
        return check(true);
    }

    /** Every violation found, checking floors only if {@code floors}. */
    List<String> check(boolean floors) {
        Map<String, List<Grant>> byName = new TreeMap<>();
        for (Grant g : grants.values()) {
            byName.computeIfAbsent(g.name, k -> new ArrayList<>()).add(g);
        }
        for (List<Grant> list : byName.values()) {
            list.sort(Comparator.comparingLong((Grant g) -> g.generation));
            checkGenerations(list);
            checkOwnValues(list);
            checkExclusion(list);
            if (floors) {
                checkFloors(list);
            }
        }
        return violations;
    }

    private void checkGenerations(List<Grant> byGeneration) {
        for (int i = 1; i < byGeneration.size(); i++) {
            Grant prev = byGeneration.get(i - 1);
            Grant next = byGeneration.get(i);
            if (next.grantedAt.isBefore(prev.earliest)) {
                violations.add("invariant 2: " + next + " was granted before " + prev + ", which has a lower generation");
            }
        }
    }

    private void checkOwnValues(List<Grant> grantsOfName) {
        for (Grant g : grantsOfName) {
            if (g.releasedAt != null && g.releasedAt.isAfter(g.deadline)) {
                violations.add("release after the deadline accepted: " + g);
            }
            if (g.watermark != null && (g.watermark.isBefore(g.floor) || !g.watermark.isBefore(g.deadline))) {
                violations.add("watermark " + g.watermark + " outside [floor, deadline) of " + g);
            }
            if (!g.grantedAt.isBefore(g.deadline)) {
                violations.add("granted at or after its deadline: " + g);
            }
        }
    }

    private void checkExclusion(List<Grant> grantsOfName) {
        List<Grant> full = new ArrayList<>();
        for (Grant g : grantsOfName) {
            if (g.full && !g.broken) {
                full.add(g);
            }
        }
        full.sort(Comparator.comparing((Grant g) -> g.grantedAt));
        for (int i = 0; i < full.size(); i++) {
            Grant a = full.get(i);
            for (int j = i + 1; j < full.size(); j++) {
                Grant b = full.get(j);
                if (!b.grantedAt.isBefore(a.end())) {
                    continue;
                }
                if (a.mode.equals("EXCLUSIVE") || b.mode.equals("EXCLUSIVE")) {
                    violations.add("invariant 1: " + a + " overlaps " + b);
                }
            }
        }
    }

    private void checkFloors(List<Grant> byGeneration) {
        for (Grant next : byGeneration) {
            for (Grant prev : byGeneration) {
                if (prev.generation >= next.generation || !prev.full || prev.broken) {
                    continue;
                }
                if (prev.releasedAt != null && !prev.releasedAt.isAfter(next.grantedAt) && prev.watermark != null
                        && prev.watermark.isAfter(next.floor)) {
                    violations.add("floor: " + next + " is below the watermark " + prev.watermark + " released by " + prev);
                }
                if (prev.releasedAt == null && !prev.deadline.isAfter(next.grantedAt)) {
                    if (prev.deadline.isAfter(next.floor)) {
                        violations.add("floor: " + next + " is below the deadline of " + prev + ", which expired");
                    }
                    if (next.writableFrom.isBefore(prev.deadline)) {
                        violations.add("writableFrom: " + next + " may write before " + prev + " expired");
                    }
                }
            }
        }
    }

    private static Instant instant(JsonNode e, String field) {
        return Instant.parse(e.path(field).asText());
    }
}
