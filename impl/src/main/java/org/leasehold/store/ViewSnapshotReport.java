package org.leasehold.store;

import java.time.Instant;

/**
 * What {@link FileBagStore#buildView} did.
 *
 * @param log      the log
 * @param view     the view's name
 * @param boundary the snapshot's boundary: every message before it is folded in
 * @param file     the snapshot's published name in {@code <log>/views/<view>/}
 * @param outcome  how the snapshot came to be published
 * @param messages how many messages this call folded (after the older snapshot it started from; 0 if it found the
 *                 snapshot published)
 * @param bytes    the snapshot file's size
 */
public record ViewSnapshotReport(String log, String view, Instant boundary, String file, Outcome outcome,
        long messages, long bytes) {

    /** How the snapshot came to be published. */
    public enum Outcome {
        /** This call linked it into place. */
        PUBLISHED,
        /** Another builder linked identical bytes first; this call's prepared file was removed. */
        IDENTICAL,
        /**
         * Another builder linked it first and its bytes are damaged (checksum): it stays, readers pass over it; this
         * call's prepared file was removed.
         */
        DAMAGED,
        /** It was published before this call started; nothing was folded or written. */
        ALREADY_PUBLISHED
    }
}
