package org.leasehold.bench;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.store.StoreStats;
import org.leasehold.time.SystemTimeSource;

/**
 * Append throughput and commit latency of the bag store with N concurrent writers (threads appending to one log, flush
 * every batch), beside a baseline measured in the same run: one thread writing the same number of bytes per batch
 * with {@code FileChannel.write} + {@code force}, the cost of the disk's own append and flush. The two alternate in
 * rounds (store, then baseline with the batch size the store just had), so that drifts of the disk's flush latency
 * hit both alike; figures are over all rounds. Each round starts and ends with every writer idle, so the bytes and
 * the time of a round belong to the same appends.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.AppendBench [--dir D] [--writers 1,8,64]
 *     [--payloads 256,4096] [--warmup 2] [--seconds 2] [--rounds 6] [--bucket-ms 1000]</pre>
 */
public final class AppendBench {
    private static final int WARMUP = 0;
    private static final int MEASURE = 1;
    private static final int PAUSE = 2;
    private static final int STOP = 3;

    private AppendBench() {
    }

    /** Totals over the rounds of one side. */
    private static final class Side {
        final Histogram latency = new Histogram(3);
        final Histogram force = new Histogram(3);
        long bytes;
        long ops;
        long batches;
        long frames;
        long forces;
        double seconds;
        /** CPU time of this whole process (every thread) during the side's rounds. */
        long cpuNanos;
        final List<Double> ratios = new ArrayList<>();
    }

    /** What the writer threads do, and how many of them wait for the next phase. */
    private static final class Gate {
        int phase = WARMUP;
        int parked;

        synchronized void set(int p) {
            phase = p;
            notifyAll();
        }

        /** The phase to append in, waiting while paused; STOP to end. */
        synchronized int next() throws InterruptedException {
            if (phase == PAUSE) {
                parked++;
                notifyAll();
                while (phase == PAUSE) {
                    wait();
                }
                parked--;
            }
            return phase;
        }

        /** Pauses the writers and waits until every one has finished its append in flight. */
        synchronized void pauseAndDrain(int writers) throws InterruptedException {
            set(PAUSE);
            while (parked < writers) {
                wait();
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = BenchSupport.args(argv, Map.of("dir", BenchSupport.defaultDir(), "writers", "1,8,64",
                "payloads", "256,4096", "warmup", "2", "seconds", "2", "rounds", "6", "bucket-ms", "1000"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("append-" + System.nanoTime());
        Files.createDirectories(dir);
        int warmup = BenchSupport.positive("--warmup", a.get("warmup"));
        int seconds = BenchSupport.positive("--seconds", a.get("seconds"));
        int rounds = BenchSupport.positive("--rounds", a.get("rounds"));
        Duration bucket = Duration.ofMillis(BenchSupport.positive("--bucket-ms", a.get("bucket-ms")));
        System.out.println("append: files under " + dir + ", bucket " + bucket + ", " + BenchSupport.load());
        List<String> rows = new ArrayList<>();
        for (int payload : BenchSupport.ints(a.get("payloads"))) {
            for (int writers : BenchSupport.ints(a.get("writers"))) {
                rows.add(run(dir, writers, payload, warmup, seconds, rounds, bucket));
                System.out.println(rows.get(rows.size() - 1) + "   (" + BenchSupport.load() + ")");
            }
        }
        System.out.println();
        System.out.println("| writers | payload | store | baseline (same batches) | store / baseline (all rounds) "
                + "| per round: median (min-max) "
                + "| frames per batch | bytes per batch | commit p50 | commit p99 | baseline write+force p50 | p99 "
                + "| baseline force p50 | p99 | commit p99 / baseline force p99 | store CPU (cores) | baseline CPU (cores) "
                + "| store CPU µs per batch | baseline CPU µs per batch |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
        System.out.println(BenchSupport.load());
    }

    private static String run(Path dir, int writers, int payload, int warmup, int seconds, int rounds, Duration bucket)
            throws Exception {
        Path root = dir.resolve("store-" + writers + "-" + payload);
        Files.createDirectories(root);
        Recorder recorder = new Recorder(3);
        LongAdder appends = new LongAdder();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Gate gate = new Gate();
        Side store = new Side();
        Side base = new Side();
        try (SystemTimeSource time = new SystemTimeSource("bench-timer");
                FileBagStore s = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                        .bucketWidth(bucket).flushPolicy(FlushPolicy.everyBatch()).build(), time)) {
            Instant far = time.now().plusSeconds(3600);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < writers; t++) {
                LeaseStamp lease = new LeaseStamp("bench/" + t, 1, Instant.EPOCH, far, Instant.EPOCH, null, null);
                byte[] bytes = new byte[payload];
                ThreadLocalRandom.current().nextBytes(bytes);
                Thread th = new Thread(() -> {
                    AppendRequest r = AppendRequest.of("bench", List.of(lease), bytes);
                    while (true) {
                        int p;
                        try {
                            p = gate.next();
                        } catch (InterruptedException e) {
                            return;
                        }
                        if (p == STOP) {
                            return;
                        }
                        long t0 = System.nanoTime();
                        try {
                            s.append(r);
                        } catch (Exception e) {
                            failure.compareAndSet(null, e);
                            continue;
                        }
                        if (p == MEASURE) {
                            recorder.recordValue((System.nanoTime() - t0) / 1_000);
                            appends.increment();
                        }
                    }
                }, "append-" + t);
                th.setDaemon(true);
                threads.add(th);
                th.start();
            }
            Thread.sleep(warmup * 1000L);
            gate.pauseAndDrain(writers);
            for (int round = 0; round < rounds; round++) {
                recorder.reset();
                appends.reset();
                StoreStats before = s.stats();
                long cpu0 = BenchSupport.processCpuNanos();
                long t0 = System.nanoTime();
                gate.set(MEASURE);
                Thread.sleep(seconds * 1000L);
                gate.pauseAndDrain(writers);
                double secs = (System.nanoTime() - t0) / 1e9;
                store.cpuNanos += BenchSupport.processCpuNanos() - cpu0;
                StoreStats after = s.stats();
                Histogram h = recorder.getIntervalHistogram();
                long batches = after.batches() - before.batches();
                long bytes = after.bytes() - before.bytes();
                store.latency.add(h);
                store.bytes += bytes;
                store.ops += appends.sum();
                store.batches += batches;
                store.frames += after.frames() - before.frames();
                store.forces += after.forces() - before.forces();
                store.seconds += secs;
                int batchBytes = (int) Math.max(1, Math.round(bytes / (double) Math.max(1, batches)));
                double[] b = baseline(dir, batchBytes, seconds, base);
                double ratio = (bytes / secs) / (b[0] / b[1]);
                store.ratios.add(ratio);
            }
            gate.set(STOP);
            for (Thread th : threads) {
                th.join();
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException("an append failed, so the figures would not be comparable: "
                    + failure.get(), failure.get());
        }
        if (store.frames != store.ops) {
            throw new IllegalStateException("the store wrote " + store.frames + " frames for " + store.ops
                    + " measured appends: the rounds did not start and end idle");
        }
        store.ratios.sort(null);
        double storeRate = store.bytes / store.seconds;
        double baseRate = base.bytes / base.seconds;
        double p99 = store.latency.getValueAtPercentile(99);
        double fp99 = base.force.getValueAtPercentile(99);
        return String.format(Locale.ROOT,
                "| %d | %d B | %s | %s | %s | %s (%s-%s) | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %.2f | %.2f | %.2f |"
                        + " %.0f | %.0f |",
                writers, payload, BenchSupport.mb(storeRate), BenchSupport.mb(baseRate),
                BenchSupport.pct(storeRate / baseRate), BenchSupport.pct(median(store.ratios)),
                BenchSupport.pct(store.ratios.get(0)), BenchSupport.pct(store.ratios.get(store.ratios.size() - 1)),
                store.frames / (double) store.batches, store.bytes / (double) store.batches,
                BenchSupport.ms(store.latency.getValueAtPercentile(50)), BenchSupport.ms(p99),
                BenchSupport.ms(base.latency.getValueAtPercentile(50)), BenchSupport.ms(base.latency.getValueAtPercentile(99)),
                BenchSupport.ms(base.force.getValueAtPercentile(50)), BenchSupport.ms(fp99), p99 / fp99,
                store.cpuNanos / 1e9 / store.seconds, base.cpuNanos / 1e9 / base.seconds,
                store.cpuNanos / 1e3 / store.batches, base.cpuNanos / 1e3 / base.batches);
    }

    private static double median(List<Double> sorted) {
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /**
     * One thread: write {@code batchBytes} with FileChannel.write, then force, for {@code seconds}; records the time of
     * each write + force and of each force alone; returns {bytes, seconds}.
     */
    private static double[] baseline(Path dir, int batchBytes, int seconds, Side side) throws Exception {
        Path file = dir.resolve("baseline-" + System.nanoTime() + ".data");
        byte[] data = new byte[batchBytes];
        ThreadLocalRandom.current().nextBytes(data);
        ByteBuffer b = ByteBuffer.wrap(data);
        long bytes = 0;
        long cpu0 = BenchSupport.processCpuNanos();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long t0 = System.nanoTime();
            long end = t0 + seconds * 1_000_000_000L;
            long now = t0;
            while (now < end) {
                b.clear();
                long s = System.nanoTime();
                while (b.hasRemaining()) {
                    ch.write(b);
                }
                long w = System.nanoTime();
                ch.force(false);
                now = System.nanoTime();
                side.latency.recordValue((now - s) / 1_000);
                side.force.recordValue((now - w) / 1_000);
                bytes += data.length;
                side.batches++;
            }
            double secs = (now - t0) / 1e9;
            side.cpuNanos += BenchSupport.processCpuNanos() - cpu0;
            side.bytes += bytes;
            side.seconds += secs;
            return new double[] {bytes, secs};
        }
    }
}
