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
}
