package org.leasehold.simulation;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the simulated clients were told, recorded as they were told it: grants and their ends, every append's
 * outcome (per message id), what each successor read before writing, and what readers of sealed buckets saw. The
 * checker judges the stored bytes against it.
 */
final class History {
    /** A grant of one name, in lease-service time (µs). */
    static final class Grant {
        final String name;
        final long generation;
        final long grantedAt;
        final long deadline;
        final long floor;
        final String holder;
        long endedAt = Long.MIN_VALUE;
        int ordinal;

        Grant(String name, long generation, long grantedAt, long deadline, long floor, String holder) {
            this.name = name;
            this.generation = generation;
            this.grantedAt = grantedAt;
            this.deadline = deadline;
            this.floor = floor;
            this.holder = holder;
        }

        /** When the lease ended: its release, or its deadline. */
        long end() {
            return endedAt == Long.MIN_VALUE ? deadline : Math.min(endedAt, deadline);
        }
    }

    /** The answer to one message's append; PENDING while none came (the process crashed before it was told). */
    enum Status { PENDING, ACKNOWLEDGED, REFUSED, UNKNOWN }

    /** One message's append and its answer; file and offset where the store said it is (acknowledged only). */
    record Answer(long id, Status status, String reason, long timestamp, String file, long offset, int index,
            String name, long generation) {
    }

    /** What a successor read of its name before writing, from {@code from} (µs) on. */
    record SuccessorRead(Grant grant, long from, Set<Long> seen) {
    }

    /** The messages a reader read from one sealed bucket, in the order it got them. */
    record Observation(String reader, long bucket, List<Long> ids) {
    }

    final List<Grant> grants = new ArrayList<>();
    final Map<String, Map<Long, Grant>> byGeneration = new HashMap<>();
    final Map<Long, Answer> answers = new LinkedHashMap<>();
    final List<SuccessorRead> successorReads = new ArrayList<>();
    final List<Observation> observations = new ArrayList<>();
    final List<String> notes = new ArrayList<>();
    final List<String> refusedOperations = new ArrayList<>();
    final Map<String, Long> refusals = new java.util.TreeMap<>();
    private final Map<String, Integer> ordinals = new HashMap<>();
    long acknowledged;
    long refused;
    long unknown;

    Grant granted(String name, long generation, long grantedAt, long deadline, long floor, String holder) {
        Grant g = new Grant(name, generation, grantedAt, deadline, floor, holder);
        g.ordinal = ordinals.merge(name, 1, Integer::sum);
        grants.add(g);
        byGeneration.computeIfAbsent(name, k -> new HashMap<>()).put(generation, g);
        return g;
    }

    void answered(Answer a) {
        answers.put(a.id(), a);
        switch (a.status()) {
            case ACKNOWLEDGED -> acknowledged++;
            case REFUSED -> {
                refused++;
                refusals.merge(a.reason(), 1L, Long::sum);
            }
            case UNKNOWN -> unknown++;
            default -> {
                // Submitted, not answered yet.
            }
        }
    }
}
