package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.ManualTimeSource;

/**
 * Waiting requests are woken by changes alone: on a clock that never moves, no deadline or wait timer ever fires, so
 * a request whose wake was lost (a change that woke a request that was not first in line, or one that had already
 * left the queue) would wait for ever and the test would run out of time. Threads on two services sharing a prefix
 * take one or two of three names, exclusive or shared, again and again; every request is granted, and no two holders
 * conflict on a name at any moment. Checked to fail (in time) when the service wakes the last of a queue instead of
 * the first; the pass-on of a wake that finds its request gone needs a change seen in the microseconds between a
 * grant's commit and the request leaving the queue, which this test does not reliably reach.
 */
class EtcdWakeTest {
    private static final Duration LONG = Duration.ofMinutes(10);
    private static EtcdCluster cluster;

    @BeforeAll
    static void startMember() {
        cluster = EtcdCluster.start("wake", 1);
    }

    @AfterAll
    static void stopMember() {
        cluster.close();
    }

    private static EtcdConfig config(String prefix, String id) {
        return EtcdFixture.config(cluster, prefix, id);
    }

    @Test
    void everyWaitingRequestIsGrantedOnAFrozenClockWithoutConflicts() throws Exception {
        String prefix = "wake/" + UUID.randomUUID() + "/";
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        String[] names = {"n/a", "n/b", "n/c"};
        int threads = 8;
        int cycles = 30;
        // Per name: exclusive holders as -1 each, shared holders as +1 each; a conflict shows as a mix or two -1.
        Map<String, AtomicInteger> exclusive = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> shared = new ConcurrentHashMap<>();
        for (String n : names) {
            exclusive.put(n, new AtomicInteger());
            shared.put(n, new AtomicInteger());
        }
        List<String> conflicts = java.util.Collections.synchronizedList(new ArrayList<>());
        AtomicInteger granted = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try (EtcdLeaseService a = new EtcdLeaseService(config(prefix, "a"), time);
                EtcdLeaseService b = new EtcdLeaseService(config(prefix, "b"), time)) {
            List<Future<?>> runs = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                EtcdLeaseService service = t % 2 == 0 ? a : b;
                int thread = t;
                runs.add(pool.submit(() -> {
                    ThreadLocalRandom random = ThreadLocalRandom.current();
                    for (int c = 0; c < cycles; c++) {
                        List<String> wanted = new ArrayList<>();
                        for (String n : names) {
                            if (random.nextInt(3) == 0) {
                                wanted.add(n);
                            }
                        }
                        if (wanted.isEmpty() || wanted.size() == names.length) {
                            wanted = List.of(names[random.nextInt(names.length)]);
                        }
                        boolean isShared = random.nextInt(3) == 0;
                        LeaseRequest.Builder r = LeaseRequest.builder(new HolderId("t" + thread, "c" + c), wanted)
                                .leaseFor(LONG).waitFor(LONG);
                        if (isShared) {
                            r.mode(LeaseMode.SHARED);
                        }
                        Lease lease = service.acquire(r.build());
                        granted.incrementAndGet();
                        for (String n : wanted) {
                            int ex = isShared ? exclusive.get(n).get() : exclusive.get(n).incrementAndGet();
                            int sh = isShared ? shared.get(n).incrementAndGet() : shared.get(n).get();
                            if (ex > 1 || ex > 0 && sh > 0) {
                                conflicts.add(n + ": " + ex + " exclusive and " + sh + " shared holders");
                            }
                        }
                        Thread.sleep(random.nextInt(2));
                        for (String n : wanted) {
                            (isShared ? shared : exclusive).get(n).decrementAndGet();
                        }
                        service.release(lease, null, null);
                    }
                    return null;
                }));
            }
            for (Future<?> f : runs) {
                try {
                    f.get(120, TimeUnit.SECONDS);
                } catch (java.util.concurrent.TimeoutException e) {
                    fail("a request waited for a wake that never came (" + granted.get() + " of " + threads * cycles
                            + " granted; the clock never moved, so only changes wake): " + a.inspect(names[0], 1)
                            + " " + a.inspect(names[1], 1) + " " + a.inspect(names[2], 1));
                }
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(threads * cycles, granted.get());
        assertTrue(conflicts.isEmpty(), "holders in conflict: " + conflicts);
    }
}
