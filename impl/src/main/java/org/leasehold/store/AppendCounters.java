package org.leasehold.store;

import java.util.concurrent.atomic.LongAdder;

/** What one log's appender counted since the store opened, summed into {@link StoreStats}. */
final class AppendCounters {
    /** Batches committed. */
    final LongAdder batches = new LongAdder();
    /** Frames written completely. */
    final LongAdder frames = new LongAdder();
    /** Bytes of those frames. */
    final LongAdder bytes = new LongAdder();
    /** Data files forced. */
    final LongAdder forces = new LongAdder();
    /** Buckets whose frames landed late and were checked against sealing. */
    final LongAdder lateChecks = new LongAdder();
}
