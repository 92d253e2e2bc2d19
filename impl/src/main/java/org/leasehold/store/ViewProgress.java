package org.leasehold.store;

/**
 * What a {@link FileBagStore#buildView(String, org.leasehold.bag.ViewDefinition, java.time.Instant, ViewProgress)
 * snapshot build} reports as it goes, on the building thread. Times are µs since the epoch, at bucket boundaries.
 */
public interface ViewProgress {
    /** Reports nothing. */
    ViewProgress NONE = new ViewProgress() {
    };

    /**
     * Called once, before any message is folded: the build folds the buckets of {@code [fromMicros, boundaryMicros)}
     * ({@code fromMicros} is the boundary of the snapshot it starts from, or the start of the log's first bucket
     * directory; both are {@code boundaryMicros} when the snapshot is already published or there is nothing to fold),
     * buckets {@code widthMicros} wide.
     */
    default void starting(long fromMicros, long boundaryMicros, long widthMicros) {
    }

    /** Every message before {@code throughMicros} (a bucket start) is folded. */
    default void folded(long throughMicros) {
    }
}
