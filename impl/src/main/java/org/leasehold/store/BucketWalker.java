package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.fs.NfsSafeFiles;

/**
 * Walks the bucket directories of a log that intersect {@code [from, to)} in time order, listing one directory level
 * at a time ({@code yyyy/MM/dd/HH/mm/ss.uuuuuu}) and pruning subtrees outside the range, so memory stays bounded by
 * one listing per level. Names that are not part of the layout are ignored.
 */
final class BucketWalker {
    private static final System.Logger LOG = System.getLogger(BucketWalker.class.getName());
    private static final int LEAF = 5;

    private final NfsSafeFiles fs;
    private final long width;
    private final long from;
    private final long to;
    private final ArrayDeque<Level> stack = new ArrayDeque<>();

    /** One listed directory: its children's time ranges, in order. */
    private static final class Level {
        final int depth;
        final Path dir;
        final List<Child> children;
        int next;

        Level(int depth, Path dir, List<Child> children) {
            this.depth = depth;
            this.dir = dir;
            this.children = children;
        }
    }

    private record Child(String name, long start, long end) {
    }

    /** Whether a time directory found gone is returned as a bucket (see {@link #next}); the last bucket returned. */
    private final boolean reportGone;
    private long returned = Long.MIN_VALUE;
    private long returnedEnd = Long.MIN_VALUE;

    BucketWalker(NfsSafeFiles fs, Path logDir, long widthMicros, long from, long to) throws IOException {
        this(fs, logDir, widthMicros, from, to, false);
    }

    /**
     * A walk that, if {@code reportGone}, returns for a time directory listed in its parent but gone when opened
     * (retention removed it, emptied) the first bucket of it in range, as if it were a bucket directory: a reader
     * then finds that bucket gone and continues from the segment that holds it.
     */
    BucketWalker(NfsSafeFiles fs, Path logDir, long widthMicros, long from, long to, boolean reportGone)
            throws IOException {
        this.fs = fs;
        this.width = widthMicros;
        this.from = from;
        this.to = to;
        this.reportGone = reportGone;
        if (logDir != null) {
            push(0, logDir, 0);
        }
    }

    /** A walk over given bucket starts (in time order) instead of the directories: see {@link #of}. */
    private long[] fixed;
    private int fixedAt;

    /**
     * A walk that returns {@code starts} (in time order) without listing anything, whether their directories exist
     * or not: a reader falling back from a damaged segment walks the buckets its table lists, so that a bucket whose
     * directory retention removed is not passed over in silence.
     */
    static BucketWalker of(NfsSafeFiles fs, long widthMicros, long[] starts) throws IOException {
        BucketWalker w = new BucketWalker(fs, null, widthMicros, 0, 0, false);
        w.fixed = starts;
        return w;
    }

    /** The start of the next bucket directory in range, or -1 at the end. */
    long next() throws IOException {
        if (fixed != null) {
            return fixedAt < fixed.length ? fixed[fixedAt++] : -1;
        }
        while (!stack.isEmpty()) {
            Level l = stack.peek();
            if (l.next >= l.children.size()) {
                stack.pop();
                continue;
            }
            Child c = l.children.get(l.next++);
            if (c.end <= from || c.start >= to) {
                continue;
            }
            if (l.depth == LEAF) {
                returned = c.start;
                returnedEnd = c.end;
                return c.start;
            }
            if (!push(l.depth + 1, l.dir.resolve(c.name), c.start) && reportGone) {
                long b = Math.floorDiv(Math.max(c.start, from), width) * width;
                if (b <= returned) {
                    b = returned + width;
                }
                if (b < Math.min(c.end, to)) {
                    returned = b;
                    returnedEnd = Math.min(c.end, to);
                    return b;
                }
            }
        }
        return -1;
    }

    /**
     * The end of the range the last start {@link #next} returned stands for: the bucket's end, or for a time
     * directory found gone, the end of its range (in the read's range).
     */
    long lastEnd() {
        return fixed != null ? fixed[fixedAt - 1] + width : returnedEnd;
    }

    /** Lists {@code dir} and pushes its children; false if it is gone. */
    private boolean push(int depth, Path dir, long parentStart) throws IOException {
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (NoSuchFileException | NotDirectoryException e) {
            return false;
        }
        List<Child> children = new ArrayList<>(names.size());
        for (String n : names) {
            Child c = child(depth, n, parentStart);
            if (c != null) {
                children.add(c);
            }
        }
        children.sort((a, b) -> Long.compare(a.start, b.start));
        stack.push(new Level(depth, dir, children));
        return true;
    }

    /** The time range of child {@code name} of a directory at {@code depth}, or null if it is not a layout name. */
    private Child child(int depth, String name, long parentStart) {
        if (depth == LEAF) {
            long within = LogGeometry.parseLeaf(name);
            if (within < 0) {
                return null;
            }
            long start = parentStart + within;
            if (Math.floorMod(start, width) != 0) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6301 ignoring bucket directory {0} starting at {1} µs: "
                        + "not aligned to the log''s bucket width of {2} µs", name, start, width);
                return null;
            }
            return new Child(name, start, start + width);
        }
        int expectedLength = depth == 0 ? 4 : 2;
        if (name.length() != expectedLength) {
            return null;
        }
        int v = 0;
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c < '0' || c > '9') {
                return null;
            }
            v = v * 10 + (c - '0');
        }
        LocalDateTime p = LocalDateTime.ofEpochSecond(Math.floorDiv(parentStart, 1_000_000L), 0, ZoneOffset.UTC);
        LocalDateTime s;
        LocalDateTime e;
        try {
            switch (depth) {
                case 0 -> {
                    s = LocalDateTime.of(v, 1, 1, 0, 0);
                    e = s.plusYears(1);
                }
                case 1 -> {
                    s = p.withMonth(v);
                    e = s.plusMonths(1);
                }
                case 2 -> {
                    s = p.withDayOfMonth(v);
                    e = s.plusDays(1);
                }
                case 3 -> {
                    s = p.withHour(v);
                    e = s.plusHours(1);
                }
                case 4 -> {
                    s = p.withMinute(v);
                    e = s.plusMinutes(1);
                }
                default -> {
                    return null;
                }
            }
        } catch (java.time.DateTimeException ex) {
            return null;
        }
        if (depth == 0 && v < 1970) {
            return null;
        }
        return new Child(name, s.toEpochSecond(ZoneOffset.UTC) * 1_000_000L, e.toEpochSecond(ZoneOffset.UTC) * 1_000_000L);
    }
}
