package org.leasehold.bag;

import java.util.List;

/**
 * Messages of a read, in {@code (timestamp, writer, file, offset, index)} order, streamed: memory stays bounded by
 * the number of data files in one bucket (one read chunk each) and the messages the caller keeps, not by the size of
 * the log. Sealed buckets are read exactly to the sizes in their lock file, so every reader of a sealed bucket
 * gets the same messages in the same order. Not thread-safe; close it when done.
 */
public interface MessageStream extends AutoCloseable {

    /**
     * The next message, or null at the end.
     *
     * @throws UnreadableRecordException a corrupt record or unknown version (unless the read skips them)
     * @throws StoreUnavailableException an I/O error
     */
    Message next() throws BagStoreException;

    /** What was skipped so far (torn tails, and unreadable records when skipping). */
    List<ReadProblem> problems();

    @Override
    void close();
}
