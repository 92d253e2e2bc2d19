package org.leasehold.store;

import java.nio.file.Path;

import org.leasehold.bag.AppendRequest;

/**
 * Points where tests stop or steer the store to reproduce pauses, crashes and torn writes deterministically. The
 * production store uses {@link #NONE}. Package-private: only tests in this package install hooks.
 */
interface StoreHooks {
    StoreHooks NONE = new StoreHooks() {
    };

    /** In the appending thread, after the timestamp was chosen and the frame encoded, before it is queued. */
    default void afterEncode(AppendRequest request, long timestamp) {
    }

    /** In the committer, after the file for {@code bucket} is open and checked, before writing to it. */
    default void beforeWrite(String log, long bucket) {
    }

    /**
     * In the committer, before writing {@code bytes} bytes to {@code file}: return how many to write before stopping
     * (a torn write), or -1 to write them all.
     */
    default int tearAfter(String log, Path file, int bytes) {
        return -1;
    }

    /** In the committer, after a torn write (see {@link #tearAfter}) was forced. A crash test blocks here. */
    default void torn(String log, Path file) {
    }

    /** In the committer, after the batch's bytes were written and forced or closed, before the clock is read. */
    default void afterWrite(String log) {
    }

    /**
     * In a compaction of the segment of {@code log} starting at {@code from}, at publication step {@code step}:
     * {@code writing} (after each source bucket's entries were written to the prepared file), {@code prepared} (the
     * prepared file is complete and forced, not yet linked), {@code linked} (after the link, won or lost, before the
     * prepared name is unlinked), {@code unlinked}. A crash test blocks here.
     */
    default void compactionStep(String log, long from, String step) {
    }

    /** In retention, after bucket {@code bucket}'s lock file was checked against its segment, before unlinking. */
    default void retentionStep(String log, long bucket) {
    }

    /** In a read of bucket directories, after bucket {@code bucket}'s directory was listed, before it is opened. */
    default void bucketListed(String log, long bucket) {
    }
}
