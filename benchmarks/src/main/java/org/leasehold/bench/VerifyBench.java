package org.leasehold.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;

import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.SigningKey;
import org.leasehold.audit.Witness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * {@code leasehold verify}'s speed on one core, beside the store's own ordered read of the same log as the baseline.
 * One writer appends {@code --messages} one-message frames (100-byte payloads) 20 µs of manual-clock time apart, each
 * under one of {@code --names} exclusive names in turn; each name's lease passes to a new holder every
 * {@code --per-grant} of its messages (released with its last timestamp as the watermark, the next grant's floor and
 * predecessor), so the log holds a real chain of grants. Every grant's witness is signed by a real {@link AuditSigner}
 * in Merkle batches. Then, alternating, a full {@link LogVerifier} run (which must find nothing) and a full ordered
 * read through {@code FileBagStore.read}, each timed in wall-clock and in the running thread's CPU time. Page cache
 * warm.
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.VerifyBench [--messages 200000] [--names 100]
 *     [--per-grant 200] [--runs 5] [--warmup 2] [--dir D]</pre>
 */
public final class VerifyBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final String LOG = "orders";
    private static final String SERVICE = "bench-service";

    private VerifyBench() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = BenchSupport.args(args, Map.of("messages", "200000", "names", "100", "per-grant",
                "200", "runs", "5", "warmup", "2", "dir", BenchSupport.defaultDir()));
        int messages = BenchSupport.positive("messages", a.get("messages"));
        int names = BenchSupport.positive("names", a.get("names"));
        int perGrant = BenchSupport.positive("per-grant", a.get("per-grant"));
        int runs = BenchSupport.positive("runs", a.get("runs"));
        int warmup = Integer.parseInt(a.get("warmup"));
        Path root = BenchSupport.dir(a.get("dir")).resolve("verify-" + System.nanoTime());
        Files.createDirectories(root);
        ManualTimeSource time = new ManualTimeSource(T0);
        SigningKey key = SigningKey.generate(new SecureRandom());
        KeySet keys = KeySet.of(new PublishedKey(key.publicKey(), SERVICE, Long.MIN_VALUE + 1, Long.MAX_VALUE,
                Long.MAX_VALUE));
        long wroteStart = System.nanoTime();
        int grants = 0;
        try (FileBagStore store = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(root.resolve("locks"))
                .metronome(false).flushPolicy(FlushPolicy.never()).build(), time);
                AuditSigner signer = new AuditSigner(key, SERVICE, 1_000, 200, 256)) {
            Random random = new Random(7);
            LeaseStamp[] stamps = new LeaseStamp[names];
            CorrelationId[] ids = new CorrelationId[names];
            long[] last = new long[names];
            int[] written = new int[names];
            Arrays.fill(last, Long.MIN_VALUE);
            byte[] payload = new byte[100];
            List<CompletableFuture<FrameWitness>> pending = new ArrayList<>();
            for (int i = 0; i < messages; i++) {
                int k = i % names;
                if (k == 0 && written[0] % perGrant == 0) {
                    // Every name passes to a new holder in this round; the grants are signed together, as a busy
                    // service batches them.
                    long now = Micros.of(time.now());
                    for (int n = 0; n < names; n++) {
                        grants++;
                        long floor = last[n] == Long.MIN_VALUE ? now - 1_000_000 : last[n];
                        CorrelationId id = new CorrelationId(random.nextLong(), random.nextLong());
                        boolean first = ids[n] == null;
                        Witness w = new Witness(WitnessEvent.GRANT, SERVICE, key.id(), "order/" + n, now * 16 + n,
                                LeaseMode.EXCLUSIVE, LeaseKind.FULL, floor, now, now + 60_000_000, now, now, 1_000,
                                id, first ? CorrelationId.NONE : ids[n], first ? Ending.UNKNOWN : Ending.RELINQUISHED,
                                first ? floor : now, last[n], first ? Long.MIN_VALUE : now,
                                new HolderId("node-" + (grants % 7), "t"), null);
                        ids[n] = id;
                        pending.add(signer.sign(w));
                    }
                    for (int n = 0; n < names; n++) {
                        FrameWitness fw = pending.get(n).join();
                        Witness w = fw.witness();
                        stamps[n] = new LeaseStamp(w.name(), w.generation(), Micros.toInstant(w.floor()),
                                Micros.toInstant(w.deadline()), Micros.toInstant(w.writableFrom()), null,
                                fw.encode());
                    }
                    pending.clear();
                }
                store.append(AppendRequest.of(LOG, List.of(stamps[k]), payload));
                last[k] = Micros.of(time.now());
                written[k]++;
                time.advance(Duration.ofNanos(20_000));
            }
            // Past the grace: every bucket can be sealed, so both passes read sealed buckets.
            time.advance(Duration.ofSeconds(10));
            store.sealThrough(LOG, T0.minusSeconds(1), time.now().minusSeconds(5));
            double wrote = (System.nanoTime() - wroteStart) / 1e9;
            System.out.printf(Locale.ROOT, "wrote %d messages under %d grants of %d names in %.1f s; %s%n", messages,
                    grants, names, wrote, BenchSupport.load());

            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            List<double[]> verify = new ArrayList<>();
            List<double[]> read = new ArrayList<>();
            for (int r = 0; r < warmup + runs; r++) {
                for (int which = 0; which < 2; which++) {
                    boolean verifyFirst = r % 2 == 0;
                    boolean doVerify = (which == 0) == verifyFirst;
                    long cpu0 = threads.getCurrentThreadCpuTime();
                    long t0 = System.nanoTime();
                    long n = doVerify ? verify(root, keys) : read(store);
                    long wall = System.nanoTime() - t0;
                    long cpu = threads.getCurrentThreadCpuTime() - cpu0;
                    if (n != messages) {
                        throw new IllegalStateException((doVerify ? "verify" : "read") + " counted " + n
                                + " messages, expected " + messages);
                    }
                    if (r >= warmup) {
                        (doVerify ? verify : read).add(new double[] {n / (wall / 1e9), n / (cpu / 1e9)});
                    }
                }
            }
            System.out.printf(Locale.ROOT, "verify: %s%nread:   %s%n%s%n", describe(verify), describe(read),
                    BenchSupport.load());
        }
    }

    private static long verify(Path root, KeySet keys) throws Exception {
        long[] findings = {0};
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keys, 1_000_000, true), f -> {
            findings[0]++;
            System.out.println(f);
        }, null);
        v.verifyLog(root, LOG);
        v.finish();
        if (findings[0] != 0) {
            throw new IllegalStateException("the verifier found " + findings[0] + " problems in a clean log");
        }
        return v.count(LogVerifier.Counter.MESSAGES);
    }

    private static long read(FileBagStore store) throws Exception {
        long n = 0;
        try (MessageStream s = store.read(ReadRequest.all(LOG).sealedOnly())) {
            Message m;
            while ((m = s.next()) != null) {
                n += m.payloadLength() > 0 ? 1 : 0;
            }
        }
        return n;
    }

    private static String describe(List<double[]> runs) {
        double[] wall = runs.stream().mapToDouble(x -> x[0]).sorted().toArray();
        double[] cpu = runs.stream().mapToDouble(x -> x[1]).sorted().toArray();
        return String.format(Locale.ROOT, "median %,.0f messages/s wall (min %,.0f, max %,.0f), %,.0f messages per "
                + "CPU-second of the thread (min %,.0f, max %,.0f), %d runs", wall[wall.length / 2], wall[0],
                wall[wall.length - 1], cpu[cpu.length / 2], cpu[0], cpu[cpu.length - 1], runs.size());
    }
}
