package org.leasehold.store;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.store.format.Frames;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The single writer of one log for one writer identity, with group commit: appending threads queue encoded frames;
 * one committer thread takes everything queued, plans it into file runs (per bucket and data file), has
 * {@link FileRunWriter} write them with one gathering write per data file and force (or close) once, then reads the
 * clock and has {@link LatenessCheck} decide every frame's outcome. The data files themselves are {@link DataFiles}'.
 *
 * <p>Within a data file, frame timestamps never decrease (readers merge files in timestamp order): the store bumps
 * the timestamps it chooses to the last one queued when that stays inside the leases, and starts a new data file
 * otherwise.
 */
final class Appender {
    private static final System.Logger LOG = System.getLogger(Appender.class.getName());

    private final StoreContext ctx;
    private final LogHandle log;
    private final LogGeometry g;
    private final TimeSource time;
    private final StoreHooks hooks;
    private final FlushPolicy policy;
    private final int maxBatchBytes;
    private final long maxQueuedBytes;
    private final AppendCounters counters = new AppendCounters();
    private final LatenessCheck check;
    private final DataFiles files;
    private final FileRunWriter writer;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final Condition space = lock.newCondition();
    private final ArrayDeque<PendingAppend> queue = new ArrayDeque<>();
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    private long queuedBytes;
    private long lastQueued = Long.MIN_VALUE;
    private boolean closing;
    private final Thread thread;
    private final ExecutorService acks;
    private final AtomicInteger acksPending = new AtomicInteger();
    private TimeSource.Timer flushTimer;

    /**
     * Starts the committer of {@code log}.
     *
     * @param listener told of every bucket a data file is started in
     */
    Appender(StoreContext ctx, LogHandle log, DataFiles.NewBucketListener listener) {
        this.ctx = ctx;
        this.log = log;
        this.g = log.geometry();
        this.time = ctx.time();
        this.hooks = ctx.hooks();
        this.policy = ctx.config().flushPolicy();
        this.maxBatchBytes = ctx.config().maxBatchBytes();
        this.maxQueuedBytes = ctx.config().maxQueuedBytes();
        this.check = new LatenessCheck(ctx, log, counters);
        this.files = new DataFiles(ctx, log, check, listener, counters);
        this.writer = new FileRunWriter(ctx, log, files, counters);
        this.acks = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "leasehold-bag-" + log.name() + "-acks");
            t.setDaemon(true);
            return t;
        });
        this.thread = new Thread(this::run, "leasehold-bag-" + log.name());
        thread.setDaemon(true);
        thread.start();
        if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
            scheduleFlush();
        }
    }

    /** What this appender counted since it started. */
    AppendCounters counters() {
        return counters;
    }

    /**
     * Queues a frame. The timestamp may be bumped to the last one queued (when the store chose it and the bump stays
     * below the deadline), keeping each data file in timestamp order.
     */
    CompletableFuture<Appended> submit(PendingAppend p) throws StoreUnavailableException {
        lock.lock();
        try {
            while (!closing && queuedBytes > 0 && queuedBytes + p.length > maxQueuedBytes) {
                space.awaitUninterruptibly();
            }
            if (closing) {
                throw ctx.closed();
            }
            if (!p.callerTime && p.t < lastQueued && lastQueued < p.deadline) {
                p.t = lastQueued;
                Frames.retime(p.frame, p.t);
            }
            if (p.t > lastQueued) {
                lastQueued = p.t;
            }
            p.bucket = g.bucketOf(p.t);
            queue.addLast(p);
            queuedBytes += p.length;
            wake.signal();
        } finally {
            lock.unlock();
        }
        return p.future;
    }

    /** Runs {@code task} on the committer thread, between batches. */
    void execute(Runnable task) {
        lock.lock();
        try {
            if (closing) {
                return;
            }
            tasks.addLast(task);
            wake.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Stops accepting appends, commits what is queued, flushes and closes the files; waits for the committer. */
    void close() {
        lock.lock();
        try {
            closing = true;
            if (flushTimer != null) {
                flushTimer.cancel();
            }
            wake.signalAll();
            space.signalAll();
        } finally {
            lock.unlock();
        }
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        acks.shutdown();
        while (!acks.isTerminated()) {
            try {
                acks.awaitTermination(1, TimeUnit.MINUTES);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void scheduleFlush() {
        // Elapsed time, not a time of the clock: a clock stepped back must not leave acknowledged messages unforced
        // for as long as the step (the interval is what a machine crash may lose).
        long after = Micros.of(policy.interval());
        lock.lock();
        try {
            if (!closing) {
                flushTimer = time.scheduleAfter(after, () -> execute(() -> {
                    files.flushDirty();
                    scheduleFlush();
                }));
            }
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        while (true) {
            List<Runnable> todo = new ArrayList<>();
            List<PendingAppend> batch = new ArrayList<>();
            if (!take(todo, batch)) {
                break;
            }
            for (Runnable r : todo) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6106 a background task of log ''" + log.name()
                            + "'' failed", e);
                }
            }
            if (!batch.isEmpty()) {
                try {
                    commit(batch);
                    files.closeRetired();
                } catch (RuntimeException | Error e) {
                    LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-6107 the committer of log ''" + log.name()
                            + "'' failed unexpectedly", e);
                    for (PendingAppend p : batch) {
                        p.future.completeExceptionally(new WriteOutcomeUnknownException("the committer of log '"
                                + log.name() + "' failed unexpectedly (" + e + "); the append may or may not be "
                                + "readable: read the log after its bucket is sealed to find out", e));
                    }
                }
            }
        }
        files.flushDirty();
        files.closeAll();
    }

    /**
     * Waits for work, then takes the queued tasks and a batch of frames (up to {@code maxBatchBytes}, at least one).
     * Returns false when the appender is closing and nothing is left.
     */
    private boolean take(List<Runnable> todo, List<PendingAppend> batch) {
        lock.lock();
        try {
            while (queue.isEmpty() && tasks.isEmpty() && !closing) {
                wake.awaitUninterruptibly();
            }
            if (queue.isEmpty() && tasks.isEmpty()) {
                return false;
            }
            todo.addAll(tasks);
            tasks.clear();
            long taken = 0;
            while (!queue.isEmpty() && (batch.isEmpty() || taken + queue.peekFirst().length <= maxBatchBytes)) {
                PendingAppend p = queue.pollFirst();
                taken += p.length;
                batch.add(p);
            }
            queuedBytes -= taken;
            space.signalAll();
            return true;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------------------- commit

    /** Plans, writes and flushes the batch, reads the clock, decides every frame, and delivers the outcomes. */
    private void commit(List<PendingAppend> batch) {
        counters.batches.increment();
        LinkedHashMap<Long, List<PendingAppend>> groups = new LinkedHashMap<>();
        for (PendingAppend p : batch) {
            groups.computeIfAbsent(p.bucket, k -> new ArrayList<>()).add(p);
        }
        List<FileRun> fileRuns = new ArrayList<>();
        Map<Long, Map<String, Long>> sizesBefore = new HashMap<>();
        for (Map.Entry<Long, List<PendingAppend>> e : groups.entrySet()) {
            plan(e.getKey(), e.getValue(), fileRuns, sizesBefore);
        }
        if (fileRuns.isEmpty()) {
            deliver(batch);
            return;
        }
        writer.write(fileRuns);
        files.closeRetired();
        hooks.afterWrite(log.name());
        long now = time.nowMicros();
        check.decide(fileRuns, sizesBefore, now);
        files.closeDue(now);
        check.forgetDue(now);
        deliver(batch);
    }

    /**
     * Wakes the batch's callers. When more appends are queued, a second thread does it, so that the next batch's
     * write and flush overlap with waking (dozens of) threads; otherwise here, saving a hand-off.
     */
    private void deliver(List<PendingAppend> batch) {
        boolean more;
        lock.lock();
        try {
            more = !queue.isEmpty();
        } finally {
            lock.unlock();
        }
        // Once a batch went to the second thread, later ones follow it until it is idle: callers see their
        // acknowledgements in commit order.
        if (more || acksPending.get() > 0) {
            acksPending.incrementAndGet();
            acks.execute(() -> {
                try {
                    for (PendingAppend p : batch) {
                        p.deliver();
                    }
                } finally {
                    acksPending.decrementAndGet();
                }
            });
        } else {
            for (PendingAppend p : batch) {
                p.deliver();
            }
        }
    }

    /** Gate, data file and file runs for one bucket's frames; frames that cannot be written are failed here. */
    private void plan(long bucket, List<PendingAppend> ps, List<FileRun> fileRuns,
            Map<Long, Map<String, Long>> sizesBefore) {
        int assigned = 0;
        try {
            check.gate(bucket);
            DataFile f = files.fileFor(bucket);
            hooks.beforeWrite(log.name(), bucket);
            FileRun fileRun = null;
            for (PendingAppend p : ps) {
                if (p.t < f.plannedLastT) {
                    f = files.next(f);
                    fileRun = null;
                }
                if (fileRun == null) {
                    fileRun = new FileRun(f);
                    fileRuns.add(fileRun);
                    sizesBefore.computeIfAbsent(bucket, k -> new HashMap<>()).putIfAbsent(f.name, f.size);
                }
                fileRun.items.add(p);
                f.plannedLastT = p.t;
                assigned++;
            }
        } catch (BagStoreException ex) {
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(ex);
            }
        } catch (IOException ex) {
            StoreUnavailableException su = AppendErrors.cannotWrite(log, bucket, ex);
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(su);
            }
        }
    }
}
