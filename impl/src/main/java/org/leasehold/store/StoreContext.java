package org.leasehold.store;

import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.TimeSource;

/**
 * What the store's parts (appenders, readers, the metronome) get from their store instead of the store itself: its
 * configuration and writer identity, the file operations, the clock, the test hooks and the sealer.
 *
 * @param config   the store's validated configuration
 * @param writerId this store's writer identity
 * @param files    the only file operations the parts may use
 * @param time     the clock and timers
 * @param hooks    test hooks ({@link StoreHooks#NONE} in production)
 * @param sealer   seals buckets and reads lock files
 * @param segments the verified metadata of segments read recently, shared by the store's reads
 */
record StoreContext(BagStoreConfig config, String writerId, NfsSafeFiles files, TimeSource time, StoreHooks hooks,
        Sealer sealer, SegmentMetaCache segments) {

    /** A context with a cache of segment metadata of its own. */
    StoreContext(BagStoreConfig config, String writerId, NfsSafeFiles files, TimeSource time, StoreHooks hooks,
            Sealer sealer) {
        this(config, writerId, files, time, hooks, sealer, new SegmentMetaCache());
    }

    /** The refusal of an append or read to a store that was closed. */
    StoreUnavailableException closed() {
        return new StoreUnavailableException("the bag store at " + config.root() + " (writer " + writerId
                + ") is closed; nothing was written or read: open a new store");
    }
}
