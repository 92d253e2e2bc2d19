package org.leasehold.store;

import java.util.ArrayList;
import java.util.List;

import org.leasehold.store.format.SegmentFile;

/**
 * Which published segments of a log are used: of the names in {@code <log>/segments/}, those of published segments
 * aligned to the log's bucket width, by start, the longest first, each taken unless it overlaps one taken before. The
 * choice depends only on the names, so every reader and compactor makes the same one.
 */
final class SegmentChoice {
    private SegmentChoice() {
    }

    /** The chosen ranges {@code [from, to)}, in time order, without overlap. */
    static List<long[]> published(List<String> names, long width) {
        List<long[]> all = new ArrayList<>();
        for (String n : names) {
            long[] r = SegmentFile.parseName(n);
            if (r != null && Math.floorMod(r[0], width) == 0 && Math.floorMod(r[1], width) == 0) {
                all.add(r);
            }
        }
        all.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(b[1], a[1]));
        List<long[]> out = new ArrayList<>();
        long at = Long.MIN_VALUE;
        for (long[] r : all) {
            if (r[0] >= at) {
                out.add(r);
                at = r[1];
            }
        }
        return out;
    }
}
