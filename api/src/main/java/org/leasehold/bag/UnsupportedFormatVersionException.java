package org.leasehold.bag;

/**
 * A record carries a format version this reader does not know, typically written by a newer Leasehold. Upgrade the
 * reader; skipping such records ({@link ReadRequest#skipUnreadable()}) loses their messages for this read.
 */
public class UnsupportedFormatVersionException extends UnreadableRecordException {
    private static final long serialVersionUID = 1L;

    private final int version;

    public UnsupportedFormatVersionException(String log, String bucket, String file, long offset, int version,
            String message) {
        super(log, bucket, file, offset, message);
        this.version = version;
    }

    /** The version found in the record. */
    public int version() {
        return version;
    }
}
