package org.leasehold.store.format;

import java.util.List;

/**
 * The descriptor of a log, created once (prepared under a unique name, then linked into place) and never changed:
 * the geometry every writer, sealer and reader of the log must share. Text, verified by a CRC32C:
 *
 * <pre>
 * leasehold-log 1
 * bucket-width-micros 1000000
 * grace-micros 2000000
 * max-clock-error-micros 500000
 * crc32c 1a2b3c4d
 * </pre>
 *
 * @param widthMicros the bucket width
 * @param graceMicros the grace
 * @param errorMicros the maximum clock error
 */
public record LogDescriptor(long widthMicros, long graceMicros, long errorMicros) {
    private static final String FIRST = "leasehold-log 1";

    /** The descriptor's bytes. */
    public byte[] encode() {
        return TextRecord.seal(List.of(FIRST, "bucket-width-micros " + widthMicros, "grace-micros " + graceMicros,
                "max-clock-error-micros " + errorMicros));
    }

    /** Parses and verifies a descriptor. */
    public static LogDescriptor parse(byte[] bytes) throws FormatException {
        String what = "the log descriptor";
        List<String> lines = TextRecord.open(bytes, what);
        if (lines.isEmpty() || !lines.get(0).equals(FIRST)) {
            throw new FormatException(0, what + " does not start with '" + FIRST + "'");
        }
        if (lines.size() != 4) {
            throw new FormatException(0, what + " has " + lines.size() + " lines before its checksum; expected 4");
        }
        long w = TextRecord.number(TextRecord.field(lines, 1, "bucket-width-micros", what), "bucket-width-micros", what);
        long g = TextRecord.number(TextRecord.field(lines, 2, "grace-micros", what), "grace-micros", what);
        long e = TextRecord.number(TextRecord.field(lines, 3, "max-clock-error-micros", what), "max-clock-error-micros",
                what);
        if (w <= 0 || 86_400_000_000L % w != 0 || g <= e || e < 0) {
            throw new FormatException(0, what + " holds an impossible geometry (width " + w + ", grace " + g
                    + ", clock error " + e + ")");
        }
        return new LogDescriptor(w, g, e);
    }
}
