package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.SealReport;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;
import org.leasehold.store.WriteRule;

/**
 * The calls a connection makes for its unit of work, at their edges: the lease time and wait asked for or the
 * configured ones, appends that carry no message or a null one, and a lease taken after a holder whose lease ran out.
 */
class AdapterUnitCallsTest {
    private AdapterFixture fx;

    @BeforeEach
    void start() throws Exception {
        fx = new AdapterFixture("calls", mcf -> mcf.setMaxLeaseMillis(8_000L));
    }

    @AfterEach
    void stop() {
        fx.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aLeaseLastsTheTimeAskedForOrMaxLeaseMillis() throws Exception {
        try (LeaseConnection c = fx.connection()) {
            Lease asked = c.acquire(LeaseOptions.of("time/asked").leaseFor(Duration.ofMillis(2_500)));
            assertEquals(fx.time.now().plusMillis(2_500), asked.deadline());
            Lease configured = c.acquire("time/configured");
            assertEquals(fx.time.now().plusMillis(8_000), configured.deadline());
        }
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            Lease asked = c.acquire(LeaseOptions.of("time/tx").leaseFor(Duration.ofMillis(3_000)));
            assertEquals(fx.time.now().plusMillis(3_000), asked.deadline());
            // Kept alive for the time asked: renewed half-way, for the time asked again (not MaxLeaseMillis).
            fx.time.advance(Duration.ofMillis(1_500));
            fx.context.drain();
            java.time.Instant renewed = c.leases().get(0).deadline();
            assertTrue(renewed.isAfter(asked.deadline()) && !renewed.isAfter(fx.time.now().plusMillis(3_000)),
                    "renewed for 3000 ms, not MaxLeaseMillis: " + renewed);
            fx.time.advance(Duration.ofMillis(1_500));
            fx.context.drain();
            c.append(bytes("still held after 3 s"));
        }
        fx.tm.commit();
        assertEquals(1, fx.messages().size());
    }

    @Test
    void oneKeeperRenewsAUnitsLeasesWhileItLivesAndNoneAfter() throws Exception {
        fx.close();
        fx = new AdapterFixture("calls", mcf -> { });
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("keep/1");
            c.acquire("keep/2");
            for (int i = 0; i < 3; i++) {
                fx.time.advance(Duration.ofSeconds(2));
                fx.context.drain();
            }
            assertEquals(1, fx.rm().metrics().getRenewals(), "one renewal of the unit's leases at a third of 10 s");
            c.append(bytes("kept"));
        }
        fx.tm.commit();
        long renewals = fx.rm().metrics().getRenewals();
        for (int i = 0; i < 6; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        assertEquals(renewals, fx.rm().metrics().getRenewals(), "no renewal after the transaction completed");
        assertEquals(0, fx.rm().metrics().getRenewalFailures());
        assertEquals(0, fx.rm().metrics().getLeasesLost(), "no keeper left to find the released leases gone");
        assertEquals(1, fx.messages().size());
    }

    @Test
    void acquiresAreCountedAndAUnitThatLostALeaseTakesNoMore() throws Exception {
        try (LeaseConnection holder = fx.connection()) {
            holder.acquire("count/busy");
            try (LeaseConnection c = fx.connection()) {
                assertThrows(org.leasehold.lease.LeaseBusyException.class,
                        () -> c.acquire(LeaseOptions.of("count/busy").waitFor(Duration.ZERO)));
            }
        }
        assertEquals(1, fx.rm().metrics().getAcquires());
        assertEquals(1, fx.rm().metrics().getAcquireFailures());
        fx.tm.begin();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("count/lost");
            fx.context.refuseWork.set(true);
            fx.time.advance(Duration.ofSeconds(11));
            fx.context.drain();
            fx.context.refuseWork.set(false);
            org.leasehold.lease.LeaseLostException lost = assertThrows(org.leasehold.lease.LeaseLostException.class,
                    () -> c.acquire("count/next"));
            assertTrue(lost.getMessage().contains("lost a lease"), lost.getMessage());
        }
        fx.tm.rollback();
        assertEquals(2, fx.rm().metrics().getAcquires(), "the refused acquire took nothing");
    }

    @Test
    void anAppendOfNoMessageOrOfANullMessageIsRefusedAndWritesNothing() throws Exception {
        try (LeaseConnection c = fx.connection()) {
            c.acquire("append/edges");
            ConnectorException none = assertThrows(ConnectorException.class, () -> c.append());
            assertTrue(none.getMessage().contains("no message"), none.getMessage());
            ConnectorException nul = assertThrows(ConnectorException.class, () -> c.append((byte[][]) null));
            assertTrue(nul.getMessage().contains("no message"), nul.getMessage());
            ConnectorException second = assertThrows(ConnectorException.class, () -> c.append(bytes("a"), null));
            assertTrue(second.getMessage().startsWith("message 1 of the append is null"), second.getMessage());
            ConnectorException first = assertThrows(ConnectorException.class, () -> c.append(null, bytes("b")));
            assertTrue(first.getMessage().startsWith("message 0 of the append is null"), first.getMessage());
            c.append(new byte[0]);
        }
        assertEquals(List.of(0), fx.messages().stream().map(m -> m.payload().length).toList(),
                "only the empty message, which is one");
        assertEquals(1, fx.rm().metrics().getMessagesWritten());
    }

    @Test
    void aLocalTransactionsRollbackReleasesItsLeasesAtOnce() throws Exception {
        LeaseholdManagedConnection mc = (LeaseholdManagedConnection) fx.mcf.createManagedConnection(null, null);
        LeaseConnection c = (LeaseConnection) mc.getConnection(null, null);
        mc.getLocalTransaction().begin();
        c.acquire("local/undo");
        c.append(bytes("never"));
        mc.getLocalTransaction().rollback();
        try (LeaseConnection other = fx.connection()) {
            assertEquals(fx.time.now(), other.acquire(LeaseOptions.of("local/undo").waitFor(Duration.ZERO)).grantedAt(),
                    "free at once, not when the lease runs out");
        }
        c.close();
        mc.destroy();
        assertTrue(fx.messages().isEmpty());
    }

    @Test
    void aSuccessorOfAHolderWhoseLeaseRanOutSealsItsBucketsBeforeUsingTheLease() throws Exception {
        LeaseConnection first = fx.connection();
        first.acquire(LeaseOptions.of("successor/n").leaseFor(Duration.ofSeconds(2)));
        first.append(bytes("by the first holder"));
        Instant written = fx.messages().get(0).timestamp();
        // No keeper renews the first holder's lease: it runs out without a release.
        fx.context.refuseWork.set(true);
        fx.time.advance(Duration.ofSeconds(3));
        fx.context.drain();
        fx.context.refuseWork.set(false);
        try (LeaseConnection next = fx.connection()) {
            CompletableFuture<Lease> taken = CompletableFuture.supplyAsync(() -> {
                try {
                    return next.acquire("successor/n");
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            });
            // The acquire waits, on this clock, until the first holder's late writes are settled.
            Lease lease = null;
            for (int i = 0; i < 600 && lease == null; i++) {
                try {
                    lease = taken.get(20, TimeUnit.MILLISECONDS);
                } catch (TimeoutException e) {
                    fx.time.advance(Duration.ofMillis(100));
                }
            }
            assertTrue(lease != null && WriteRule.predecessorExpired(lease), "granted after an expired predecessor: "
                    + lease);
            // Its bucket was sealed by the acquire, before the successor could read or write under the lease.
            SealReport again = fx.mcf.runtime().store().sealThrough("ledger", written, written.plusNanos(1_000));
            assertEquals(List.of(SealReport.Outcome.ALREADY_SEALED),
                    again.buckets().stream().map(SealReport.BucketSeal::outcome).toList(), again.toString());
            next.append(bytes("by the successor"));
        }
        first.close();
        assertEquals(List.of("by the first holder", "by the successor"), fx.messages().stream()
                .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
    }
}
