package org.leasehold.time;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * A time source that moves only when told to, for tests: {@link #advance(Duration)} moves the clock and runs every
 * timer that became due, in time order, on the calling thread. Timers never run inside {@link #schedule}, even when
 * already due. Thread-safe.
 */
public final class ManualTimeSource implements TimeSource {
    private final Object lock = new Object();
    private final PriorityQueue<Entry> queue = new PriorityQueue<>();
    private volatile long nowMicros;
    private long sequence;
    private final Clock clock = new ManualClock();

    public ManualTimeSource(Instant start) {
        this.nowMicros = Micros.of(start);
    }

    @Override
    public Clock clock() {
        return clock;
    }

    @Override
    public long nowMicros() {
        return nowMicros;
    }

    @Override
    public Instant now() {
        return Micros.toInstant(nowMicros);
    }

    @Override
    public Timer schedule(long atMicros, Runnable task) {
        // Never runs the task inline, even when it is already due: the caller may hold locks. A due task runs at
        // the next advance() or set(), or at runDue().
        synchronized (lock) {
            Entry e = new Entry(atMicros, sequence++, task);
            queue.add(e);
            return e;
        }
    }

    /** Moves time forward by {@code d} and runs the timers that became due, in order. */
    public void advance(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("advance() moves forward; use set() to step the clock back: " + d);
        }
        long target = Micros.plus(nowMicros, Micros.of(d));
        runUntil(target);
    }

    /** Moves time forward to {@code t} (or steps it back, running nothing) and runs the timers that became due. */
    public void set(Instant t) {
        long target = Micros.of(t);
        if (target < nowMicros) {
            nowMicros = target;
            return;
        }
        runUntil(target);
    }

    /** The number of timers that have not run or been cancelled. */
    public int pendingTimers() {
        synchronized (lock) {
            queue.removeIf(e -> e.cancelled);
            return queue.size();
        }
    }

    private void runUntil(long target) {
        while (true) {
            Entry next;
            synchronized (lock) {
                next = queue.peek();
                if (next == null || next.atMicros > target) {
                    nowMicros = Math.max(nowMicros, target);
                    return;
                }
                queue.poll();
                nowMicros = Math.max(nowMicros, next.atMicros);
            }
            if (!next.cancelled) {
                next.task.run();
            }
        }
    }

    /** Runs the timers that are already due, without moving time. */
    public void runDue() {
        List<Entry> due = new ArrayList<>();
        synchronized (lock) {
            while (!queue.isEmpty() && queue.peek().atMicros <= nowMicros) {
                due.add(queue.poll());
            }
        }
        for (Entry e : due) {
            if (!e.cancelled) {
                e.task.run();
            }
        }
    }

    private static final class Entry implements Timer, Comparable<Entry> {
        final long atMicros;
        final long seq;
        final Runnable task;
        volatile boolean cancelled;

        Entry(long atMicros, long seq, Runnable task) {
            this.atMicros = atMicros;
            this.seq = seq;
            this.task = task;
        }

        @Override
        public void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Entry o) {
            int c = Long.compare(atMicros, o.atMicros);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final class ManualClock extends Clock {
        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("the manual clock is UTC only");
        }

        @Override
        public Instant instant() {
            return Micros.toInstant(nowMicros);
        }

        @Override
        public long millis() {
            return Math.floorDiv(nowMicros, 1_000L);
        }
    }
}
