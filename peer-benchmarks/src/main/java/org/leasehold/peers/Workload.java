package org.leasehold.peers;

import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One workload: how many threads, and which names each thread picks at random for its next cycle.
 *
 * @param label       {@code uncontended}, {@code contended} or {@code single}
 * @param threads     worker threads
 * @param names       distinct names
 * @param partitioned true: each thread has its own names (thread t takes t, t + threads, ...), so no two threads ever
 *                    want the same name; false: every thread picks among all names
 */
public record Workload(String label, int threads, int names, boolean partitioned) {

    public Workload {
        if (threads < 1) {
            throw new IllegalArgumentException(label + ": threads must be at least 1, not " + threads);
        }
        if (names < 1 || (partitioned && names < threads)) {
            throw new IllegalArgumentException(label + ": " + names + " names are too few for " + threads + " threads"
                    + (partitioned ? " (each thread needs names of its own)" : ""));
        }
    }

    /** The three workloads, with the given thread and name counts. */
    static Workload named(String label, int threads, int uncontendedNames, int contendedNames) {
        return switch (label.toLowerCase(Locale.ROOT)) {
            case "uncontended" -> new Workload("uncontended", threads, uncontendedNames, true);
            case "contended" -> new Workload("contended", threads, contendedNames, false);
            case "single" -> new Workload("single", 1, uncontendedNames, true);
            default -> throw new IllegalArgumentException("unknown workload '" + label
                    + "'; use uncontended, contended or single");
        };
    }

    /** The name thread {@code thread} uses for its next cycle. */
    String pick(int thread) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        int index = partitioned ? thread + threads * r.nextInt(names / threads) : r.nextInt(names);
        return "n" + index;
    }

    /** E.g. {@code 64 threads, 16 names}. */
    String describe() {
        return threads + (threads == 1 ? " thread, " : " threads, ") + names + " names" + (partitioned && threads > 1
                ? " (disjoint per thread)" : "");
    }
}
