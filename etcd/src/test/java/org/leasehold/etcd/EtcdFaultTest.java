package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.contract.LeaseHistoryChecker;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.SessionEvent;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Faults of a real three-member etcd cluster during a randomized lease history served by two services (two fronts on
 * one key prefix, as two lease servers in front of one cluster): the leader killed, and separately two of three
 * members killed (quorum lost) and started again. The history checker proves from what the services answered that
 * nothing was granted twice, no generation went back, no floor fell below a released watermark (an acknowledged
 * release is never lost); while the quorum is lost every call fails as unavailable, naming etcd, and a kept lease
 * reports jeopardy, then safe once the quorum is back.
 */
class EtcdFaultTest {
    private static final int WORKERS = 4;
    private static EtcdCluster cluster;

    private final ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
    private final List<LeaseHistoryChecker.Held> history = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger granted = new AtomicInteger();
    private final AtomicInteger unavailable = new AtomicInteger();
    private final AtomicInteger unknownReleases = new AtomicInteger();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private EtcdLeaseService front1;
    private EtcdLeaseService front2;
    private Thread driver;

    @BeforeAll
    static void startCluster() {
        cluster = EtcdCluster.start("faults", 3);
    }

    @AfterAll
    static void stopCluster() {
        cluster.close();
    }

    @BeforeEach
    void startFronts() {
        EtcdConfig config = EtcdConfig.defaults(cluster.endpoints()).withPrefix("faults/" + UUID.randomUUID() + "/")
                .withTimes(Duration.ofSeconds(1), Duration.ofMillis(200), Duration.ZERO, Duration.ZERO)
                .withCallTimeout(Duration.ofMillis(1500));
        front1 = new EtcdLeaseService(config.withServiceId("front-1"), time);
        front2 = new EtcdLeaseService(config.withServiceId("front-2"), time);
        driver = new Thread(() -> {
            while (running.get()) {
                time.advance(Duration.ofMillis(1));
                LockSupport.parkNanos(1_000_000);
            }
        }, "clock-driver");
        driver.setDaemon(true);
        driver.start();
    }

    @AfterEach
    void stopFronts() throws InterruptedException {
        running.set(false);
        driver.join();
        front1.close();
        front2.close();
    }

    @Test
    void killingTheLeaderDuringARandomHistoryGrantsNothingTwice() throws Exception {
        Instant[] killedAt = new Instant[1];
        runHistory(() -> {
            int leader = cluster.leader();
            assertTrue(leader >= 0, "a leader before the fault");
            killedAt[0] = time.now();
            cluster.kill(leader);
            awaitServiceTime(Duration.ofSeconds(3));
            cluster.restart(leader);
        });
        long after = history.stream().filter(h -> h.grantedAt.isAfter(killedAt[0].plusSeconds(1))).count();
        assertTrue(after > 0, "grants went on after the leader was killed: " + summary());
    }

    @Test
    void losingTheQuorumFailsCallsAsUnavailableReportsJeopardyAndGrantsNothingTwice() throws Exception {
        // The kept lease lives on a service with a longer maximum lease, so that it can outlast the outage.
        EtcdLeaseService keeperFront = new EtcdLeaseService(EtcdConfig.defaults(cluster.endpoints())
                .withPrefix("faults/" + UUID.randomUUID() + "/").withServiceId("keeper")
                .withTimes(Duration.ofSeconds(20), Duration.ofMillis(200), Duration.ZERO, Duration.ZERO)
                .withCallTimeout(Duration.ofSeconds(1)), time);
        Lease kept = keeperFront.acquire(LeaseRequest.builder(new HolderId("keeper", "k"), "kept/1").build());
        List<SessionEvent> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch jeopardy = new CountDownLatch(1);
        CountDownLatch safe = new CountDownLatch(1);
        try (keeperFront; LeaseKeeper keeper = new LeaseKeeper(keeperFront, time, () -> Duration.ZERO)) {
            KeptLease k = keeper.keep(kept, Duration.ofSeconds(20), e -> {
                events.add(e);
                if (e.type() == SessionEvent.Type.JEOPARDY) {
                    jeopardy.countDown();
                } else if (e.type() == SessionEvent.Type.SAFE) {
                    safe.countDown();
                }
            });
            runHistory(() -> {
                int leader = cluster.leader();
                int other = (leader + 1) % 3;
                cluster.kill(leader);
                cluster.kill(other);
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> front2.acquire(LeaseRequest.builder(new HolderId("probe", "p"), "quorum/1").build()));
                assertTrue(e.getMessage().contains("etcd at") && e.getMessage().contains("quorum"), e.getMessage());
                assertFalse(keeperFront.check("kept/1", kept.grant("kept/1").generation()),
                        "without an answer from etcd a check fails closed");
                await(jeopardy, "the kept lease reported jeopardy while the quorum was lost: " + events);
                cluster.restart(leader);
                cluster.restart(other);
            });
            await(safe, "the kept lease reported safe once the quorum was back: " + events);
            assertEquals(List.of(SessionEvent.Type.JEOPARDY, SessionEvent.Type.SAFE),
                    events.stream().map(SessionEvent::type).toList(), "jeopardy once, then safe; never expired");
            assertTrue(events.get(0).detail().contains("etcd at"), "jeopardy says etcd did not answer: " + events);
            assertTrue(keeperFront.check("kept/1", kept.grant("kept/1").generation()), "still held after the outage");
            k.release(null, null);
        }
        assertTrue(front2.inspect("quorum/", 10).stream().allMatch(s -> s.holders().isEmpty()),
                "the refused probe holds nothing");
        assertTrue(unavailable.get() > 0, "calls failed as unavailable during the outage: " + summary());
    }

    private void await(CountDownLatch latch, String what) throws InterruptedException {
        assertTrue(latch.await(60, TimeUnit.SECONDS), what);
    }

    private void awaitServiceTime(Duration d) {
        CountDownLatch latch = new CountDownLatch(1);
        time.schedule(Micros.plus(time.nowMicros(), Micros.of(d)), latch::countDown);
        try {
            assertTrue(latch.await(60, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs the workers on both fronts, applies {@code fault} after a while, lets them go on, then checks. */
    private void runHistory(Fault fault) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
        List<Future<?>> done = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            int worker = w;
            Random rnd = new Random(worker * 7919L + System.nanoTime());
            done.add(pool.submit(() -> {
                for (int tx = 0; !stop.get(); tx++) {
                    transaction(worker % 2 == 0 ? front1 : front2, rnd, new HolderId("worker-" + worker, "tx-" + tx));
                }
                return null;
            }));
        }
        awaitServiceTime(Duration.ofMillis(1500));
        int before = granted.get();
        fault.run();
        awaitServiceTime(Duration.ofSeconds(3));
        stop.set(true);
        for (Future<?> f : done) {
            f.get(2, TimeUnit.MINUTES);
        }
        pool.shutdown();
        assertTrue(before > 0, "grants before the fault: " + summary());
        List<String> violations = new LeaseHistoryChecker().check(new ArrayList<>(history));
        assertEquals(List.of(), violations.subList(0, Math.min(10, violations.size())), summary());
    }

    /** What the test does to the cluster in the middle of the history. */
    private interface Fault {
        void run() throws Exception;
    }

    private String summary() {
        return "granted " + granted + ", unavailable " + unavailable + ", releases of unknown outcome "
                + unknownReleases + ", recorded " + history.size();
    }

    private void transaction(EtcdLeaseService leases, Random rnd, HolderId holder) throws InterruptedException {
        List<String> names = new ArrayList<>();
        int n = 1 + rnd.nextInt(2);
        while (names.size() < n) {
            String name = "x/" + rnd.nextInt(4);
            if (!names.contains(name)) {
                names.add(name);
            }
        }
        LeaseMode mode = rnd.nextInt(4) == 0 ? LeaseMode.SHARED : LeaseMode.EXCLUSIVE;
        LeaseKind kind = rnd.nextBoolean() ? LeaseKind.TENTATIVE : LeaseKind.FULL;
        Lease lease;
        try {
            lease = leases.acquire(LeaseRequest.builder(holder, names).mode(mode).kind(kind)
                    .leaseFor(Duration.ofMillis(300 + rnd.nextInt(500))).waitFor(Duration.ofMillis(rnd.nextInt(600)))
                    .build());
        } catch (LeaseServiceUnavailableException e) {
            unavailable.incrementAndGet();
            return;
        } catch (LeaseException e) {
            return;
        }
        granted.incrementAndGet();
        List<LeaseHistoryChecker.Held> held = new ArrayList<>();
        for (LeaseGrant g : lease.grants()) {
            LeaseHistoryChecker.Held h = new LeaseHistoryChecker.Held(g.name(), g.generation(), mode.type().name(),
                    mode.permits(), lease.grantedAt(), g.floor(), g.writableFrom(), lease.deadline(),
                    kind == LeaseKind.FULL);
            held.add(h);
            history.add(h);
        }
        try {
            if (kind == LeaseKind.TENTATIVE) {
                lease = leases.upgrade(lease, null);
                for (LeaseHistoryChecker.Held h : held) {
                    h.full = true;
                    h.deadline = lease.deadline();
                }
            }
        } catch (LeaseBrokenException | LeaseExpiredException e) {
            held.forEach(h -> h.broken = e instanceof LeaseBrokenException);
            return;
        } catch (LeaseServiceUnavailableException e) {
            // The upgrade's outcome is unknown: the lease stays recorded as tentative (never written under).
            unavailable.incrementAndGet();
            return;
        } catch (LeaseException e) {
            return;
        }
        long floor = micros(lease.floor());
        long last = floor;
        if (mode.type() == LeaseMode.Type.EXCLUSIVE && !lease.writableFrom().isAfter(leases.now())) {
            Instant now = leases.now();
            long t = Math.max(last + 1, micros(now));
            if (t < micros(lease.deadline()) && now.isBefore(lease.deadline())) {
                for (LeaseHistoryChecker.Held h : held) {
                    h.writes.add(t);
                    h.writeTimes.add(now);
                }
                last = t;
            }
        }
        Instant watermark = last > floor ? Micros.toInstant(last) : null;
        Instant asked = leases.now();
        try {
            Instant ended = leases.release(lease, watermark, "worker-log");
            for (LeaseHistoryChecker.Held h : held) {
                h.releasedAt = ended;
                h.watermark = watermark;
            }
        } catch (LeaseServiceUnavailableException e) {
            // Unknown outcome: released (from some instant after it was asked) or expired (at its deadline). Recording
            // it released when it was asked is what both cases allow: nobody may hold the name before that instant,
            // and a floor must cover the watermark either way (a deadline is above it).
            unavailable.incrementAndGet();
            unknownReleases.incrementAndGet();
            for (LeaseHistoryChecker.Held h : held) {
                h.releasedAt = asked;
                h.watermark = watermark;
            }
        } catch (LeaseException e) {
            // Expired meanwhile: the history records it by its deadline.
        }
    }

    private static long micros(Instant t) {
        return Micros.of(t);
    }
}
