package org.leasehold.bench;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.StoreStats;
import org.leasehold.time.SystemTimeSource;

/**
 * Append throughput and commit latency of the bag store with N concurrent writers (threads appending to one log, flush
 * every batch), beside a baseline measured in the same run: one thread writing the same number of bytes per batch
 * with {@code FileChannel.write} + {@code force}, the cost of the disk's own append and flush. The two alternate in
 * rounds (store, then baseline with the batch size the store just had), so that drifts of the disk's flush latency
 * hit both alike; figures are over all rounds.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.AppendBench [--dir D] [--writers 1,8,64]
 *     [--payloads 256,4096] [--warmup 2] [--seconds 3] [--rounds 4]</pre>
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
        long bytes;
        long payloadBytes;
        long ops;
        long batches;
        long frames;
        double seconds;
        double minRatio = Double.MAX_VALUE;
        double maxRatio;
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = BenchSupport.args(argv, Map.of("dir", "target/bench-data", "writers", "1,8,64",
                "payloads", "256,4096", "warmup", "2", "seconds", "3", "rounds", "4"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("append-" + System.nanoTime());
        Files.createDirectories(dir);
        int warmup = Integer.parseInt(a.get("warmup"));
        int seconds = Integer.parseInt(a.get("seconds"));
        int rounds = Integer.parseInt(a.get("rounds"));
        List<String> rows = new ArrayList<>();
        for (int payload : BenchSupport.ints(a.get("payloads"))) {
            for (int writers : BenchSupport.ints(a.get("writers"))) {
                rows.add(run(dir, writers, payload, warmup, seconds, rounds));
                System.out.println(rows.get(rows.size() - 1));
            }
        }
        System.out.println();
        System.out.println("| writers | payload | store | baseline (same batches) | store / baseline (rounds min-max) "
                + "| frames per batch | commit p50 | commit p99 | baseline p50 | baseline p99 | commit p99 / baseline p99 |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
    }

    private static String run(Path dir, int writers, int payload, int warmup, int seconds, int rounds) throws Exception {
        Path root = dir.resolve("store-" + writers + "-" + payload);
        Files.createDirectories(root);
        Recorder recorder = new Recorder(3);
        LongAdder appends = new LongAdder();
        int[] phase = {WARMUP};
        Object gate = new Object();
        Side store = new Side();
        Side base = new Side();
        try (SystemTimeSource time = new SystemTimeSource("bench-timer");
                FileBagStore s = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                        .build(), time)) {
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
                        synchronized (gate) {
                            while (phase[0] == PAUSE) {
                                try {
                                    gate.wait();
                                } catch (InterruptedException e) {
                                    return;
                                }
                            }
                            p = phase[0];
                        }
                        if (p == STOP) {
                            return;
                        }
                        long t0 = System.nanoTime();
                        try {
                            s.append(r);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
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
            for (int round = 0; round < rounds; round++) {
                recorder.reset();
                appends.reset();
                StoreStats before = s.stats();
                long t0 = System.nanoTime();
                setPhase(gate, phase, MEASURE);
                Thread.sleep(seconds * 1000L);
                setPhase(gate, phase, PAUSE);
                double secs = (System.nanoTime() - t0) / 1e9;
                Thread.sleep(50); // let in-flight appends finish before the baseline takes the disk
                StoreStats after = s.stats();
                Histogram h = recorder.getIntervalHistogram();
                long batches = after.batches() - before.batches();
                long bytes = after.bytes() - before.bytes();
                store.latency.add(h);
                store.bytes += bytes;
                store.payloadBytes += appends.sum() * (long) payload;
                store.ops += appends.sum();
                store.batches += batches;
                store.frames += after.frames() - before.frames();
                store.seconds += secs;
                int batchBytes = (int) Math.max(1, Math.round(bytes / (double) Math.max(1, batches)));
                double[] b = baseline(dir, batchBytes, seconds, base);
                double ratio = (bytes / secs) / (b[0] / b[1]);
                store.minRatio = Math.min(store.minRatio, ratio);
                store.maxRatio = Math.max(store.maxRatio, ratio);
            }
            setPhase(gate, phase, STOP);
            for (Thread th : threads) {
                th.join();
            }
        }
        double storeRate = store.bytes / store.seconds;
        double baseRate = base.bytes / base.seconds;
        double p99 = store.latency.getValueAtPercentile(99);
        double bp99 = base.latency.getValueAtPercentile(99);
        return String.format(Locale.ROOT, "| %d | %d B | %s | %s | %s (%s-%s) | %.1f | %s | %s | %s | %s | %.2f |",
                writers, payload, BenchSupport.mb(storeRate), BenchSupport.mb(baseRate),
                BenchSupport.pct(storeRate / baseRate), BenchSupport.pct(store.minRatio), BenchSupport.pct(store.maxRatio),
                store.frames / (double) store.batches, BenchSupport.ms(store.latency.getValueAtPercentile(50)),
                BenchSupport.ms(p99), BenchSupport.ms(base.latency.getValueAtPercentile(50)), BenchSupport.ms(bp99),
                p99 / bp99);
    }

    private static void setPhase(Object gate, int[] phase, int p) {
        synchronized (gate) {
            phase[0] = p;
            gate.notifyAll();
        }
    }

    /** One thread: write {@code batchBytes} with FileChannel.write, then force; returns {bytes, seconds}. */
    private static double[] baseline(Path dir, int batchBytes, int seconds, Side side) throws Exception {
        Path file = dir.resolve("baseline-" + System.nanoTime() + ".data");
        byte[] data = new byte[batchBytes];
        ThreadLocalRandom.current().nextBytes(data);
        ByteBuffer b = ByteBuffer.wrap(data);
        long bytes = 0;
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
                ch.force(false);
                now = System.nanoTime();
                side.latency.recordValue((now - s) / 1_000);
                bytes += data.length;
            }
            double secs = (now - t0) / 1e9;
            side.bytes += bytes;
            side.seconds += secs;
            return new double[] {bytes, secs};
        }
    }
}
