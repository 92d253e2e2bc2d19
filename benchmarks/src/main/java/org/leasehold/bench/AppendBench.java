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
import java.util.concurrent.atomic.AtomicInteger;
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
 * Append throughput and commit latency of the bag store with N concurrent writers (threads appending to one log,
 * flush every batch), beside a baseline measured in the same run: one thread writing the same number of bytes per
 * batch with {@code FileChannel.write} + {@code force}, the cost of the disk's own append and flush.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.AppendBench [--dir D] [--writers 1,8,64]
 *     [--payloads 256,4096] [--warmup 2] [--seconds 5]</pre>
 */
public final class AppendBench {
    private AppendBench() {
    }

    /** One measured run. */
    record Run(double frameBytesPerSec, double payloadBytesPerSec, double appendsPerSec, double batchBytes,
            double framesPerBatch, double p50, double p99, double max) {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = BenchSupport.args(argv, Map.of("dir", "target/bench-data", "writers", "1,8,64",
                "payloads", "256,4096", "warmup", "2", "seconds", "5"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("append-" + System.nanoTime());
        Files.createDirectories(dir);
        int warmup = Integer.parseInt(a.get("warmup"));
        int seconds = Integer.parseInt(a.get("seconds"));
        List<String> rows = new ArrayList<>();
        for (int payload : BenchSupport.ints(a.get("payloads"))) {
            for (int writers : BenchSupport.ints(a.get("writers"))) {
                Run s = store(dir, writers, payload, warmup, seconds);
                Run b = baseline(dir, (int) Math.round(s.batchBytes), warmup, seconds);
                String row = String.format(Locale.ROOT, "| %d | %d B | %s | %s (%.0f frames, %.0f B) | %s | %s | %s | %s "
                        + "| %s | %s |", writers, payload, BenchSupport.mb(s.frameBytesPerSec),
                        BenchSupport.mb(b.frameBytesPerSec), s.framesPerBatch, s.batchBytes,
                        BenchSupport.pct(s.frameBytesPerSec / b.frameBytesPerSec), BenchSupport.ms(s.p50),
                        BenchSupport.ms(s.p99), BenchSupport.ms(b.p50), BenchSupport.ms(b.p99),
                        String.format(Locale.ROOT, "%.2f", s.p99 / b.p99));
                System.out.println(row);
                System.out.printf(Locale.ROOT, "    store: %.0f appends/s, payload %s; commit max %s%n", s.appendsPerSec,
                        BenchSupport.mb(s.payloadBytesPerSec), BenchSupport.ms(s.max));
                rows.add(row);
            }
        }
        System.out.println();
        System.out.println("| writers | payload | store (frame bytes) | baseline, same batch | store / baseline "
                + "| commit p50 | commit p99 | baseline write+force p50 | p99 | commit p99 / baseline p99 |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
    }

    private static Run store(Path dir, int writers, int payload, int warmup, int seconds) throws Exception {
        Path root = dir.resolve("store-" + writers + "-" + payload);
        Files.createDirectories(root);
        Recorder recorder = new Recorder(3);
        LongAdder appends = new LongAdder();
        AtomicInteger phase = new AtomicInteger(); // 0 warm-up, 1 measure, 2 stop
        try (SystemTimeSource time = new SystemTimeSource("bench-timer");
                FileBagStore store = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                        .build(), time)) {
            Instant far = time.now().plusSeconds(3600);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < writers; t++) {
                LeaseStamp lease = new LeaseStamp("bench/" + t, 1, Instant.EPOCH, far, Instant.EPOCH, null, null);
                byte[] bytes = new byte[payload];
                ThreadLocalRandom.current().nextBytes(bytes);
                Thread th = new Thread(() -> {
                    AppendRequest r = AppendRequest.of("bench", List.of(lease), bytes);
                    while (phase.get() < 2) {
                        long t0 = System.nanoTime();
                        try {
                            store.append(r);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                        long us = (System.nanoTime() - t0) / 1_000;
                        if (phase.get() == 1) {
                            recorder.recordValue(us);
                            appends.increment();
                        }
                    }
                }, "append-" + t);
                th.setDaemon(true);
                threads.add(th);
                th.start();
            }
            Thread.sleep(warmup * 1000L);
            recorder.reset();
            StoreStats before = store.stats();
            long t0 = System.nanoTime();
            phase.set(1);
            Thread.sleep(seconds * 1000L);
            phase.set(2);
            long elapsed = System.nanoTime() - t0;
            StoreStats after = store.stats();
            for (Thread th : threads) {
                th.join();
            }
            Histogram h = recorder.getIntervalHistogram();
            double secs = elapsed / 1e9;
            long batches = after.batches() - before.batches();
            long frames = after.frames() - before.frames();
            long bytes = after.bytes() - before.bytes();
            return new Run(bytes / secs, appends.sum() * (double) payload / secs, appends.sum() / secs,
                    bytes / (double) batches, frames / (double) batches, h.getValueAtPercentile(50),
                    h.getValueAtPercentile(99), h.getMaxValue());
        }
    }

    /** One thread: write {@code batchBytes} with FileChannel.write, then force, again and again. */
    private static Run baseline(Path dir, int batchBytes, int warmup, int seconds) throws Exception {
        Path file = dir.resolve("baseline-" + System.nanoTime() + ".data");
        Histogram h = new Histogram(3);
        byte[] data = new byte[Math.max(1, batchBytes)];
        ThreadLocalRandom.current().nextBytes(data);
        ByteBuffer b = ByteBuffer.wrap(data);
        long bytes = 0;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long warmEnd = System.nanoTime() + warmup * 1_000_000_000L;
            while (System.nanoTime() < warmEnd) {
                b.clear();
                while (b.hasRemaining()) {
                    ch.write(b);
                }
                ch.force(false);
            }
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
                h.recordValue((now - s) / 1_000);
                bytes += data.length;
            }
            double secs = (now - t0) / 1e9;
            return new Run(bytes / secs, bytes / secs, h.getTotalCount() / secs, data.length, 1,
                    h.getValueAtPercentile(50), h.getValueAtPercentile(99), h.getMaxValue());
        }
    }
}
