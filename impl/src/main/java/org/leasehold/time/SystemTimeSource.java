package org.leasehold.time;

import java.time.Clock;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The real clock (UTC) with one daemon timer thread. A task scheduled for a time of the clock that fires early because
 * the clock was stepped back is put back until the clock reads its time; one scheduled after a delay
 * ({@link #scheduleAfter}) runs after that much elapsed time, whatever the clock does.
 */
public final class SystemTimeSource implements TimeSource, AutoCloseable {
    private final Clock clock;
    private final ScheduledThreadPoolExecutor timer;

    public SystemTimeSource(String threadName) {
        this(systemClock(), threadName);
    }

    public SystemTimeSource(Clock clock, String threadName) {
        this.clock = clock;
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    // CHECKSTYLE.OFF: InjectedTime -- the one place that chooses the real clock.
    private static Clock systemClock() {
        return Clock.systemUTC();
    }
    // CHECKSTYLE.ON: InjectedTime

    @Override
    public Clock clock() {
        return clock;
    }

    @Override
    public Timer schedule(long atMicros, Runnable task) {
        Entry entry = new Entry(atMicros, task);
        entry.arm();
        return entry;
    }

    /** After {@code delayMicros} of the monotonic timer, whatever the clock does meanwhile. */
    @Override
    public Timer scheduleAfter(long delayMicros, Runnable task) {
        try {
            ScheduledFuture<?> f = timer.schedule(task, Math.max(0, delayMicros), TimeUnit.MICROSECONDS);
            return () -> f.cancel(false);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // Shut down: the owner is closing and no longer needs its timers.
            return () -> { };
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }

    private final class Entry implements Timer, Runnable {
        private final long atMicros;
        private final Runnable task;
        private volatile ScheduledFuture<?> future;
        private volatile boolean cancelled;

        Entry(long atMicros, Runnable task) {
            this.atMicros = atMicros;
            this.task = task;
        }

        void arm() {
            if (cancelled || timer.isShutdown()) {
                return;
            }
            long delay = Math.max(0, atMicros - nowMicros());
            try {
                future = timer.schedule(this, delay, TimeUnit.MICROSECONDS);
            } catch (java.util.concurrent.RejectedExecutionException e) {
                // Shut down: the owner is closing and no longer needs its timers.
            }
        }

        @Override
        public void run() {
            if (cancelled) {
                return;
            }
            if (nowMicros() < atMicros) {
                arm();
                return;
            }
            task.run();
        }

        @Override
        public void cancel() {
            cancelled = true;
            ScheduledFuture<?> f = future;
            if (f != null) {
                f.cancel(false);
            }
        }
    }
}
