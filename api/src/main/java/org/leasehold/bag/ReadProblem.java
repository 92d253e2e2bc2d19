package org.leasehold.bag;

/**
 * Something a read skipped, reported instead of failing: a torn tail (always skipped: a frame cut short by a crash or
 * a failed write, never acknowledged), an incomplete tail of a bucket not sealed yet, or, when the read was asked to
 * skip unreadable records, a corrupt record or one in an unknown format version.
 *
 * @param kind   what was skipped
 * @param log    the log
 * @param bucket the bucket's path inside the log
 * @param file   the file name inside the bucket directory
 * @param offset the byte offset where the skipped bytes start
 * @param end    the byte offset where they end (exclusive): where reading resumed, or the end of what was read of the
 *               file; -1 where not known
 * @param detail a description for people
 */
public record ReadProblem(Kind kind, String log, String bucket, String file, long offset, long end, String detail) {

    /** A problem whose end is not known. */
    public ReadProblem(Kind kind, String log, String bucket, String file, long offset, String detail) {
        this(kind, log, bucket, file, offset, -1, detail);
    }

    /** Kinds of skipped data. */
    public enum Kind {
        /**
         * An incomplete or failing last frame of a data file in a sealed bucket: a write that was never acknowledged,
         * or a file cut before the bucket was sealed (its lock file lists the cut size).
         */
        TORN_TAIL,
        /**
         * An incomplete or failing last frame of a data file in a bucket not sealed yet, where the file has not grown
         * since the read opened it: the tail is not complete, because a write is in progress (stalled) or the writer
         * crashed in it, or because the file was cut. A later read may deliver it; once the bucket is sealed, what is
         * still incomplete is a {@link #TORN_TAIL}.
         */
        INCOMPLETE_TAIL,
        /**
         * Bytes that fail a frame's checksum or structure with more data after them: with the read skipping unreadable
         * records, skipped up to the next position where a frame's header and checksum are valid (a frame with a sound
         * header and a failing checksum alone when the next frame follows it), or to the end of the file if there is
         * none.
         */
        CORRUPT_RECORD,
        /** A frame in a format version this reader does not know; the rest of that file is skipped. */
        UNSUPPORTED_VERSION
    }

    @Override
    public String toString() {
        return kind + " in log '" + log + "', bucket " + bucket + ", file " + file + " at offset " + offset
                + (end >= 0 ? " (to " + end + ")" : "") + ": " + detail;
    }
}
