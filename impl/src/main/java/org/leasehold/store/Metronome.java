package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import org.leasehold.bag.BagStoreException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The background sealer: for every log its store writes to, seals each bucket once its end plus grace has passed by
 * this process's clock (plus a small random delay, so that many processes do not all race on the same bucket).
 * It seals the buckets its own store wrote to and every other existing bucket it finds in those logs, starting a
 * configurable look-back before it began. Missing buckets are left alone (a successor creates and seals those it
 * needs with {@code sealForSuccessor}).
 *
 * <p>Driven by the store's {@link TimeSource} timers (no sleeping loop); the sealing itself runs on one worker thread
 * so timers stay short. {@link #close()} stops it.
 */
final class Metronome implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Metronome.class.getName());

    private final TimeSource time;
    private final NfsSafeFiles fs;
    private final Sealer sealer;
    private final long lookback;
    private final ExecutorService worker;
    private final Map<String, LogState> logs = new ConcurrentHashMap<>();
    private final Object timerLock = new Object();
    private TimeSource.Timer timer;
    private long timerAt = Long.MAX_VALUE;
    private volatile boolean closed;
    final LongAdder sealedBuckets = new LongAdder();
    final LongAdder ticks = new LongAdder();

    /** Per log: the next bucket to look at, and buckets this store wrote to that are not sealed yet. */
    private static final class LogState {
        final LogHandle log;
        long next;
        final TreeSet<Long> own = new TreeSet<>();
        final TreeSet<Long> retry = new TreeSet<>();

        LogState(LogHandle log, long next) {
            this.log = log;
            this.next = next;
        }
    }

    Metronome(StoreContext ctx, long lookbackMicros) {
        this.time = ctx.time();
        this.fs = ctx.files();
        this.sealer = ctx.sealer();
        this.lookback = lookbackMicros;
        ThreadPoolExecutor ex = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                r -> {
                    Thread t = new Thread(r, "leasehold-metronome");
                    t.setDaemon(true);
                    return t;
                });
        this.worker = ex;
    }

    /** Starts sealing {@code log} (idempotent). */
    void track(LogHandle log) {
        if (closed) {
            return;
        }
        LogGeometry g = log.geometry();
        LogState st = logs.computeIfAbsent(log.name(),
                k -> new LogState(log, g.bucketOf(time.nowMicros() - lookback)));
        synchronized (st) {
            arm(g.dueAt(st.next));
        }
    }

    /** Remembers that this store wrote to {@code bucket}, so it is sealed when due even if the scan passed it. */
    void own(LogHandle log, long bucket) {
        LogState st = logs.get(log.name());
        if (st == null) {
            track(log);
            st = logs.get(log.name());
            if (st == null) {
                return;
            }
        }
        synchronized (st) {
            st.own.add(bucket);
        }
        arm(log.geometry().dueAt(bucket));
    }

    private void arm(long dueAt) {
        synchronized (timerLock) {
            if (closed || dueAt >= timerAt) {
                return;
            }
            if (timer != null) {
                timer.cancel();
            }
            long jitterBound = Math.max(1, Math.min(50_000L, minWidth() / 4));
            long at = dueAt + ThreadLocalRandom.current().nextLong(jitterBound);
            timerAt = at;
            timer = time.schedule(at, () -> {
                synchronized (timerLock) {
                    if (timerAt == at) {
                        timer = null;
                        timerAt = Long.MAX_VALUE;
                    }
                }
                if (!closed) {
                    try {
                        worker.execute(this::tick);
                    } catch (java.util.concurrent.RejectedExecutionException e) {
                        // Closing.
                    }
                }
            });
        }
    }

    private long minWidth() {
        long w = Long.MAX_VALUE;
        for (LogState st : logs.values()) {
            w = Math.min(w, st.log.geometry().widthMicros());
        }
        return w == Long.MAX_VALUE ? 1_000_000L : w;
    }

    /** Seals everything due now, then arms the timer for the next due bucket. Runs on the worker thread. */
    void tick() {
        if (closed) {
            return;
        }
        ticks.increment();
        long now = time.nowMicros();
        long nextDue = Long.MAX_VALUE;
        for (LogState st : logs.values()) {
            LogGeometry g = st.log.geometry();
            List<Long> todo = new ArrayList<>();
            long scanFrom;
            long scanTo;
            synchronized (st) {
                scanFrom = st.next;
                scanTo = scanFrom;
                while (g.dueAt(scanTo) <= now) {
                    scanTo += g.widthMicros();
                }
                st.next = scanTo;
                while (!st.own.isEmpty() && g.dueAt(st.own.first()) <= now) {
                    todo.add(st.own.pollFirst());
                }
                todo.addAll(st.retry);
                st.retry.clear();
            }
            if (scanTo > scanFrom) {
                todo.addAll(existing(st.log, scanFrom, scanTo));
            }
            for (long b : new TreeSet<>(todo)) {
                if (closed) {
                    return;
                }
                try {
                    Sealer.Result r = sealer.seal(st.log, b, false, null);
                    if (r != null && r.outcome() != org.leasehold.bag.SealReport.Outcome.ALREADY_SEALED) {
                        sealedBuckets.increment();
                    }
                } catch (BagStoreException e) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6401 the metronome could not seal bucket {0} of "
                            + "log ''{1}'' (will retry): {2}", st.log.bucketPath(b), st.log.name(), e.getMessage());
                    synchronized (st) {
                        st.retry.add(b);
                    }
                }
            }
            synchronized (st) {
                long d = g.dueAt(st.next);
                if (!st.retry.isEmpty()) {
                    d = Math.min(d, now + g.widthMicros());
                }
                if (!st.own.isEmpty()) {
                    d = Math.min(d, g.dueAt(st.own.first()));
                }
                nextDue = Math.min(nextDue, d);
            }
        }
        if (nextDue != Long.MAX_VALUE) {
            arm(nextDue);
        }
    }

    /** Buckets that exist in {@code [from, to)}, found by listing minute directories. */
    private List<Long> existing(LogHandle log, long from, long to) {
        List<Long> found = new ArrayList<>();
        for (long minute = LogGeometry.minuteOf(from); minute < to; minute += 60_000_000L) {
            List<String> names;
            try {
                names = fs.list(LogGeometry.minuteDir(log.dir(), minute));
            } catch (NoSuchFileException e) {
                continue;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6402 the metronome could not list log ''{0}'' near {1}: "
                        + "{2}", log.name(), Micros.toInstant(minute), IoErrors.describe(e));
                continue;
            }
            for (String n : names) {
                long within = LogGeometry.parseLeaf(n);
                if (within < 0) {
                    continue;
                }
                long b = minute + within;
                if (b >= from && b < to && Math.floorMod(b, log.geometry().widthMicros()) == 0) {
                    found.add(b);
                }
            }
        }
        return found;
    }

    /** Runs one pass synchronously on the worker and waits for it (tests). */
    void runNow() {
        try {
            worker.submit(this::tick).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("metronome pass failed", e.getCause());
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // Closed.
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
            if (!worker.awaitTermination(30, TimeUnit.SECONDS)) {
                worker.shutdownNow();
            }
        } catch (InterruptedException e) {
            worker.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }
}
