package org.leasehold.store;

import org.leasehold.bag.ReadProblem;

/**
 * What a {@link FileCursor} needs of the bucket it reads in: the bucket's bounds and names, the frame limit, and
 * where torn tails and skipped problems go. The reader's merge of one bucket provides it.
 */
interface CursorBucket {
    /** The bucket's start, µs since the epoch. */
    long start();

    /** The bucket's end (exclusive), µs since the epoch. */
    long end();

    /** The bucket's path under its log. */
    String path();

    /** The log's name. */
    String log();

    /** Whether the bucket is sealed (read to its lock file's sizes). */
    boolean sealed();

    /** Whether unreadable records are skipped and reported instead of failing the read. */
    boolean skip();

    /** The largest frame accepted. */
    int maxFrame();

    /** "bucket P of log 'L'", for messages. */
    String describe();

    /** Reports a torn tail at {@code offset} of {@code file} (recorded as a problem of sealed buckets only). */
    void torn(String file, long offset, String detail);

    /**
     * Reports an incomplete tail from {@code offset} to {@code end} of {@code file}: a torn tail in a sealed bucket, an
     * incomplete one (a write in progress or a cut file) in an unsealed bucket. By default {@link #torn(String, long,
     * String)}.
     */
    default void torn(String file, long offset, long end, String detail) {
        torn(file, offset, detail);
    }

    /** Reports a problem skipped under {@link #skip()}. */
    void problem(ReadProblem p);
}
