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

import org.HdrHistogram.Histogram;
import org.leasehold.bag.SealReport;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.StoreStats;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Sealing: time and file-system operations per bucket, for buckets holding 1, 8 and 64 data files, for the sealer that
 * wins and for one that finds the bucket already sealed, beside a baseline measured in the same run, one baseline
 * operation after each seal: writing one small file of the lock file's size durably (create, write, force, close), the
 * part of sealing that no protocol can avoid.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.SealBench [--dir D] [--files 1,8,64]
 *     [--buckets 200]</pre>
 */
public final class SealBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

    private SealBench() {
    }

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = BenchSupport.args(argv, Map.of("dir", BenchSupport.defaultDir(), "files", "1,8,64",
                "buckets", "200"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("seal-" + System.nanoTime());
        Files.createDirectories(dir);
        int buckets = BenchSupport.positive("--buckets", a.get("buckets"));
        System.out.println("seal: files under " + dir + ", " + BenchSupport.load());
        List<String> rows = new ArrayList<>();
        for (int files : BenchSupport.ints(a.get("files"))) {
            Path root = dir.resolve("files-" + files);
            Files.createDirectories(root);
            ManualTimeSource time = new ManualTimeSource(T0.plusSeconds(buckets + 10));
            BagStoreConfig cfg = BagStoreConfig.builder(root).localLockDir(dir.resolve("locks")).metronome(false)
                    .build();
            try (FileBagStore sealer = FileBagStore.open(cfg, time); FileBagStore helper = FileBagStore.open(cfg, time)) {
                // The log, then buckets with 'files' data files of 4 KiB each (sealing measures them, never reads them).
                sealer.sealThrough("seal", T0.minusSeconds(10), T0.minusSeconds(9));
                for (int b = 0; b < buckets; b++) {
                    Path bucket = bucketDir(root.resolve("seal"), Micros.of(T0.plusSeconds(b)));
                    Files.createDirectories(bucket);
                    for (int f = 0; f < files; f++) {
                        Files.write(bucket.resolve("w" + f + "-0.0.data"), new byte[4096]);
                    }
                }
                Histogram win = new Histogram(3);
                Histogram again = new Histogram(3);
                Histogram base = new Histogram(3);
                Path baseDir = root.resolve("baseline");
                Files.createDirectories(baseDir);
                byte[] lockSized = new byte[150 + 25 * files];
                // Each seal is followed by one baseline write, so that the disk's drifts hit both alike.
                StoreStats s0 = sealer.stats();
                for (int b = 0; b < buckets; b++) {
                    Instant from = T0.plusSeconds(b);
                    long t0 = System.nanoTime();
                    SealReport r = sealer.sealThrough("seal", from, from.plusMillis(1));
                    win.recordValue((System.nanoTime() - t0) / 1_000);
                    if (r.buckets().get(0).outcome() != SealReport.Outcome.SEALED || r.buckets().get(0).files() != files) {
                        throw new IllegalStateException("unexpected " + r);
                    }
                    baselineWrite(baseDir.resolve("f" + b), lockSized, base);
                }
                StoreStats s1 = sealer.stats();
                StoreStats h0 = helper.stats();
                for (int b = 0; b < buckets; b++) {
                    Instant from = T0.plusSeconds(b);
                    long t0 = System.nanoTime();
                    SealReport r = helper.sealThrough("seal", from, from.plusMillis(1));
                    again.recordValue((System.nanoTime() - t0) / 1_000);
                    if (r.buckets().get(0).outcome() != SealReport.Outcome.ALREADY_SEALED) {
                        throw new IllegalStateException("unexpected " + r);
                    }
                }
                StoreStats h1 = helper.stats();
                String row = String.format(Locale.ROOT, "| %d | %s | %s | %.1f (%s) | %s | %.1f | %s | %s | %.2f |",
                        files, BenchSupport.ms(win.getValueAtPercentile(50)), BenchSupport.ms(win.getValueAtPercentile(99)),
                        (s1.totalFileOps() - s0.totalFileOps()) / (double) buckets, perOp(s0, s1, buckets),
                        BenchSupport.ms(again.getValueAtPercentile(50)),
                        (h1.totalFileOps() - h0.totalFileOps()) / (double) buckets,
                        BenchSupport.ms(base.getValueAtPercentile(50)), BenchSupport.ms(base.getValueAtPercentile(99)),
                        win.getValueAtPercentile(50) / (double) base.getValueAtPercentile(50));
                System.out.println(row);
                rows.add(row);
            }
        }
        System.out.println();
        System.out.println("| data files per bucket | seal p50 | seal p99 | file ops per bucket | already sealed p50 "
                + "| ops | baseline durable small write p50 | p99 | seal p50 / baseline p50 |");
        System.out.println("|---:|---:|---:|---|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
        System.out.println(BenchSupport.load());
    }

    private static String perOp(StoreStats a, StoreStats b, int buckets) {
        StringBuilder sb = new StringBuilder();
        for (NfsSafeFiles.Op op : NfsSafeFiles.Op.values()) {
            long d = b.fileOps().get(op) - a.fileOps().get(op);
            if (d > 0) {
                if (sb.length() > 0) {
                    sb.append(", ");
                }
                sb.append(op.name().toLowerCase(Locale.ROOT)).append(' ').append(String.format(Locale.ROOT, "%.0f",
                        d / (double) buckets));
            }
        }
        return sb.toString();
    }

    /** The baseline: create a file of the lock file's size, write it, force it (data and metadata), close it. */
    private static void baselineWrite(Path file, byte[] data, Histogram h) throws Exception {
        long t0 = System.nanoTime();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.wrap(data);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        h.recordValue((System.nanoTime() - t0) / 1_000);
    }

    private static Path bucketDir(Path logDir, long start) {
        java.time.LocalDateTime t = java.time.LocalDateTime.ofEpochSecond(start / 1_000_000L, 0,
                java.time.ZoneOffset.UTC);
        return logDir.resolve(String.format(Locale.ROOT, "%04d/%02d/%02d/%02d/%02d/%02d.%06d", t.getYear(),
                t.getMonthValue(), t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond(), start % 1_000_000L));
    }
}
