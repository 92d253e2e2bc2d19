package org.leasehold.contract;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Proves invariants 1 to 3 from a recorded history of what a lease service answered, without sharing any code with
 * the service: it sees only the values the calls returned and the service times around them.
 *
 * <ol>
 *   <li>Full leases on one name never overlap in service time unless both are shared (or permits of one semaphore,
 *       at most {@code permits} at once).
 *   <li>Generations of a name strictly increase in grant order.
 *   <li>Every write has {@code floor < t < deadline} and is at or after {@code writableFrom}; writes of consecutive
 *       exclusive holders are ordered by timestamp; each floor covers every watermark released before the grant and
 *       the deadline of every full lease that expired unreleased before it.
 * </ol>
 */
public final class LeaseHistoryChecker {

    /** A grant of one name, as recorded. {@code end} is filled when the lease ended. */
    public static final class Held {
        public final String name;
        public final long generation;
        public final String mode;
        public final int permits;
        public final Instant grantedAt;
        public final Instant floor;
        public final Instant writableFrom;
        public volatile Instant deadline;
        public volatile boolean full;
        public volatile boolean broken;
        /** Service time the release returned, or null if it was never released (it expired). */
        public volatile Instant releasedAt;
        public volatile Instant watermark;
        public final List<Long> writes = new java.util.concurrent.CopyOnWriteArrayList<>();
        public final List<Instant> writeTimes = new java.util.concurrent.CopyOnWriteArrayList<>();

        public Held(String name, long generation, String mode, int permits, Instant grantedAt, Instant floor,
                Instant writableFrom, Instant deadline, boolean full) {
            this.name = name;
            this.generation = generation;
            this.mode = mode;
            this.permits = permits;
            this.grantedAt = grantedAt;
            this.floor = floor;
            this.writableFrom = writableFrom;
            this.deadline = deadline;
            this.full = full;
        }

        Instant end() {
            return releasedAt != null ? releasedAt : deadline;
        }

        @Override
        public String toString() {
            return name + "#" + generation + "[" + mode + (full ? " full" : " tentative") + (broken ? " broken" : "")
                    + " " + grantedAt + ".." + end() + " floor " + floor + "]";
        }
    }

    private final List<String> violations = new ArrayList<>();

    /** Checks everything and returns the violations found (empty when the history is correct). */
    public List<String> check(List<Held> history) {
        Map<String, List<Held>> byName = new TreeMap<>();
        for (Held h : history) {
            byName.computeIfAbsent(h.name, k -> new ArrayList<>()).add(h);
        }
        for (Map.Entry<String, List<Held>> e : byName.entrySet()) {
            List<Held> grants = e.getValue();
            grants.sort(Comparator.comparingLong((Held h) -> h.generation));
            checkGenerations(e.getKey(), grants);
            checkExclusion(e.getKey(), grants);
            checkWrites(e.getKey(), grants);
            checkFloors(e.getKey(), grants);
        }
        return violations;
    }

    private void checkGenerations(String name, List<Held> byGeneration) {
        for (int i = 1; i < byGeneration.size(); i++) {
            Held prev = byGeneration.get(i - 1);
            Held next = byGeneration.get(i);
            if (prev.generation == next.generation) {
                violations.add("invariant 2: generation " + next.generation + " of " + name + " granted twice");
            }
            if (next.grantedAt.isBefore(prev.grantedAt)) {
                violations.add("invariant 2: " + next + " was granted before " + prev + " with a higher generation");
            }
        }
    }

    private void checkExclusion(String name, List<Held> grants) {
        List<Held> full = new ArrayList<>();
        for (Held h : grants) {
            if (h.full && !h.broken) {
                full.add(h);
            }
        }
        for (int i = 0; i < full.size(); i++) {
            Held a = full.get(i);
            int atStart = 0;
            for (int j = 0; j < full.size(); j++) {
                Held b = full.get(j);
                if (!b.grantedAt.isAfter(a.grantedAt) && a.grantedAt.isBefore(b.end())) {
                    atStart++;
                }
                if (j <= i || !(a.grantedAt.isBefore(b.end()) && b.grantedAt.isBefore(a.end()))) {
                    continue;
                }
                if (a.mode.equals("EXCLUSIVE") || !a.mode.equals(b.mode)) {
                    violations.add("invariant 1: " + a + " overlaps " + b);
                }
            }
            if (a.mode.equals("SEMAPHORE") && atStart > a.permits) {
                violations.add("invariant 1: " + atStart + " permits of " + name + " held at " + a.grantedAt
                        + " (a semaphore of " + a.permits + ")");
            }
        }
    }

    private void checkWrites(String name, List<Held> byGeneration) {
        long lastMax = Long.MIN_VALUE;
        Held lastWriter = null;
        for (Held h : byGeneration) {
            if (h.writes.isEmpty()) {
                continue;
            }
            if (!h.full || h.broken) {
                violations.add("invariant 3: " + h + " wrote without a full lease");
            }
            long floor = micros(h.floor);
            long deadline = micros(h.deadline);
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            for (int i = 0; i < h.writes.size(); i++) {
                long t = h.writes.get(i);
                if (!(floor < t && t < deadline)) {
                    violations.add("invariant 3: write at " + t + " under " + h + " outside (floor, deadline)");
                }
                if (h.writeTimes.get(i).isBefore(h.writableFrom)) {
                    violations.add("invariant 3: write under " + h + " at service time " + h.writeTimes.get(i)
                            + " before writableFrom " + h.writableFrom);
                }
                min = Math.min(min, t);
                max = Math.max(max, t);
            }
            if (h.watermark != null && micros(h.watermark) < max) {
                violations.add("watermark " + h.watermark + " of " + h + " below its highest write " + max);
            }
            if (h.mode.equals("EXCLUSIVE")) {
                if (lastWriter != null && min <= lastMax) {
                    violations.add("invariant 3: " + h + " wrote " + min + ", not above " + lastMax + " written by "
                            + lastWriter);
                }
                lastMax = Math.max(lastMax, max);
                lastWriter = h;
            }
        }
    }

    private void checkFloors(String name, List<Held> byGeneration) {
        for (Held next : byGeneration) {
            long floor = micros(next.floor);
            for (Held prev : byGeneration) {
                if (prev.generation >= next.generation || !prev.full || prev.broken) {
                    continue;
                }
                if (prev.releasedAt != null && !prev.releasedAt.isAfter(next.grantedAt) && prev.watermark != null
                        && micros(prev.watermark) > floor) {
                    violations.add("floor: " + next + " is below the watermark " + prev.watermark + " released by "
                            + prev);
                }
                if (prev.releasedAt == null && !prev.deadline.isAfter(next.grantedAt) && micros(prev.deadline) > floor) {
                    violations.add("floor: " + next + " is below the deadline of " + prev + ", which expired");
                }
                if (prev.releasedAt == null && !prev.deadline.isAfter(next.grantedAt)
                        && next.writableFrom.isBefore(prev.deadline)) {
                    violations.add("writableFrom: " + next + " may write before " + prev + " expired");
                }
            }
        }
    }

    private static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }
}
