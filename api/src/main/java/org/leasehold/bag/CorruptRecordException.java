package org.leasehold.bag;

/**
 * A stored record (a frame of a data file, or a lock file) fails its checksum or its structure is wrong, and it is
 * not a torn tail (more data follows it). The data on disk was damaged after it was written, or written by something
 * else than a Leasehold writer. Restore the file from a replica or backup, or read with
 * {@link ReadRequest#skipUnreadable()} to skip it and get a report.
 */
public class CorruptRecordException extends UnreadableRecordException {
    private static final long serialVersionUID = 1L;

    public CorruptRecordException(String log, String bucket, String file, long offset, String message) {
        super(log, bucket, file, offset, message);
    }
}
