package org.leasehold.simulation;

import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.Semaphore;

/**
 * The one seeded scheduler of a simulation: a queue of events in true (simulated) time, run in order on the thread
 * that calls {@link #runUntil}. Events are timers (run on that thread) and resumptions of {@link Fiber}s. A fiber is a
 * thread that runs only while the scheduler waits for it: it is handed control when its resumption is due and hands it
 * back at its next step (a file-system call, a call to the lease service, a sleep), so exactly one thread runs at any
 * time and the whole run is a function of the seed. Ties in time are broken by the order events were queued.
 */
final class Scheduler {
    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private final SplittableRandom random;
    private final Semaphore back = new Semaphore(0);
    private final Trace trace;
    private long now;
    private long sequence;
    private long operations;
    private long handOvers;
    private Fiber current;

    Scheduler(long seed, long start, Trace trace) {
        this.random = new SplittableRandom(seed);
        this.now = start;
        this.trace = trace;
    }

    /** True time, µs since the epoch. */
    long now() {
        return now;
    }

    /** The seeded source every decision of the run draws from. */
    SplittableRandom random() {
        return random;
    }

    Trace trace() {
        return trace;
    }

    /** Counts one simulated operation (a file-system call, a lease-service call, an append, a read). */
    void countOperation() {
        operations++;
    }

    long operations() {
        return operations;
    }

    /** How many times control went to a fiber and back. */
    long handOvers() {
        return handOvers;
    }

    /** The fiber running now, or null on the scheduler's own thread. */
    Fiber current() {
        return current;
    }

    /** Queues {@code task} at true time {@code at} (not before now); returns a handle that cancels it. */
    Event at(long at, Runnable task) {
        Event e = new Event(Math.max(at, now), sequence++, task, null);
        queue.add(e);
        return e;
    }

    /** Queues the resumption of {@code fiber} at true time {@code at}. */
    void resumeAt(long at, Fiber fiber) {
        queue.add(new Event(Math.max(at, now), sequence++, null, fiber));
    }

    /** Runs events in time order until none is left before {@code end} or {@code stop} says so. */
    void runUntil(long end, java.util.function.BooleanSupplier stop) {
        while (!queue.isEmpty() && !stop.getAsBoolean()) {
            Event e = queue.peek();
            if (e.at >= end) {
                break;
            }
            queue.poll();
            if (e.cancelled) {
                continue;
            }
            now = e.at;
            if (e.fiber != null) {
                Fiber f = e.fiber;
                long pausedUntil = f.machine().pausedUntil();
                if (pausedUntil > now && !f.killed()) {
                    resumeAt(pausedUntil, f);
                    continue;
                }
                current = f;
                handOvers++;
                f.go();
                back.acquireUninterruptibly();
                current = null;
            } else {
                e.task.run();
            }
        }
        now = Math.max(now, Math.min(end, queue.isEmpty() ? end : now));
    }

    /** Whether no event is queued at or before {@code at} (so a fiber resumed at {@code at} would run next). */
    boolean nothingBefore(long at) {
        Event e = queue.peek();
        while (e != null && e.cancelled) {
            queue.poll();
            e = queue.peek();
        }
        return e == null || e.at > at;
    }

    /** Moves true time to {@code at}, for the running fiber that skipped its hand-over. */
    void advanceTo(long at) {
        now = Math.max(now, at);
    }

    /** Called by a fiber's thread: gives control back to the scheduler. */
    void handBack() {
        back.release();
    }

    /** A queued event: a timer task, or the resumption of a fiber. */
    static final class Event implements Comparable<Event> {
        final long at;
        final long seq;
        final Runnable task;
        final Fiber fiber;
        boolean cancelled;

        Event(long at, long seq, Runnable task, Fiber fiber) {
            this.at = at;
            this.seq = seq;
            this.task = task;
            this.fiber = fiber;
        }

        void cancel() {
            cancelled = true;
        }

        @Override
        public int compareTo(Event o) {
            int c = Long.compare(at, o.at);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }
}
