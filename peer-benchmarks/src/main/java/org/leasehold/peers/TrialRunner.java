package org.leasehold.peers;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.HdrHistogram.Histogram;

/**
 * Runs one workload against one {@link LockClient}: closed-loop worker threads, each cycling acquire then release on
 * the names its workload gives it; a warm-up, then a measured window. Only cycles that start and end inside the
 * window count; their acquire latency (call to lock held) goes into a per-thread HdrHistogram.
 */
final class TrialRunner {
    private static final int WARMUP = 0;
    private static final int MEASURE = 1;
    private static final int DONE = 2;

    private TrialRunner() {
    }

    static <H> TrialResult run(LockClient<H> client, Workload workload, int run, Duration warmup, Duration duration)
            throws InterruptedException {
        return run(client, workload, run, warmup, duration, () -> { }, () -> { });
    }

    /**
     * Like {@link #run(LockClient, Workload, int, Duration, Duration)}, calling {@code opened} just before the measured
     * window opens and {@code closed} just after it closes (e.g. to read the server's counters).
     */
    static <H> TrialResult run(LockClient<H> client, Workload workload, int run, Duration warmup, Duration duration,
                               Runnable opened, Runnable closed) throws InterruptedException {
        List<Histogram> histograms = new ArrayList<>();
        AtomicLong cycles = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        PhaseFlag flag = new PhaseFlag();
        for (int t = 0; t < workload.threads(); t++) {
            Histogram h = new Histogram(3);
            histograms.add(h);
            int thread = t;
            threads.add(new Thread(() -> {
                long mine = 0;
                while (true) {
                    int start = flag.phase;
                    if (start == DONE) {
                        break;
                    }
                    String name = workload.pick(thread);
                    long t0 = System.nanoTime();
                    H held;
                    try {
                        held = client.acquire(name);
                    } catch (InterruptedException e) {
                        break;
                    } catch (Exception e) {
                        failed(errors, firstError, start, flag, "acquire " + name, e);
                        continue;
                    }
                    long t1 = System.nanoTime();
                    try {
                        client.release(held);
                    } catch (InterruptedException e) {
                        break;
                    } catch (Exception e) {
                        failed(errors, firstError, start, flag, "release " + name, e);
                        continue;
                    }
                    if (start == MEASURE && flag.phase == MEASURE) {
                        h.recordValue(t1 - t0);
                        mine++;
                    }
                }
                cycles.addAndGet(mine);
            }, client.system() + "-" + workload.label() + "-" + t));
        }
        threads.forEach(Thread::start);
        Thread.sleep(warmup.toMillis());
        opened.run();
        long begin = System.nanoTime();
        flag.phase = MEASURE;
        Thread.sleep(duration.toMillis());
        flag.phase = DONE;
        long end = System.nanoTime();
        closed.run();
        for (Thread t : threads) {
            t.join(Duration.ofSeconds(60).toMillis());
            if (t.isAlive()) {
                t.interrupt();
                t.join();
            }
        }
        // join() orders every worker's writes before these reads.
        Histogram all = new Histogram(3);
        histograms.forEach(all::add);
        return new TrialResult(client.system(), workload.label(), run, cycles.get(), (end - begin) / 1e9, all,
                errors.get(), firstError.get());
    }

    private static void failed(AtomicLong errors, AtomicReference<String> firstError, int start, PhaseFlag flag,
                               String what, Exception e) {
        if (start == MEASURE && flag.phase == MEASURE) {
            errors.incrementAndGet();
            firstError.compareAndSet(null, what + ": " + e);
        } else if (start == WARMUP) {
            firstError.compareAndSet(null, "(warm-up) " + what + ": " + e);
        }
        // A failing system must not turn its workers into a busy loop that starves the others of the 2 cores.
        java.util.concurrent.locks.LockSupport.parkNanos(1_000_000L);
    }

    /** The phase every worker reads at the start and end of each cycle. */
    private static final class PhaseFlag {
        volatile int phase = WARMUP;
    }
}
