package org.leasehold.bench;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

import org.HdrHistogram.Histogram;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.audit.Witness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.store.StoreStats;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

/**
 * Append throughput and commit latency of the bag store with N concurrent writers (threads appending to one log, flush
 * every batch), beside a baseline measured in the same run: one thread writing the same number of bytes per batch
 * with {@code FileChannel.write} + {@code force}, the cost of the disk's own append and flush. The two alternate in
 * rounds (store, then baseline with the batch size the store just had), so that drifts of the disk's flush latency
 * hit both alike; figures are over all rounds. Each round starts and ends with every writer idle, so the bytes and
 * the time of a round belong to the same appends. Between two appends a writer takes no lock and touches no counter
 * of the harness's (it reads the phase from a volatile field and records its latency into a histogram of its own), so
 * that the store side is not charged for 64 threads queueing on the harness, which the baseline's one thread is not.
 *
 * <p>{@code --witnesses} chooses the leases' witnesses: {@code none} (an empty witness, as under a lease service that
 * signs nothing), {@code signed} (a frame witness as the resource adapter writes it: the grant's witness signed by a
 * real {@link AuditSigner} in a Merkle batch with the other writers' grants, with its proof and a signed time of the
 * service attached, a fresh one asked for by the writer that finds the last older than
 * {@value #SIGNED_TIME_REUSE_MILLIS} ms, before its append, as the adapter does on its commit path), or
 * {@code both}: each round then runs the store without witnesses and with them (the order flipping every round), then
 * the baseline with the batch size of the round without, and a last table sets their commit latencies side by side.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.AppendBench [--dir D] [--writers 1,8,64]
 *     [--payloads 256,4096] [--warmup 2] [--seconds 2] [--rounds 6] [--bucket-ms 1000] [--witnesses none]
 *     [--keep false]</pre>
 * The run's files (a store and a baseline file per round, gigabytes in all) are deleted when it ends, unless
 * {@code --keep true}.
 */
public final class AppendBench {
    private static final int WARMUP = 0;
    private static final int MEASURE = 1;
    private static final int PAUSE = 2;
    private static final int STOP = 3;
    /** How long one signed time is attached to the witnessed appends, as the adapter reuses one (SignedTimes). */
    private static final long SIGNED_TIME_REUSE_MILLIS = 200;
    private static final String SERVICE = "bench-service";

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

    /** Which witnesses the appends carry: none, signed frame witnesses, or both in turn. */
    private enum Witnesses {
        NONE, SIGNED, BOTH;

        static Witnesses parse(String s) {
            return switch (s) {
                case "none" -> NONE;
                case "signed" -> SIGNED;
                case "both" -> BOTH;
                default -> throw new IllegalArgumentException("--witnesses is none, signed or both, not '" + s + "'");
            };
        }
    }

    /** What the writer threads do, and how many of them wait for the next phase. */
    private static final class Gate {
        /** Read without the lock on every append (the writers must not queue on a monitor of the harness's). */
        volatile int phase = WARMUP;
        int parked;
        /** Whether the appends of the phase carry signed witnesses. */
        volatile boolean witnessed;

        synchronized void set(int p) {
            phase = p;
            notifyAll();
        }

        /** The phase to append in, waiting while paused; STOP to end. */
        int next() throws InterruptedException {
            int p = phase;
            return p == PAUSE ? parkWhilePaused() : p;
        }

        private synchronized int parkWhilePaused() throws InterruptedException {
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
                "payloads", "256,4096", "warmup", "2", "seconds", "2", "rounds", "6", "bucket-ms", "1000", "witnesses", "none",
                "keep", "false"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("append-" + System.nanoTime());
        Files.createDirectories(dir);
        int warmup = BenchSupport.positive("--warmup", a.get("warmup"));
        int seconds = BenchSupport.positive("--seconds", a.get("seconds"));
        int rounds = BenchSupport.positive("--rounds", a.get("rounds"));
        Duration bucket = Duration.ofMillis(BenchSupport.positive("--bucket-ms", a.get("bucket-ms")));
        Witnesses witnesses = Witnesses.parse(a.get("witnesses"));
        boolean keep = Boolean.parseBoolean(a.get("keep"));
        System.out.println("append: files under " + dir + (keep ? " (kept)" : " (deleted at the end; --keep true keeps "
                + "them)") + ", bucket " + bucket + ", witnesses " + a.get("witnesses") + ", " + BenchSupport.load());
        List<String> rows = new ArrayList<>();
        List<String> compared = new ArrayList<>();
        try {
            for (int payload : BenchSupport.ints(a.get("payloads"))) {
                for (int writers : BenchSupport.ints(a.get("writers"))) {
                    List<String> out = run(dir, writers, payload, warmup, seconds, rounds, bucket, witnesses);
                    for (int i = 0; i < out.size(); i++) {
                        (i < out.size() - (witnesses == Witnesses.BOTH ? 1 : 0) ? rows : compared).add(out.get(i));
                        System.out.println(out.get(i) + "   (" + BenchSupport.load() + ")");
                    }
                }
            }
        } finally {
            // A run writes gigabytes (every round's store and baseline file): gone with it unless asked to keep.
            if (!keep) {
                BenchSupport.deleteTree(dir);
            }
        }
        System.out.println();
        System.out.println("| writers | payload | witnesses | store | baseline (same batches) | store / baseline (all rounds) "
                + "| per round: median (min-max) "
                + "| frames per batch | bytes per batch | commit p50 | commit p99 | baseline write+force p50 | p99 "
                + "| baseline force p50 | p99 | commit p99 / baseline force p99 | store CPU (cores) | baseline CPU (cores) "
                + "| store CPU µs per batch | baseline CPU µs per batch |");
        System.out.println("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        rows.forEach(System.out::println);
        if (!compared.isEmpty()) {
            System.out.println();
            System.out.println("| writers | payload | frame bytes, none | signed | commit p50, none | signed | signed / none "
                    + "| commit p99, none | signed | signed / none | bytes/s signed / none | frames/s signed / none "
                    + "| per round: p50 signed / none, median (min-max) |");
            System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            compared.forEach(System.out::println);
        }
        System.out.println(BenchSupport.load());
    }

    private static List<String> run(Path dir, int writers, int payload, int warmup, int seconds, int rounds,
                                    Duration bucket, Witnesses witnesses) throws Exception {
        Path root = dir.resolve("store-" + writers + "-" + payload);
        Files.createDirectories(root);
        WriterLatencies recorder = new WriterLatencies(writers);
        AtomicReference<Exception> failure = new AtomicReference<>();
        Gate gate = new Gate();
        Side store = new Side();
        Side signed = new Side();
        Side base = new Side();
        try (SystemTimeSource time = new SystemTimeSource("bench-timer");
                FileBagStore s = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                        .bucketWidth(bucket).flushPolicy(FlushPolicy.everyBatch()).build(), time);
                AuditSigner signer = witnesses == Witnesses.NONE ? null : new AuditSigner(
                        SigningKey.generate(new SecureRandom()), SERVICE, 1_000, ServiceKeys.DEFAULT_LINGER_MICROS,
                        ServiceKeys.DEFAULT_MAX_BATCH)) {
            WitnessedStamps stamps = signer == null ? null : new WitnessedStamps(signer, time, writers);
            Instant far = time.now().plusSeconds(3600);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < writers; t++) {
                LeaseStamp lease = new LeaseStamp("bench/" + t, 1, Instant.EPOCH, far, Instant.EPOCH, null, null);
                byte[] bytes = new byte[payload];
                ThreadLocalRandom.current().nextBytes(bytes);
                int writer = t;
                Thread th = new Thread(() -> {
                    AppendRequest plain = AppendRequest.of("bench", List.of(lease), bytes);
                    long n = 0;
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
                        boolean witnessed = stamps != null && (p == WARMUP && witnesses == Witnesses.BOTH
                                ? (n++ & 1) == 0 : gate.witnessed);
                        AppendRequest r = witnessed ? AppendRequest.of("bench", List.of(stamps.stamp(writer)), bytes)
                                : plain;
                        long t0 = System.nanoTime();
                        try {
                            s.append(r);
                        } catch (Exception e) {
                            failure.compareAndSet(null, e);
                            continue;
                        }
                        if (p == MEASURE) {
                            recorder.record(writer, (System.nanoTime() - t0) / 1_000);
                        }
                    }
                }, "append-" + t);
                th.setDaemon(true);
                threads.add(th);
                th.start();
            }
            Thread.sleep(warmup * 1000L);
            gate.pauseAndDrain(writers);
            List<Double> p50Ratios = new ArrayList<>();
            for (int round = 0; round < rounds; round++) {
                long[] plain;
                long[] with = null;
                if (witnesses == Witnesses.BOTH) {
                    boolean signedFirst = round % 2 == 1;
                    long[] first = storeRound(s, gate, recorder, writers, seconds, signedFirst,
                            signedFirst ? signed : store);
                    long[] second = storeRound(s, gate, recorder, writers, seconds, !signedFirst,
                            signedFirst ? store : signed);
                    plain = signedFirst ? second : first;
                    with = signedFirst ? first : second;
                    p50Ratios.add(with[2] / (double) plain[2]);
                } else {
                    plain = storeRound(s, gate, recorder, writers, seconds, witnesses == Witnesses.SIGNED,
                            store);
                }
                int batchBytes = (int) Math.max(1, Math.round(plain[0] / (double) Math.max(1, plain[1])));
                double[] b = baseline(dir, batchBytes, seconds, base);
                store.ratios.add((plain[0] / (plain[3] / 1e9)) / (b[0] / b[1]));
                if (with != null) {
                    signed.ratios.add((with[0] / (with[3] / 1e9)) / (b[0] / b[1]));
                }
            }
            gate.set(STOP);
            for (Thread th : threads) {
                th.join();
            }
            if (failure.get() != null) {
                throw new IllegalStateException("an append failed, so the figures would not be comparable: "
                        + failure.get(), failure.get());
            }
            List<String> out = new ArrayList<>();
            out.add(row(writers, payload, witnesses == Witnesses.SIGNED ? "signed" : "none", store, base));
            if (witnesses == Witnesses.BOTH) {
                out.add(row(writers, payload, "signed", signed, base));
                out.add(compare(writers, payload, store, signed, p50Ratios));
            }
            return out;
        }
    }
    /**
     * One round of the store: the writers append (with signed witnesses or without) for {@code seconds}, then stop
     * idle; adds the round to {@code side} and returns {bytes, batches, commit p50 in µs, nanoseconds}.
     */
    private static long[] storeRound(FileBagStore s, Gate gate, WriterLatencies recorder, int writers,
                                     int seconds, boolean witnessed, Side side) throws InterruptedException {
        recorder.reset();
        StoreStats before = s.stats();
        long cpu0 = BenchSupport.processCpuNanos();
        gate.witnessed = witnessed;
        long t0 = System.nanoTime();
        gate.set(MEASURE);
        Thread.sleep(seconds * 1000L);
        gate.pauseAndDrain(writers);
        long nanos = System.nanoTime() - t0;
        side.cpuNanos += BenchSupport.processCpuNanos() - cpu0;
        StoreStats after = s.stats();
        Histogram h = recorder.merged();
        long appends = h.getTotalCount();
        long batches = after.batches() - before.batches();
        long bytes = after.bytes() - before.bytes();
        long frames = after.frames() - before.frames();
        if (frames != appends) {
            throw new IllegalStateException("the store wrote " + frames + " frames for " + appends
                    + " measured appends: the round did not start and end idle");
        }
        side.latency.add(h);
        side.bytes += bytes;
        side.ops += appends;
        side.batches += batches;
        side.frames += frames;
        side.forces += after.forces() - before.forces();
        side.seconds += nanos / 1e9;
        return new long[] {bytes, batches, h.getValueAtPercentile(50), nanos};
    }

    /** The main table's row of one side. */
    private static String row(int writers, int payload, String witnesses, Side store, Side base) {
        List<Double> ratios = new ArrayList<>(store.ratios);
        ratios.sort(null);
        double storeRate = store.bytes / store.seconds;
        double baseRate = base.bytes / base.seconds;
        double p99 = store.latency.getValueAtPercentile(99);
        double fp99 = base.force.getValueAtPercentile(99);
        return String.format(Locale.ROOT,
                "| %d | %d B | %s | %s | %s | %s | %s (%s-%s) | %.1f | %.0f | %s | %s | %s | %s | %s | %s | %.2f | %.2f "
                        + "| %.2f | %.0f | %.0f |",
                writers, payload, witnesses, BenchSupport.mb(storeRate), BenchSupport.mb(baseRate),
                BenchSupport.pct(storeRate / baseRate), BenchSupport.pct(median(ratios)),
                BenchSupport.pct(ratios.get(0)), BenchSupport.pct(ratios.get(ratios.size() - 1)),
                store.frames / (double) store.batches, store.bytes / (double) store.batches,
                BenchSupport.ms(store.latency.getValueAtPercentile(50)), BenchSupport.ms(p99),
                BenchSupport.ms(base.latency.getValueAtPercentile(50)), BenchSupport.ms(base.latency.getValueAtPercentile(99)),
                BenchSupport.ms(base.force.getValueAtPercentile(50)), BenchSupport.ms(fp99), p99 / fp99,
                store.cpuNanos / 1e9 / store.seconds, base.cpuNanos / 1e9 / base.seconds,
                store.cpuNanos / 1e3 / store.batches, base.cpuNanos / 1e3 / base.batches);
    }

    /** The appends with signed witnesses beside those without, from the same rounds. */
    private static String compare(int writers, int payload, Side none, Side signed, List<Double> p50Ratios) {
        List<Double> sorted = new ArrayList<>(p50Ratios);
        sorted.sort(null);
        double p50None = none.latency.getValueAtPercentile(50);
        double p50Signed = signed.latency.getValueAtPercentile(50);
        double p99None = none.latency.getValueAtPercentile(99);
        double p99Signed = signed.latency.getValueAtPercentile(99);
        return String.format(Locale.ROOT, "| %d | %d B | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %s (%s-%s) |",
                writers, payload, none.bytes / (double) none.frames, signed.bytes / (double) signed.frames,
                BenchSupport.ms(p50None), BenchSupport.ms(p50Signed), BenchSupport.pct(p50Signed / p50None),
                BenchSupport.ms(p99None), BenchSupport.ms(p99Signed), BenchSupport.pct(p99Signed / p99None),
                BenchSupport.pct((signed.bytes / signed.seconds) / (none.bytes / none.seconds)),
                BenchSupport.pct((signed.frames / signed.seconds) / (none.frames / none.seconds)),
                BenchSupport.pct(median(sorted)), BenchSupport.pct(sorted.get(0)),
                BenchSupport.pct(sorted.get(sorted.size() - 1)));
    }

    /**
     * Each writer's lease stamp with a frame witness as the resource adapter writes it: the grant's witness, signed in
     * one Merkle batch with the other writers' grants, with its proof and a signed time of the service attached. The
     * writer that finds the signed time older than {@value #SIGNED_TIME_REUSE_MILLIS} ms asks for a fresh one before
     * its append (outside the measured commit), as the adapter's SignedTimes does on the commit path, so that the
     * store's signed-time bound holds for the whole run.
     */
    private static final class WitnessedStamps {
        private final AuditSigner signer;
        private final SystemTimeSource time;
        private final FrameWitness[] grants;
        private final LeaseStamp[] bare;
        private final AtomicReference<LeaseStamp[]> current = new AtomicReference<>();
        private volatile long fetchedAt;

        WitnessedStamps(AuditSigner signer, SystemTimeSource time, int writers) {
            this.signer = signer;
            this.time = time;
            long now = time.nowMicros();
            long deadline = now + 3_600_000_000L;
            List<java.util.concurrent.CompletableFuture<FrameWitness>> signing = new ArrayList<>();
            for (int t = 0; t < writers; t++) {
                Witness w = new Witness(WitnessEvent.GRANT, signer.serviceId(), signer.keyId(), "bench/" + t, 1,
                        LeaseMode.EXCLUSIVE, LeaseKind.FULL, now - 1_000_000, now, deadline, now, now, signer.radius(),
                        new CorrelationId(ThreadLocalRandom.current().nextLong(), ThreadLocalRandom.current().nextLong()),
                        CorrelationId.NONE, Ending.UNKNOWN, Long.MIN_VALUE, Long.MIN_VALUE, Long.MIN_VALUE,
                        new HolderId("bench-node", "append-" + t), null);
                signing.add(signer.sign(w));
            }
            grants = new FrameWitness[writers];
            bare = new LeaseStamp[writers];
            for (int t = 0; t < writers; t++) {
                grants[t] = signing.get(t).join();
                Witness w = grants[t].witness();
                bare[t] = new LeaseStamp(w.name(), w.generation(), Micros.toInstant(w.floor()),
                        Micros.toInstant(w.deadline()), Micros.toInstant(w.writableFrom()), null, null);
            }
            attachTime();
        }

        private synchronized void attachTime() {
            long now = time.nowMicros();
            if (current.get() != null && now - fetchedAt < SIGNED_TIME_REUSE_MILLIS * 1_000) {
                return;
            }
            byte[] nonce = new byte[16];
            ThreadLocalRandom.current().nextBytes(nonce);
            SignedTimeProof t = signer.signTime(nonce, now).join();
            LeaseStamp[] next = new LeaseStamp[grants.length];
            for (int i = 0; i < next.length; i++) {
                LeaseStamp b = bare[i];
                next[i] = new LeaseStamp(b.name(), b.generation(), b.floor(), b.deadline(), b.writableFrom(), null,
                        grants[i].withTime(t.time(), t.proof()).encode());
            }
            current.set(next);
            fetchedAt = now;
        }

        /** Writer {@code writer}'s stamp with the latest signed time. */
        LeaseStamp stamp(int writer) {
            if (time.nowMicros() - fetchedAt >= SIGNED_TIME_REUSE_MILLIS * 1_000) {
                attachTime();
            }
            return current.get()[writer];
        }

    }

    /**
     * Each writer's commit latencies in a histogram of its own, so that recording takes no lock and shares no counter
     * with the other writers (the baseline's one thread records into a plain histogram too). Read and reset only while
     * every writer is parked at the gate, whose monitor orders those accesses after the writers' last records.
     */
    private static final class WriterLatencies {
        private final Histogram[] perWriter;

        WriterLatencies(int writers) {
            perWriter = new Histogram[writers];
            for (int i = 0; i < writers; i++) {
                perWriter[i] = new Histogram(3);
            }
        }

        void record(int writer, long micros) {
            perWriter[writer].recordValue(micros);
        }

        void reset() {
            for (Histogram h : perWriter) {
                h.reset();
            }
        }

        Histogram merged() {
            Histogram all = new Histogram(3);
            for (Histogram h : perWriter) {
                all.add(h);
            }
            return all;
        }
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
