package org.leasehold.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;

/**
 * Many threads take leases on random name sets in random modes, as transactions (tentative, then upgrade; some with
 * a second lease asked for while they hold the first) or directly; they hold, renew, write timestamps and release
 * with watermarks; some pause past their deadline and then try to write and release. Everything the service
 * answered is recorded, and {@link LeaseHistoryChecker} proves invariants 1 to 3 from the record. The test also
 * proves that no waiter is lost and that wound-wait lets every transaction through.
 */
public abstract class RandomizedHistoryContract {

    protected static final int WORKERS = 6;
    protected static final int TRANSACTIONS = 150;
    private static final int MAX_ATTEMPTS = 60;

    /** A fixture with a 1 s maximum lease and 200 ms grace, whose time moves by itself while the test runs. */
    protected abstract LeaseFixture startMoving(long seed);

    /** Stops moving time (called after the workers are done). */
    protected abstract void stopMoving();

    /**
     * Lands a write the holder of {@code lease} chose at {@code chosen} while it was live; returns the timestamp the
     * write is acknowledged with, or null if it was refused (the holder writes no more under this lease). By default
     * nothing is stored and the chosen time is the write's.
     */
    protected Instant write(LeaseFixture fixture, Lease lease, Instant chosen) throws Exception {
        return chosen;
    }

    /** Called once the history kept the invariants, with time stopped; a subclass checks what it stored. */
    protected void afterHistory(long seed) throws Exception {
    }

    private final List<LeaseHistoryChecker.Held> history = Collections.synchronizedList(new ArrayList<>());
    private final AtomicInteger committed = new AtomicInteger();
    private final AtomicInteger gaveUp = new AtomicInteger();
    private final AtomicInteger broken = new AtomicInteger();
    private final AtomicInteger busy = new AtomicInteger();
    private final AtomicInteger paused = new AtomicInteger();
    private final AtomicInteger writes = new AtomicInteger();
    private final AtomicInteger waited = new AtomicInteger();
    private final AtomicInteger secondLeases = new AtomicInteger();

    @Test
    void randomHistoryKeepsTheInvariants() throws Exception {
        long seed = Long.getLong("leasehold.seed", System.nanoTime());
        LeaseFixture fixture = startMoving(seed);
        try {
            ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
            List<Future<?>> done = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                Random rnd = new Random(seed + w);
                int worker = w;
                done.add(pool.submit(() -> {
                    for (int tx = 0; tx < TRANSACTIONS; tx++) {
                        transaction(fixture, rnd, new HolderId("worker-" + worker, "tx-" + tx));
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
            pool.shutdown();
            stopMoving();
            String summary = "seed " + seed + ": committed " + committed + ", gave up " + gaveUp + ", broken " + broken
                    + ", busy " + busy + ", paused " + paused + ", writes " + writes + ", waited " + waited
                    + ", second leases " + secondLeases;
            System.out.println("randomized lease history: " + summary);
            List<String> violations = new LeaseHistoryChecker().check(new ArrayList<>(history));
            assertEquals(List.of(), violations.subList(0, Math.min(10, violations.size())), summary);
            assertEquals(0, gaveUp.get(), "every transaction got through (wound-wait makes progress): " + summary);
            assertEquals(WORKERS * TRANSACTIONS, committed.get(), summary);
            assertTrue(broken.get() > 0 && paused.get() > 0 && writes.get() > 0 && waited.get() > 0
                    && secondLeases.get() > 0, "the run exercised breaks, pauses, writes, waits and second leases: "
                    + summary);
            for (NameStatus s : fixture.service().inspect("", 100)) {
                assertTrue(s.waiters().isEmpty(), "no request left queued: " + s);
            }
            afterHistory(seed);
        } finally {
            stopMoving();
            fixture.close();
        }
    }

    private void transaction(LeaseFixture fixture, Random rnd, HolderId holder) throws Exception {
        LeaseService leases = fixture.service();
        List<String> names = new ArrayList<>();
        LeaseMode mode;
        int dice = rnd.nextInt(100);
        if (dice < 12) {
            mode = LeaseMode.semaphore(2);
            names.add("sem/" + rnd.nextInt(2));
        } else {
            mode = dice < 25 ? LeaseMode.SHARED : LeaseMode.EXCLUSIVE;
            int n = 1 + rnd.nextInt(3);
            while (names.size() < n) {
                String name = "x/" + rnd.nextInt(6);
                if (!names.contains(name)) {
                    names.add(name);
                }
            }
        }
        LeaseKind kind = rnd.nextBoolean() ? LeaseKind.TENTATIVE : LeaseKind.FULL;
        // A third of the transactions began earlier (as if their first steps took a while): they are older than the
        // tentative holders in their way and wound them, so every run breaks some leases (with queues served oldest
        // first, transactions that began just now rarely meet a younger tentative holder).
        Instant startedAt = rnd.nextInt(3) == 0 ? leases.now().minusMillis(500 + rnd.nextInt(1500)) : leases.now();
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            Duration wait = Duration.ofMillis(rnd.nextInt(4) == 0 ? 0 : 200 + rnd.nextInt(1300));
            Lease lease;
            Instant asked = leases.now();
            try {
                lease = leases.acquire(LeaseRequest.builder(holder, names).mode(mode).kind(kind).startedAt(startedAt)
                        .leaseFor(Duration.ofMillis(300 + rnd.nextInt(500))).waitFor(wait).build());
            } catch (LeaseBusyException e) {
                busy.incrementAndGet();
                continue;
            }
            if (lease.grantedAt().isAfter(asked)) {
                waited.incrementAndGet();
            }
            List<LeaseHistoryChecker.Held> held = record(lease, mode);
            Lease second = null;
            List<LeaseHistoryChecker.Held> heldSecond = List.of();
            if (kind == LeaseKind.TENTATIVE) {
                fixture.awaitTime(leases.now().plusMillis(rnd.nextInt(60)));
                // A third of them ask for a second lease while they hold the first, and may wait for it: a holder
                // that waits is one wound-wait may break (and the waits of two such transactions may form a cycle).
                String other = "x/" + rnd.nextInt(6);
                if (rnd.nextInt(3) == 0 && !names.contains(other)) {
                    try {
                        second = leases.acquire(LeaseRequest.builder(holder, other).tentative().startedAt(startedAt)
                                .leaseFor(Duration.ofMillis(300 + rnd.nextInt(500)))
                                .waitFor(Duration.ofMillis(200 + rnd.nextInt(1300))).build());
                        heldSecond = record(second, LeaseMode.EXCLUSIVE);
                        secondLeases.incrementAndGet();
                    } catch (LeaseBusyException e) {
                        busy.incrementAndGet();
                        releaseQuietly(leases, lease, held);
                        continue;
                    }
                }
                try {
                    lease = upgrade(leases, lease, held);
                    if (second != null) {
                        second = upgrade(leases, second, heldSecond);
                    }
                } catch (LeaseBrokenException | StaleLeaseException e) {
                    // Stale: broken while it waited for its second lease, and the ending since dropped from the name's
                    // bounded history by the holders after it (the service no longer knows how it ended).
                    broken.incrementAndGet();
                    releaseQuietly(leases, lease, held);
                    releaseQuietly(leases, second, heldSecond);
                    continue;
                } catch (LeaseExpiredException e) {
                    releaseQuietly(leases, lease, held);
                    releaseQuietly(leases, second, heldSecond);
                    continue;
                }
            }
            work(fixture, rnd, lease, held);
            releaseQuietly(leases, second, heldSecond);
            committed.incrementAndGet();
            return;
        }
        gaveUp.incrementAndGet();
    }

    /** Upgrades {@code lease}, recording its names as full; a broken one is recorded as broken before it throws. */
    private static Lease upgrade(LeaseService leases, Lease lease, List<LeaseHistoryChecker.Held> held)
            throws Exception {
        try {
            Lease full = leases.upgrade(lease, null);
            for (LeaseHistoryChecker.Held h : held) {
                h.full = true;
                h.deadline = full.deadline();
            }
            return full;
        } catch (LeaseBrokenException | StaleLeaseException e) {
            held.forEach(h -> h.broken = true);
            throw e;
        }
    }

    /**
     * Releases {@code lease} (null: nothing) without a watermark, whatever became of it (nothing was written), and
     * records the release of its names.
     */
    private static void releaseQuietly(LeaseService leases, Lease lease, List<LeaseHistoryChecker.Held> held) {
        if (lease == null) {
            return;
        }
        try {
            Instant ended = leases.release(lease, null, null);
            for (LeaseHistoryChecker.Held h : held) {
                h.releasedAt = ended;
            }
        } catch (LeaseException e) {
            // Broken, expired or already ended: nothing to give back.
        }
    }

    private List<LeaseHistoryChecker.Held> record(Lease lease, LeaseMode mode) {
        List<LeaseHistoryChecker.Held> held = new ArrayList<>();
        for (LeaseGrant g : lease.grants()) {
            LeaseHistoryChecker.Held h = new LeaseHistoryChecker.Held(g.name(), g.generation(), mode.type().name(),
                    mode.permits(), lease.grantedAt(), g.floor(), g.writableFrom(), lease.deadline(),
                    lease.kind() == LeaseKind.FULL);
            held.add(h);
            history.add(h);
        }
        return held;
    }

    /** Holds a full lease: writes (if exclusive), maybe renews, maybe pauses past the deadline, releases. */
    private void work(LeaseFixture fixture, Random rnd, Lease lease, List<LeaseHistoryChecker.Held> held)
            throws Exception {
        LeaseService leases = fixture.service();
        boolean writer = lease.mode().type() == LeaseMode.Type.EXCLUSIVE;
        long floor = micros(lease.floor());
        long last = floor;
        if (writer && lease.writableFrom().isBefore(lease.deadline())) {
            fixture.awaitTime(lease.writableFrom());
            int n = 1 + rnd.nextInt(3);
            for (int i = 0; i < n; i++) {
                Instant now = leases.now();
                long t = Math.max(last + 1, micros(now));
                if (t >= micros(lease.deadline()) || !now.isBefore(lease.deadline())) {
                    break;
                }
                Instant acknowledged = write(fixture, lease, instant(t));
                if (acknowledged == null) {
                    break;
                }
                t = micros(acknowledged);
                for (LeaseHistoryChecker.Held h : held) {
                    h.writes.add(t);
                    h.writeTimes.add(now);
                }
                writes.incrementAndGet();
                last = t;
            }
        }
        fixture.awaitTime(leases.now().plusMillis(rnd.nextInt(150)));
        if (rnd.nextInt(5) == 0) {
            try {
                lease = leases.renewFor(lease, Duration.ofMillis(200 + rnd.nextInt(600)));
                for (LeaseHistoryChecker.Held h : held) {
                    h.deadline = lease.deadline();
                }
            } catch (LeaseExpiredException e) {
                return;
            }
        }
        if (rnd.nextInt(10) == 0) {
            paused.incrementAndGet();
            // Chooses a timestamp while live, "pauses" past the deadline, then lands the write and tries to release.
            Instant now = leases.now();
            long t = Math.max(last + 1, micros(now));
            fixture.awaitTime(lease.deadline().plusMillis(rnd.nextInt(300)));
            if (writer && t < micros(lease.deadline()) && !lease.writableFrom().isAfter(now)) {
                for (LeaseHistoryChecker.Held h : held) {
                    h.writes.add(t);
                    h.writeTimes.add(now);
                }
                writes.incrementAndGet();
            }
            try {
                leases.release(lease, null, null);
                throw new AssertionError("a release after the deadline was accepted: " + lease.describe());
            } catch (LeaseExpiredException expected) {
                return;
            }
        }
        Instant watermark = last > floor ? instant(last) : null;
        try {
            Instant ended = leases.release(lease, watermark, "worker-log");
            for (LeaseHistoryChecker.Held h : held) {
                h.releasedAt = ended;
                h.watermark = watermark;
            }
        } catch (LeaseExpiredException e) {
            // Held too long (the clock kept moving): it expired, which the history records by its deadline.
        }
    }

    private static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    private static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }
}
