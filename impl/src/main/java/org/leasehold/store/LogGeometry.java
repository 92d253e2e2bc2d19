package org.leasehold.store;

import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

import org.leasehold.time.Micros;

/**
 * The time geometry of one log, as its descriptor records it: bucket width, grace and maximum clock error, and the
 * bucket arithmetic and paths that follow from them. All times are microseconds since the epoch (UTC).
 *
 * <p>Bucket of {@code t}: {@code floor(t / width) * width}. Bucket directory:
 * {@code <log>/<yyyy>/<MM>/<dd>/<HH>/<mm>/<ss>.<uuuuuu>} of the bucket's start, so no directory holds more than a
 * minute's buckets (and a log directory holds one entry per year).
 *
 * @param widthMicros the bucket width
 * @param graceMicros the grace
 * @param errorMicros the maximum clock error
 */
public record LogGeometry(long widthMicros, long graceMicros, long errorMicros) {

    /** Timestamps must be at least this (1970-01-01). */
    public static final long MIN_MICROS = 0L;
    /** Timestamps must be below this (year 10000). */
    public static final long MAX_MICROS = 253_402_300_800_000_000L;

    /** The geometry a configuration asks for. */
    public static LogGeometry of(BagStoreConfig config) {
        return new LogGeometry(Micros.of(config.bucketWidth()), Micros.of(config.grace()),
                Micros.of(config.maxClockError()));
    }

    /** The start of the bucket holding {@code t}. */
    public long bucketOf(long t) {
        return Math.floorDiv(t, widthMicros) * widthMicros;
    }

    /** The end (exclusive) of the bucket starting at {@code start}. */
    public long end(long start) {
        return start + widthMicros;
    }

    /** When a sealer may start sealing the bucket: its end plus grace. */
    public long dueAt(long start) {
        return start + widthMicros + graceMicros;
    }

    /** A write whose bytes were visible before this instant (by the writer's clock) is on time for any sealer. */
    public long onTimeUntil(long start) {
        return start + widthMicros + graceMicros - errorMicros;
    }

    /** The bucket's path relative to the log directory, for example {@code 2026/11/22/02/43/01.000000}. */
    public static String relativePath(long start) {
        long sec = Math.floorDiv(start, 1_000_000L);
        int micros = (int) Math.floorMod(start, 1_000_000L);
        LocalDateTime dt = LocalDateTime.ofEpochSecond(sec, 0, ZoneOffset.UTC);
        StringBuilder sb = new StringBuilder(26);
        pad(sb, dt.getYear(), 4).append('/');
        pad(sb, dt.getMonthValue(), 2).append('/');
        pad(sb, dt.getDayOfMonth(), 2).append('/');
        pad(sb, dt.getHour(), 2).append('/');
        pad(sb, dt.getMinute(), 2).append('/');
        pad(sb, dt.getSecond(), 2).append('.');
        pad(sb, micros, 6);
        return sb.toString();
    }

    /** The directory of the bucket starting at {@code start} under {@code logDir}. */
    public static Path bucketDir(Path logDir, long start) {
        String rel = relativePath(start);
        Path p = logDir;
        int from = 0;
        while (true) {
            int slash = rel.indexOf('/', from);
            if (slash < 0) {
                return p.resolve(rel.substring(from));
            }
            p = p.resolve(rel.substring(from, slash));
            from = slash + 1;
        }
    }

    /** The minute directory ({@code <yyyy>/<MM>/<dd>/<HH>/<mm>}) of the bucket starting at {@code start}. */
    public static Path minuteDir(Path logDir, long start) {
        return bucketDir(logDir, start).getParent();
    }

    /** The start of the minute holding {@code t}. */
    public static long minuteOf(long t) {
        return Math.floorDiv(t, 60_000_000L) * 60_000_000L;
    }

    /**
     * The micros within the minute of a leaf name {@code ss.uuuuuu}, or -1 if {@code name} is not one.
     */
    public static long parseLeaf(String name) {
        if (name.length() != 9 || name.charAt(2) != '.') {
            return -1;
        }
        long v = 0;
        for (int i = 0; i < 9; i++) {
            if (i == 2) {
                continue;
            }
            char c = name.charAt(i);
            if (c < '0' || c > '9') {
                return -1;
            }
            v = v * 10 + (c - '0');
        }
        long sec = v / 1_000_000L;
        return sec < 60 ? v : -1;
    }

    /** The instant of {@code micros}. */
    public static Instant instant(long micros) {
        return Micros.toInstant(micros);
    }

    /** Microseconds of an instant, saturating for instants beyond the representable range. */
    static long micros(Instant i) {
        try {
            return Micros.of(i);
        } catch (ArithmeticException e) {
            return i.isBefore(Instant.EPOCH) ? Long.MIN_VALUE : Long.MAX_VALUE;
        }
    }

    private static StringBuilder pad(StringBuilder sb, int v, int width) {
        String s = Integer.toString(v);
        for (int i = s.length(); i < width; i++) {
            sb.append('0');
        }
        return sb.append(s);
    }
}
