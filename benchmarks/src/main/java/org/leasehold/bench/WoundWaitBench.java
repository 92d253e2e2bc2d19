package org.leasehold.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.etcd.EtcdConfig;
import org.leasehold.etcd.EtcdLeaseService;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.SystemTimeSource;

/**
 * Transactions as the resource adapter runs them, against the embedded engine (or, given an {@code etcd:} spec as
 * fourth argument, the etcd backend, a fresh key prefix per row) on the real clock: each takes its
 * leases tentatively with its start as wound-wait age, holds them for a moment of work, then upgrades them (prepare:
 * a broken lease fails it, a rollback) and releases them. Counts commits, rollbacks and waits that ran out, for one-lease
 * transactions on few names and for two-name transfers: two leases taken one after the other in random order (which
 * can wait for each other in a cycle), or one lease over both names in one request (as {@code @Leased} with two names
 * takes them: all or nothing, so it waits in no cycle). See docs/BENCHMARKS.md, "Wound-wait and only leases".
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.WoundWaitBench [threads] [names] [seconds] [etcd:host:port]</pre>
 */
public final class WoundWaitBench {
    private WoundWaitBench() {
    }

    private record Outcome(long commits, long rollbacks, long timeouts) {
    }

    /** What a transaction takes. */
    private enum Shape {
        ONE_NAME("one lease"),
        TWO_LEASES("two leases, random order"),
        TWO_NAMES_ONE_REQUEST("one lease over two names");

        private final String label;

        Shape(String label) {
            this.label = label;
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int names = args.length > 1 ? Integer.parseInt(args[1]) : 4;
        int seconds = args.length > 2 ? Integer.parseInt(args[2]) : 10;
        String etcd = args.length > 3 ? args[3] : null;
        System.out.printf("%d threads, %d names, %d s per row, 25 us of work after each lease, %s%n", threads, names,
                seconds, etcd == null ? "embedded engine" : etcd);
        System.out.println("| transaction | commits/s | rollbacks (lease broken) | rollbacks / attempts | waits run out |");
        System.out.println("|---|---:|---:|---:|---:|");
        for (Shape shape : Shape.values()) {
            Outcome o = run(threads, names, seconds, shape, etcd);
            long attempts = o.commits + o.rollbacks + o.timeouts;
            System.out.printf("| %s | %,d | %,d | %.2f %% | %,d |%n", shape.label, o.commits / seconds, o.rollbacks,
                    attempts == 0 ? 0.0 : 100.0 * o.rollbacks / attempts, o.timeouts);
        }
    }

    private static Outcome run(int threads, int names, int seconds, Shape shape, String etcd) throws Exception {
        try (SystemTimeSource time = new SystemTimeSource("wound-wait-bench");
             LeaseService engine = service(etcd, shape, time)) {
            LongAdder commits = new LongAdder();
            LongAdder rollbacks = new LongAdder();
            LongAdder timeouts = new LongAdder();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int id = t;
                Thread w = new Thread(() -> {
                    long n = 0;
                    while (!stop.get()) {
                        HolderId holder = new HolderId("bench", "tx/" + id + "/" + n++);
                        transaction(engine, holder, time.now(), names, shape, commits, rollbacks, timeouts);
                    }
                }, "tx-" + t);
                workers.add(w);
                w.start();
            }
            Thread.sleep(seconds * 1_000L);
            stop.set(true);
            for (Thread w : workers) {
                w.join();
            }
            return new Outcome(commits.sum(), rollbacks.sum(), timeouts.sum());
        }
    }

    /** The embedded engine, or an etcd backend on a key prefix of its own (no quiet period either way). */
    private static LeaseService service(String etcd, Shape shape, SystemTimeSource time) {
        if (etcd == null) {
            return new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO), time);
        }
        String prefix = "wound-wait-bench/" + shape.name().toLowerCase(java.util.Locale.ROOT) + "-" + System.nanoTime()
                + "/";
        return new EtcdLeaseService(EtcdConfig.parse(etcd + (etcd.contains("?") ? "&" : "?") + "prefix=" + prefix), time);
    }

    @SuppressWarnings("checkstyle:ParameterNumber")
    private static void transaction(LeaseService engine, HolderId holder, Instant startedAt, int names,
            Shape shape, LongAdder commits, LongAdder rollbacks, LongAdder timeouts) {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        int first = r.nextInt(names);
        int second = (first + 1 + r.nextInt(names - 1)) % names;
        List<Lease> held = new ArrayList<>(2);
        try {
            List<List<String>> requests = switch (shape) {
                case ONE_NAME -> List.of(List.of("key/" + first));
                case TWO_LEASES -> List.of(List.of("key/" + first), List.of("key/" + second));
                case TWO_NAMES_ONE_REQUEST -> List.of(List.of("key/" + first, "key/" + second));
            };
            for (int i = 0; i < requests.size(); i++) {
                held.add(engine.acquire(LeaseRequest.builder(holder, requests.get(i)).tentative()
                        .startedAt(startedAt).leaseFor(Duration.ofSeconds(10))
                        .waitFor(Duration.ofSeconds(5)).build()));
                LockSupport.parkNanos(25_000);
            }
            List<Lease> full = new ArrayList<>(held.size());
            for (Lease l : held) {
                full.add(engine.upgrade(l, null));
            }
            held = full;
            commits.increment();
        } catch (LeaseBrokenException | StaleLeaseException e) {
            // Broken by an older transaction (stale: broken, and already forgotten by the name's bounded history).
            rollbacks.increment();
        } catch (LeaseBusyException e) {
            timeouts.increment();
        } catch (LeaseException | InterruptedException e) {
            throw new IllegalStateException(e);
        } finally {
            for (Lease l : held) {
                try {
                    engine.release(l, null, null);
                } catch (LeaseException e) {
                    // Broken or already gone: nothing to release.
                }
            }
        }
    }
}
