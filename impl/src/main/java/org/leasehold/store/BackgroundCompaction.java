package org.leasehold.store;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.leasehold.bag.BagStoreException;
import org.leasehold.time.TimeSource;

/**
 * Background compaction ({@link BagStoreConfig#compactionInterval()}): every interval by the store's clock, compacts
 * each log the store writes to, as {@link FileBagStore#compact(String)} does (and so retires buckets when
 * {@link BagStoreConfig#removeCompactedBuckets()} is on). Driven by {@link TimeSource} timers (no sleeping loop); the
 * compaction runs on one worker thread of its own, so that a long compaction never delays the metronome's sealing. A
 * failed run is logged and the next interval tries again (compaction is idempotent and resumable). {@link #close()}
 * stops it, letting a run in progress finish.
 */
final class BackgroundCompaction implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(BackgroundCompaction.class.getName());

    /** What is compacted: one log by name, as the store's {@code compact(log)}. */
    interface Target {
        CompactionReport compact(String log) throws BagStoreException;
    }

    private final TimeSource time;
    private final long intervalMicros;
    private final Target target;
    private final ExecutorService worker;
    private final Map<String, Boolean> logs = new ConcurrentHashMap<>();
    private final Object timerLock = new Object();
    private TimeSource.Timer timer;
    private volatile boolean closed;
    final LongAdder runs = new LongAdder();
    final LongAdder failures = new LongAdder();

    BackgroundCompaction(TimeSource time, long intervalMicros, Target target) {
        this.time = time;
        this.intervalMicros = intervalMicros;
        this.target = target;
        this.worker = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "leasehold-compactor");
            t.setDaemon(true);
            return t;
        });
    }

    /** Compacts {@code log} from now on (idempotent); the first run comes one interval after the first log. */
    void track(String log) {
        if (closed || logs.putIfAbsent(log, Boolean.TRUE) != null) {
            return;
        }
        synchronized (timerLock) {
            if (timer == null && !closed) {
                arm();
            }
        }
    }

    private void arm() {
        timer = time.scheduleAfter(intervalMicros, () -> {
            if (!closed) {
                try {
                    worker.execute(this::run);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    // Closed meanwhile.
                }
            }
        });
    }

    /** One pass over the logs, then the next timer. Runs on the worker. */
    private void run() {
        for (String log : logs.keySet()) {
            if (closed) {
                return;
            }
            long t0 = System.nanoTime();
            try {
                CompactionReport r = target.compact(log);
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6511 background compaction of log ''{0}'': {1} segments "
                        + "published, {2} buckets removed, in {3} ms", log, r.published().size(), r.bucketsRemoved(),
                        (System.nanoTime() - t0) / 1_000_000L);
            } catch (BagStoreException | RuntimeException e) {
                failures.increment();
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6512 background compaction of log ''{0}'' failed: {1}; "
                        + "what was published stays published, and the next run in {2} tries again", log,
                        e.getMessage(), java.time.Duration.ofNanos(intervalMicros * 1_000L));
            }
        }
        runs.increment();
        synchronized (timerLock) {
            if (!closed) {
                arm();
            }
        }
    }

    /** Runs one pass now on the worker and waits for it (tests). */
    void runNow() {
        try {
            worker.submit(this::runOnce).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    private void runOnce() {
        synchronized (timerLock) {
            if (timer != null) {
                timer.cancel();
                timer = null;
            }
        }
        run();
    }

    /** Waits until the worker has finished what was handed to it so far (tests). */
    void awaitIdle() {
        try {
            worker.submit(() -> { }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public void close() {
        closed = true;
        synchronized (timerLock) {
            if (timer != null) {
                timer.cancel();
                timer = null;
            }
        }
        worker.shutdown();
        try {
            if (!worker.awaitTermination(60, TimeUnit.SECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
