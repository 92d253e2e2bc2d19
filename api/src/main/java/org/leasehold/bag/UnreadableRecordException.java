package org.leasehold.bag;

/**
 * A stored record cannot be read. Names the exact place: log, bucket, data file and byte offset. Reads can be told
 * to skip such records and report them instead ({@link ReadRequest#skipUnreadable()}).
 */
public class UnreadableRecordException extends BagStoreException {
    private static final long serialVersionUID = 1L;

    private final String log;
    private final String bucket;
    private final String file;
    private final long offset;

    public UnreadableRecordException(String log, String bucket, String file, long offset, String message) {
        super(message);
        this.log = log;
        this.bucket = bucket;
        this.file = file;
        this.offset = offset;
    }

    public String log() {
        return log;
    }

    /** The bucket's path inside the log. */
    public String bucket() {
        return bucket;
    }

    /** The file name inside the bucket directory. */
    public String file() {
        return file;
    }

    /** The byte offset of the record in the file. */
    public long offset() {
        return offset;
    }
}
