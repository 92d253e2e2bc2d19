package org.leasehold.bench;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.SystemTimeSource;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The embedded lease engine beside the in-process floor, measured in the same run.
 *
 * <ul>
 *   <li>Uncontended: each thread acquires and releases its own name, beside a {@code ConcurrentHashMap}
 *       {@code putIfAbsent}/{@code remove} lock table doing the same; with one thread also beside that table with the
 *       fixed costs of a lease service added (two clock reads, two lock round trips).
 *   <li>Contended: 64 threads over 16 names, each acquire waiting its turn (FIFO, woken by the release), beside a
 *       table of 16 fair {@link ReentrantLock}s.
 *   <li>Signing: one thread's acquire and release of its own name, on an engine that signs its witnesses (a real
 *       {@link AuditSigner} with the service's default batching) beside one that signs none, in throughput and in
 *       sampled time per cycle.
 * </ul>
 *
 * Run: {@code java -jar benchmarks/target/benchmarks.jar LeaseEngineBenchmark}
 */
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 2, jvmArgsAppend = {"-Xmx1g", "-Djava.util.logging.config.file=/dev/null"})
@OutputTimeUnit(TimeUnit.MICROSECONDS)
public class LeaseEngineBenchmark {

    private static final int CONTENDED_NAMES = 16;

    /** One engine (real clock, no quiet period) and one lock table, shared by all threads. */
    @State(Scope.Benchmark)
    public static class Shared {
        SystemTimeSource time;
        EmbeddedLeaseService engine;
        final ConcurrentHashMap<String, HolderId> table = new ConcurrentHashMap<>();
        final ReentrantLock[] fairLocks = new ReentrantLock[CONTENDED_NAMES];
        final AtomicInteger threads = new AtomicInteger();

        @Setup(Level.Trial)
        public void setUp() {
            time = new SystemTimeSource("bench-timer");
            engine = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)
                    .withMaxWaitersPerName(1_000), time);
            for (int i = 0; i < fairLocks.length; i++) {
                fairLocks[i] = new ReentrantLock(true);
            }
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            engine.close();
            time.close();
        }
    }

    /** One engine that signs every grant's witness, with its signer, beside {@link Shared}'s that signs none. */
    @State(Scope.Benchmark)
    public static class Signing {
        SystemTimeSource time;
        AuditSigner signer;
        EmbeddedLeaseService engine;

        @Setup(Level.Trial)
        public void setUp() {
            time = new SystemTimeSource("bench-timer");
            signer = new AuditSigner(SigningKey.generate(new SecureRandom()), "bench-engine", 1_000,
                    ServiceKeys.DEFAULT_LINGER_MICROS, ServiceKeys.DEFAULT_MAX_BATCH);
            engine = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO), time, null, signer);
        }

        @TearDown(Level.Trial)
        public void tearDown() {
            engine.close();
            signer.close();
            time.close();
        }
    }

    /** Per thread: its own name and prepared requests. */
    @State(Scope.Thread)
    public static class PerThread {
        HolderId holder;
        String ownName;
        LeaseRequest own;
        LeaseRequest[] contended;
        int next;
        /** A lock of this thread's own, as an uncontended stripe lock ({@link #uncontended1FixedCosts}). */
        final ReentrantLock stripe = new ReentrantLock();

        @Setup(Level.Trial)
        public void setUp(Shared shared) {
            int id = shared.threads.incrementAndGet();
            holder = new HolderId("bench", "thread-" + id);
            ownName = "bench/own/" + id;
            own = LeaseRequest.builder(holder, ownName).leaseFor(Duration.ofSeconds(10)).build();
            contended = new LeaseRequest[CONTENDED_NAMES];
            for (int i = 0; i < CONTENDED_NAMES; i++) {
                contended[i] = LeaseRequest.builder(holder, "bench/hot/" + i).leaseFor(Duration.ofSeconds(10))
                        .waitFor(Duration.ofSeconds(30)).build();
            }
            next = id;
        }
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @Threads(1)
    public Lease uncontended1Leasehold(Shared s, PerThread t) throws LeaseException {
        return cycle(s, t);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @Threads(1)
    public boolean uncontended1Baseline(Shared s, PerThread t) {
        return baseline(s, t);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @Threads(2)
    public Lease uncontended2Leasehold(Shared s, PerThread t) throws LeaseException {
        return cycle(s, t);
    }

    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @Threads(2)
    public boolean uncontended2Baseline(Shared s, PerThread t) {
        return baseline(s, t);
    }

    @Benchmark
    @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
    @Threads(1)
    public Lease signing1Off(Shared s, PerThread t) throws LeaseException {
        return cycle(s.engine, t);
    }

    @Benchmark
    @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
    @Threads(1)
    public Lease signing1On(Signing s, PerThread t) throws LeaseException {
        return cycle(s.engine, t);
    }

    private static Lease cycle(Shared s, PerThread t) throws LeaseException {
        return cycle(s.engine, t);
    }

    private static Lease cycle(EmbeddedLeaseService engine, PerThread t) throws LeaseException {
        try {
            Lease lease = engine.acquire(t.own);
            engine.release(lease, null, null);
            return lease;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * The floor plus the work a lease service cannot skip, its fixed costs: a clock read at acquire and another at
     * release (a grant's time and deadline, an ending's time; the engine reads service time under the name's lock so
     * that expiry and grant are judged at one instant), and a lock taken and given back around each (the name's
     * stripe), around the floor's {@code putIfAbsent} and {@code remove}. No lease value, no fencing state, no history:
     * what is between this and the engine is the engine's own work.
     */
    @Benchmark
    @BenchmarkMode(Mode.Throughput)
    @Threads(1)
    public long uncontended1FixedCosts(Shared s, PerThread t) {
        long granted;
        t.stripe.lock();
        try {
            granted = s.time.nowMicros();
            if (s.table.putIfAbsent(t.ownName, t.holder) != null) {
                throw new IllegalStateException("own name taken");
            }
        } finally {
            t.stripe.unlock();
        }
        long ended;
        t.stripe.lock();
        try {
            ended = s.time.nowMicros();
            s.table.remove(t.ownName, t.holder);
        } finally {
            t.stripe.unlock();
        }
        return granted ^ ended;
    }

    private static boolean baseline(Shared s, PerThread t) {
        if (s.table.putIfAbsent(t.ownName, t.holder) != null) {
            throw new IllegalStateException("own name taken");
        }
        return s.table.remove(t.ownName, t.holder);
    }

    @Benchmark
    @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
    @Threads(64)
    public Lease contended64Leasehold(Shared s, PerThread t) throws LeaseException {
        int i = (t.next++) & (CONTENDED_NAMES - 1);
        try {
            Lease lease = s.engine.acquire(t.contended[i]);
            s.engine.release(lease, null, null);
            return lease;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Benchmark
    @BenchmarkMode({Mode.Throughput, Mode.SampleTime})
    @Threads(64)
    public int contended64Baseline(Shared s, PerThread t) {
        int i = (t.next++) & (CONTENDED_NAMES - 1);
        ReentrantLock lock = s.fairLocks[i];
        lock.lock();
        try {
            return i;
        } finally {
            lock.unlock();
        }
    }
}
