package org.leasehold.cli;

import java.util.function.LongFunction;

import org.leasehold.store.CompactionProgress;
import org.leasehold.store.ViewProgress;

/**
 * Drives a progress bar over a time range counted in steps (a compaction's segment spans, a view build's buckets)
 * from what the store reports: the bar opens when the work knows its range, and moves to each step done.
 */
final class RangeProgress implements CompactionProgress, ViewProgress, AutoCloseable {
    private final LongFunction<Progress> bars;
    private Progress bar;
    /** The range's start, µs; {@link Long#MIN_VALUE} until the work starts. */
    long from = Long.MIN_VALUE;
    /** The range's end (a compaction's limit, a view's boundary), µs; {@link Long#MIN_VALUE} until the work starts. */
    long limit = Long.MIN_VALUE;
    /** The length of one step (a segment span, a bucket width), µs. */
    long step;

    RangeProgress(LongFunction<Progress> bars) {
        this.bars = bars;
    }

    @Override
    public void starting(long fromMicros, long limitMicros, long stepMicros) {
        from = fromMicros;
        limit = limitMicros;
        step = stepMicros;
        bar = bars.apply(Math.max(0, (limitMicros - fromMicros) / stepMicros));
    }

    @Override
    public void handled(long throughMicros) {
        if (bar != null) {
            bar.advanceTo(Math.max(0, (Math.min(throughMicros, limit) - from) / step));
        }
    }

    @Override
    public void folded(long throughMicros) {
        handled(throughMicros);
    }

    @Override
    public void close() {
        if (bar != null) {
            bar.close();
        }
    }
}
