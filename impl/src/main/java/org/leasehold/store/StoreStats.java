package org.leasehold.store;

import java.util.Map;

import org.leasehold.fs.NfsSafeFiles;

/**
 * Counters of a {@link FileBagStore} since it opened, for metrics, tests and benchmarks.
 *
 * @param batches      group-commit batches written
 * @param frames       frames written (one per append)
 * @param bytes        frame bytes written
 * @param forces       data-file forces
 * @param lateChecks   batches whose clock read after writing was past {@code end + grace - maxClockError}
 * @param sealed       buckets the metronome sealed (or helped seal)
 * @param fileOps      file-system operations by kind
 */
public record StoreStats(long batches, long frames, long bytes, long forces, long lateChecks, long sealed,
        Map<NfsSafeFiles.Op, Long> fileOps) {

    public StoreStats {
        fileOps = Map.copyOf(fileOps);
    }

    /** The total number of file-system operations. */
    public long totalFileOps() {
        long t = 0;
        for (long v : fileOps.values()) {
            t += v;
        }
        return t;
    }
}
