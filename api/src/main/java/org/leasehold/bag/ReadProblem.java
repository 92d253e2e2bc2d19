package org.leasehold.bag;

/**
 * Something a read skipped, reported instead of failing: a torn tail (always skipped: a frame cut short by a crash or
 * a failed write, never acknowledged), or, when the read was asked to skip unreadable records, a corrupt record or
 * one in an unknown format version.
 *
 * @param kind   what was skipped
 * @param log    the log
 * @param bucket the bucket's path inside the log
 * @param file   the file name inside the bucket directory
 * @param offset the byte offset where the skipped bytes start
 * @param detail a description for people
 */
public record ReadProblem(Kind kind, String log, String bucket, String file, long offset, String detail) {

    /** Kinds of skipped data. */
    public enum Kind {
        /** An incomplete or failing last frame of a data file: a write that was never acknowledged. */
        TORN_TAIL,
        /**
         * A frame that fails its checksum or structure with more data after it: skipped alone when its header is sound,
         * otherwise with the rest of that file (the next frame cannot be found).
         */
        CORRUPT_RECORD,
        /** A frame in a format version this reader does not know; the rest of that file is skipped. */
        UNSUPPORTED_VERSION
    }

    @Override
    public String toString() {
        return kind + " in log '" + log + "', bucket " + bucket + ", file " + file + " at offset " + offset + ": " + detail;
    }
}
