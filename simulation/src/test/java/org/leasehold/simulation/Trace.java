package org.leasehold.simulation;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * The run's trace: every step, grant, outcome and fault, folded into a 64-bit digest (same seed, same digest), and the
 * last events kept for the report of a failing seed. Names that the code under test draws at random (the 16 hex
 * digits of a prepared lock file) are folded without their random part.
 */
final class Trace {
    private static final Pattern PREPARED = Pattern.compile("\\.[0-9a-f]{16}");
    private static final int KEPT = 200;
    private long digest = 0xcbf29ce484222325L;
    private long events;
    private final ArrayDeque<String> last = new ArrayDeque<>();

    /** Folds one event, at true time {@code at}, into the digest. */
    void record(long at, String event) {
        String e = event.contains("lock.") ? PREPARED.matcher(event).replaceAll(".*") : event;
        mix(at);
        for (int i = 0; i < e.length(); i++) {
            mix(e.charAt(i));
        }
        events++;
        if (last.size() == KEPT) {
            last.pollFirst();
        }
        last.addLast(at + " " + e);
    }

    private void mix(long v) {
        digest ^= v;
        digest *= 0x100000001b3L;
        digest ^= digest >>> 29;
    }

    long digest() {
        return digest;
    }

    long events() {
        return events;
    }

    List<String> last() {
        return new ArrayList<>(last);
    }
}
