package org.leasehold.store;

/**
 * What a {@link FileBagStore#compact(String, java.time.Duration, CompactionProgress) compaction} reports as it goes,
 * in time order of the log, on the compacting thread. Times are µs since the epoch, at segment span boundaries.
 */
public interface CompactionProgress {
    /** Reports nothing. */
    CompactionProgress NONE = new CompactionProgress() {
    };

    /**
     * Called once, before any segment is written: the compaction will cover {@code [fromMicros, limitMicros)} in spans
     * of {@code spanMicros} ({@code fromMicros} is the start of the span of the log's first bucket, or
     * {@code limitMicros} when there is nothing to look at).
     */
    default void starting(long fromMicros, long limitMicros, long spanMicros) {
    }

    /** Everything before {@code throughMicros} is done: compacted now, published by another compactor, or before. */
    default void handled(long throughMicros) {
    }
}
