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
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
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
 *
 * <pre>java -jar benchmarks/target/benchmarks.jar ReadBench</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ReadBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final int WRITERS = 8;
    private static final long TOTAL = 32L << 20;

    @Param({"256", "4096"})
    public int payload;

    private Path root;
    private FileBagStore reader;
    private final List<Path> files = new ArrayList<>();
    private long bytes;
    private final ByteBuffer rawBuffer = ByteBuffer.allocateDirect(64 << 10);

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        root = BenchSupport.dir("target/bench-data").resolve("read-" + payload + "-" + System.nanoTime());
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
        for (Path f : files) {
            bytes += Files.size(f);
        }
        System.out.printf("%nread setup: %d data files, %d bytes of frames, payload %d B%n", files.size(), bytes, payload);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        reader.close();
    }

    /** The bag store's ordered read of every sealed bucket. */
    @Benchmark
    public long ordered(Blackhole bh) throws Exception {
        long n = 0;
        try (MessageStream s = reader.read(ReadRequest.all("bench").sealedOnly())) {
            Message m;
            while ((m = s.next()) != null) {
                n += m.payloadLength();
                bh.consume(m);
            }
        }
        return n;
    }

    /** The same files read raw, sequentially, file after file, into one direct buffer (one copy, the fastest). */
    @Benchmark
    public long raw(Blackhole bh) throws IOException {
        ByteBuffer buf = rawBuffer;
        long n = 0;
        for (Path f : files) {
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
                buf.clear();
                int r;
                while ((r = ch.read(buf)) >= 0) {
                    n += r;
                    bh.consume(buf.get(0));
                    buf.clear();
                }
            }
        }
        return n;
    }
}
