package org.leasehold.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.HdrHistogram.Histogram;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.time.ManualTimeSource;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Ordered read of sealed buckets (8 writers' data files per bucket, merged by timestamp, every frame's checksum
 * verified, every message materialised) beside reading the same files raw (sequential {@code FileChannel.read} into a
 * 64 KiB buffer), both from the page cache. One operation reads the whole log (32 MiB of frames in 16 sealed buckets).
 * Files go to {@code benchmarks/target/bench-data} (or {@code -jvmArgsAppend -Dleasehold.bench.dir=D}).
 *
 * <p>Two ways to run it. Under JMH, three forks, each with its own freshly written log, so that the spread between
 * runs shows; JMH runs the two sides one after the other. On a shared machine whose load changes from second to second
 * that ordering moves the ratio, so {@link #main} also runs a paired harness: one log, the two sides alternating
 * operation by operation (the order flipping every pair), each operation timed, and the ratio taken per pair.
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar ReadBench
 * java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.ReadBench [--payloads 256,4096] [--warmup 30]
 *     [--pairs 100] [--dir D]</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 3, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ReadBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final int WRITERS = 8;
    private static final long TOTAL = 32L << 20;

    @Param({"256", "4096"})
    public int payload;

    private Fixture fixture;
    /** Where the paired harness lets every message escape, so that none is optimised away. */
    static Object escaped;

    /** A sealed log of 32 MiB written by 8 writers, its reader, and its data files. */
    static final class Fixture implements AutoCloseable {
        final FileBagStore reader;
        final List<Path> files = new ArrayList<>();
        final long bytes;
        private final ByteBuffer rawBuffer = ByteBuffer.allocateDirect(64 << 10);

        Fixture(Path dir, int payload) throws Exception {
            Path root = dir.resolve("read-" + payload + "-" + System.nanoTime());
            Files.createDirectories(root);
            ManualTimeSource time = new ManualTimeSource(T0);
            BagStoreConfig.Builder cfg = BagStoreConfig.builder(root).localLockDir(root.resolve("locks"))
                    .metronome(false);
            List<FileBagStore> writers = new ArrayList<>();
            for (int i = 0; i < WRITERS; i++) {
                writers.add(FileBagStore.open(cfg.flushPolicy(FlushPolicy.never()).build(), time));
            }
            LeaseStamp lease = new LeaseStamp("bench/read", 1, Instant.EPOCH, T0.plusSeconds(3600), Instant.EPOCH, null,
                    null);
            long frames = TOTAL / (payload + 60);
            long rounds = frames / WRITERS;
            long stepMicros = 16_000_000L / rounds;
            byte[] p = new byte[payload];
            ThreadLocalRandom.current().nextBytes(p);
            List<CompletableFuture<Appended>> pending = new ArrayList<>();
            for (long r = 0; r < rounds; r++) {
                for (FileBagStore w : writers) {
                    pending.add(w.appendAsync(AppendRequest.of("bench", List.of(lease), p)));
                }
                if (r % 16 == 15) {
                    // Let the committers catch up before the clock moves a quarter of a second on.
                    for (CompletableFuture<Appended> f : pending) {
                        f.get();
                    }
                    pending.clear();
                }
                time.advance(Duration.ofNanos(stepMicros * 1000));
            }
            for (CompletableFuture<Appended> f : pending) {
                f.get();
            }
            time.advance(Duration.ofSeconds(5));
            for (FileBagStore w : writers) {
                w.close();
            }
            reader = FileBagStore.open(cfg.build(), time);
            reader.sealThrough("bench", T0, time.now().minusSeconds(3));
            try (Stream<Path> s = Files.walk(root.resolve("bench"))) {
                s.filter(f -> f.getFileName().toString().endsWith(".data")).sorted().forEach(files::add);
            }
            long total = 0;
            for (Path f : files) {
                total += Files.size(f);
                // Written without flushing: force now, so that write-back does not run during the measurement.
                try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                    ch.force(true);
                }
            }
            bytes = total;
            System.out.printf("%nread setup: %d data files, %d bytes of frames, payload %d B, %s%n", files.size(), bytes,
                    payload, BenchSupport.load());
        }

        /** The bag store's ordered read of every sealed bucket; the payload bytes seen. */
        long ordered(Blackhole bh) throws BagStoreException {
            long n = 0;
            try (MessageStream s = reader.read(ReadRequest.all("bench").sealedOnly())) {
                Message m;
                while ((m = s.next()) != null) {
                    n += m.payloadLength();
                    if (bh != null) {
                        bh.consume(m);
                    } else {
                        escaped = m; // as JMH's Blackhole does: the message must really be made
                    }
                }
            }
            return n;
        }

        /** The same files read raw, file after file, into one direct buffer (one copy, the fastest); bytes read. */
        long raw(Blackhole bh) throws IOException {
            ByteBuffer buf = rawBuffer;
            long n = 0;
            for (Path f : files) {
                try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                    buf.clear();
                    int r;
                    while ((r = ch.read(buf)) >= 0) {
                        n += r + buf.get(0);
                        if (bh != null) {
                            bh.consume(buf.get(0));
                        }
                        buf.clear();
                    }
                }
            }
            return n;
        }

        @Override
        public void close() {
            reader.close();
        }
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        fixture = new Fixture(BenchSupport.dir(BenchSupport.defaultDir()), payload);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        System.out.printf("%nread trial end: %s%n", BenchSupport.load());
        fixture.close();
    }

    /** The bag store's ordered read of every sealed bucket. */
    @Benchmark
    public long ordered(Blackhole bh) throws Exception {
        return fixture.ordered(bh);
    }

    /** The same files read raw, sequentially, file after file, into one direct buffer (one copy, the fastest). */
    @Benchmark
    public long raw(Blackhole bh) throws IOException {
        return fixture.raw(bh);
    }

    /** The paired harness: the two sides alternate operation by operation on one log; see the class comment. */
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = BenchSupport.args(argv, Map.of("dir", BenchSupport.defaultDir(), "payloads", "256,4096",
                "warmup", "30", "pairs", "100"));
        int warmup = BenchSupport.positive("--warmup", a.get("warmup"));
        int pairs = BenchSupport.positive("--pairs", a.get("pairs"));
        Path dir = BenchSupport.dir(a.get("dir"));
        List<String> rows = new ArrayList<>();
        long sink = 0;
        for (int payload : BenchSupport.ints(a.get("payloads"))) {
            try (Fixture f = new Fixture(dir, payload)) {
                Histogram ordered = new Histogram(3);
                Histogram raw = new Histogram(3);
                double[] ratios = new double[pairs];
                for (int i = 0; i < warmup + pairs; i++) {
                    long o;
                    long r;
                    if (i % 2 == 0) {
                        long t0 = System.nanoTime();
                        sink += f.ordered(null);
                        long t1 = System.nanoTime();
                        sink += f.raw(null);
                        long t2 = System.nanoTime();
                        o = t1 - t0;
                        r = t2 - t1;
                    } else {
                        long t0 = System.nanoTime();
                        sink += f.raw(null);
                        long t1 = System.nanoTime();
                        sink += f.ordered(null);
                        long t2 = System.nanoTime();
                        r = t1 - t0;
                        o = t2 - t1;
                    }
                    if (i >= warmup) {
                        ordered.recordValue(o / 1_000);
                        raw.recordValue(r / 1_000);
                        ratios[i - warmup] = r / (double) o;
                    }
                }
                Arrays.sort(ratios);
                double om = ordered.getValueAtPercentile(50);
                double rm = raw.getValueAtPercentile(50);
                String row = String.format(Locale.ROOT, "| %d B | %d | %s | %s | %s | %s | %s | %s (%s-%s) |", payload,
                        f.files.size(), BenchSupport.ms(om), BenchSupport.mb(f.bytes / (om / 1e6)), BenchSupport.ms(rm),
                        BenchSupport.mb(f.bytes / (rm / 1e6)), BenchSupport.pct(rm / om),
                        BenchSupport.pct(ratios[pairs / 2]), BenchSupport.pct(ratios[pairs / 10]),
                        BenchSupport.pct(ratios[pairs - 1 - pairs / 10]));
                System.out.println(row + "   (" + BenchSupport.load() + ")");
                rows.add(row);
            }
        }
        System.out.println();
        System.out.println("| payload | data files | ordered p50 | ordered | raw p50 | raw | raw p50 / ordered p50 "
                + "| paired ratio median (p10-p90) |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
        System.out.println(BenchSupport.load() + (sink == 42 ? "" : " "));
    }
}
