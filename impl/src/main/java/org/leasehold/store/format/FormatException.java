package org.leasehold.store.format;

/** Stored bytes do not follow the format; the detail says what is wrong. Turned into a public exception by callers. */
public final class FormatException extends Exception {
    private static final long serialVersionUID = 1L;

    private final long offset;
    private final int version;

    public FormatException(long offset, String detail) {
        this(offset, 0, detail);
    }

    /** A frame in an unknown format version (non-zero {@code version}). */
    public FormatException(long offset, int version, String detail) {
        super(detail, null, false, false);
        this.offset = offset;
        this.version = version;
    }

    /** The offset of the offending record. */
    public long offset() {
        return offset;
    }

    /** The unknown format version found, or 0 if the problem is something else. */
    public int version() {
        return version;
    }
}
