package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.GrantWitness;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;

/**
 * The server's record of which principal each grant belongs to stays bounded by the leases alive: released leases
 * are forgotten at once, leases that end otherwise once their deadline (plus a margin) has passed, renewed leases
 * only after their new deadline; and concurrent grants, renewals and releases leave nothing behind.
 */
class GrantOwnersTest {
    private static final long T0 = Micros.of(Instant.parse("2026-03-01T10:00:00Z"));
    private static final long SECOND = 1_000_000;

    private static Lease lease(String name, long generation, long deadlineMicros) {
        Predecessor none = new Predecessor(CorrelationId.NONE, Ending.UNKNOWN, Instant.EPOCH, null, null);
        return new Lease(new HolderId("p", "o"), LeaseMode.EXCLUSIVE, LeaseKind.FULL, Micros.toInstant(T0),
                Micros.toInstant(deadlineMicros), List.of(new LeaseGrant(name, generation, CorrelationId.NONE,
                Instant.EPOCH, Instant.EPOCH, none)));
    }

    private static GrantWitness witness(int i) {
        return new GrantWitness(new byte[] {(byte) i, 7}, new CompletableFuture<>());
    }

    private static Lease witnessed(Lease l, GrantWitness w) {
        return new Lease(l.holder(), l.mode(), l.kind(), l.grantedAt(), l.deadline(), List.of(l.grants().get(0)
                .withWitness(w)));
    }

    @Test
    void theLatestWitnessesOfALeaseAreFoundForItsOwnerOnlyUntilItEnds() {
        GrantOwners owners = new GrantOwners();
        GrantWitness granted = witness(0);
        Lease lease = witnessed(lease("w", 3, T0 + 10 * SECOND), granted);
        owners.granted("billing", lease, T0);
        byte[] statement = {0, 7};
        assertSame(granted, owners.witness("billing", "w", 3, statement));
        assertNull(owners.witness("mallory", "w", 3, statement), "another principal's lease");
        assertNull(owners.witness("billing", "w", 4, statement), "another generation");
        assertNull(owners.witness("billing", "w", 3, new byte[] {9, 9}), "not a witness of this lease");
        // Renewed: each renewal's witness is kept, the oldest dropped beyond the bound.
        List<GrantWitness> renewals = new ArrayList<>();
        for (int i = 1; i <= GrantOwners.RECENT_WITNESSES; i++) {
            renewals.add(witness(i));
            owners.moved(witnessed(lease("w", 3, T0 + (10 + i) * SECOND), renewals.get(i - 1)));
        }
        assertNull(owners.witness("billing", "w", 3, statement), "the grant's witness is "
                + GrantOwners.RECENT_WITNESSES + " renewals old");
        assertSame(renewals.get(0), owners.witness("billing", "w", 3, new byte[] {1, 7}));
        assertSame(renewals.get(renewals.size() - 1), owners.witness("billing", "w", 3,
                new byte[] {(byte) GrantOwners.RECENT_WITNESSES, 7}));
        // Released: forgotten.
        owners.ended(lease);
        assertNull(owners.witness("billing", "w", 3, new byte[] {1, 7}));
        assertEquals(0, owners.size());
    }

    @Test
    void leasesThatExpireWithoutReleaseAreForgottenAfterTheirDeadlineAndRenewedOnesOnlyAfterTheNewOne() {
        GrantOwners owners = new GrantOwners();
        Lease renewed = lease("a", 1, T0 + 10 * SECOND);
        owners.granted("billing", renewed, T0);
        for (int i = 0; i < 1_000; i++) {
            owners.granted("billing", lease("n" + i, 1, T0 + 10 * SECOND), T0);
        }
        owners.moved(lease("a", 1, T0 + 100 * SECOND));
        assertEquals(1_001, owners.size());
        // Not yet forgotten at the deadline itself: a renewal made just before it may not have been told yet.
        owners.sweep(T0 + 10 * SECOND, Integer.MAX_VALUE);
        assertEquals(1_001, owners.size());
        assertEquals("billing", owners.principalOf("n0", 1));
        // Grants after the deadline sweep the expired ones, a few per grant: the record does not grow.
        long later = T0 + 12 * SECOND;
        for (int i = 0; i < 1_000; i++) {
            owners.granted("mallory", lease("m" + i, 1, later + 10 * SECOND), later);
            assertTrue(owners.size() <= 1_001 + 1, "grew to " + owners.size());
        }
        assertEquals(1_000 + 1, owners.size(), "the 1 000 expired ones are gone, the renewed one kept");
        assertNull(owners.principalOf("n0", 1));
        assertEquals("billing", owners.principalOf("a", 1), "renewed: its new deadline is ahead");
        owners.sweep(T0 + 102 * SECOND, Integer.MAX_VALUE);
        assertEquals(0, owners.size());
        assertNull(owners.principalOf("a", 1));
    }

    @Test
    void concurrentGrantsRenewalsAndReleasesLeaveNothingBehind() throws Exception {
        GrantOwners owners = new GrantOwners();
        int threads = 4;
        int each = 5_000;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            done.add(pool.submit(() -> {
                go.await();
                for (int i = 0; i < each; i++) {
                    Lease l = lease("t" + me + "/" + (i % 50), i, T0 + 10 * SECOND);
                    owners.granted("p" + me, l, T0 + i);
                    if (i % 3 == 0) {
                        owners.moved(lease(l.grants().get(0).name(), i, T0 + 20 * SECOND));
                    }
                    if (!"p".concat(Integer.toString(me)).equals(owners.principalOf(l.grants().get(0).name(), i))) {
                        throw new AssertionError("lost the owner of " + l);
                    }
                    if (i % 2 == 0) {
                        owners.ended(l);
                    }
                }
                return null;
            }));
        }
        go.countDown();
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(threads * each / 2, owners.size(), "the released ones are gone, the others kept");
        owners.sweep(T0 + 22 * SECOND, Integer.MAX_VALUE);
        assertEquals(0, owners.size());
    }
}
