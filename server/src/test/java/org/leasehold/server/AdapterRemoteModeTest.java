package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.transaction.xa.XAException;
import javax.transaction.xa.XAResource;
import javax.transaction.xa.Xid;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ManagedConnection;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.adapter.RemoteModeProbe;
import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.SystemTimeSource;

/**
 * The resource adapter in remote mode: two adapters (two "servers" of a fleet, with their own writer identities) on
 * one bag store log take their leases from one lease server, so they may share the log, which embedded mode refuses.
 * The first reaches the server over gRPC, the second over its socket transport. It needs a real lease server, so it
 * lives beside the server, and reaches the adapter through its public classes, its JCA interfaces and
 * {@link RemoteModeProbe}.
 */
class AdapterRemoteModeTest {
    private LeaseServer server;
    private SystemTimeSource time;
    private RemoteModeProbe a;
    private RemoteModeProbe b;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withSocket(ServerConfig.SocketSettings.loopback()));
        time = new SystemTimeSource("adapter-remote-test");
        Path root = RemoteModeProbe.freshRoot("remote");
        String mode = "remote:" + server.address();
        a = RemoteModeProbe.start(root, time, mcf -> {
            mcf.setLeaseService(mode);
            mcf.setWriterId("fleet-a");
            mcf.setRemoteOptions("callTimeout=5s");
        });
        b = RemoteModeProbe.start(root, time, mcf -> {
            mcf.setLeaseService(mode);
            mcf.setWriterId("fleet-b");
            mcf.setRemoteOptions("transport=socket");
        });
    }

    @AfterEach
    void stop() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
        time.close();
        server.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void twoServersShareALogThroughTheLeaseServer() throws Exception {
        a.tm().begin();
        Lease first;
        try (LeaseConnection c = a.connection()) {
            first = c.acquire("shared/account");
            c.append(bytes("from a"));
        }
        CountDownLatch asking = new CountDownLatch(1);
        CompletableFuture<Void> fromB = CompletableFuture.runAsync(() -> {
            try {
                b.tm().begin();
                try (LeaseConnection c = b.connection()) {
                    asking.countDown();
                    c.acquire("shared/account");
                    c.append(bytes("from b"));
                }
                b.tm().commit();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(asking.await(10, TimeUnit.SECONDS));
        Thread.sleep(200);
        assertFalse(fromB.isDone(), "the second server waits for the lease the first holds");
        a.tm().commit();
        fromB.get(30, TimeUnit.SECONDS);

        List<Message> log = a.messages();
        assertEquals(List.of("from a", "from b"), log.stream()
                .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
        assertEquals(List.of("fleet-a", "fleet-b"), log.stream().map(Message::writer).toList());
        assertTrue(log.get(1).timestamp().isAfter(log.get(0).timestamp()));
        assertTrue(log.get(1).leases().get(0).generation() > first.grant("shared/account").generation());
        NameStatus status = a.leases().inspect("shared/account", 1).get(0);
        assertTrue(status.holders().isEmpty(), "both released");
        assertEquals(log.get(1).timestamp(), status.floor(), "released with the commit's timestamp as watermark");
    }

    /**
     * The adapter's clock 2 s behind the lease server's, with MaxClockErrorMillis at its default of 500: no lease is
     * taken (the error names the server, the offset and what to do) until the clocks are within the bound again; then
     * a lease granted in the server's time, a little ahead, is waited for at commit rather than refused by the store.
     * The server runs on a test clock and the adapter on a manual one, so the offset is exact and moves only when the
     * test moves it.
     */
    @Test
    void aLeaseServerWhoseClockIsBeyondTheBoundIsNotUsedAndOneALittleAheadIsWaitedFor() throws Exception {
        Instant serverTime = Instant.parse("2026-03-01T10:00:00Z");
        ManualTimeSource adapterTime = new ManualTimeSource(serverTime.minusSeconds(2));
        try (LeaseServer skewed = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withTestClock(serverTime));
             RemoteModeProbe c = RemoteModeProbe.start(RemoteModeProbe.freshRoot("remote-skew"), adapterTime, mcf -> {
                 mcf.setLeaseService("remote:" + skewed.address());
                 mcf.setWriterId("fleet-skewed");
             })) {
            c.tm().begin();
            try (LeaseConnection conn = c.connection()) {
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> conn.acquire("skewed/account"));
                assertTrue(e.getMessage().contains("the clock of lease server " + skewed.address() + " is 2000.000 ms "
                        + "ahead of this server's"), e.getMessage());
                assertTrue(e.getMessage().contains("beyond MaxClockErrorMillis (500 ms)"), e.getMessage());
                assertTrue(e.getMessage().contains("Synchronize the clocks"), e.getMessage());
            }
            c.tm().rollback();
            assertEquals(1, c.metrics().getClockRefusals());
            assertTrue(c.leases().inspect("skewed/", 10).isEmpty(), "nothing was asked of the server");

            // The adapter's clock catches up to 300 ms behind, within the bound: the next acquisition measures again
            // and proceeds. The lease is writable from the server's grant time, which this clock has not reached: the
            // commit waits for it (no longer than the bound) instead of failing.
            adapterTime.advance(Duration.ofMillis(1_700));
            c.tm().begin();
            try (LeaseConnection conn = c.connection()) {
                Lease lease = conn.acquire("skewed/account");
                assertTrue(lease.writableFrom().isAfter(adapterTime.now()), lease.writableFrom() + " " + adapterTime.now());
                conn.append(bytes("once the clocks agree"));
            }
            jakarta.transaction.Transaction tx = c.tm().suspend();
            CompletableFuture<Void> commit = CompletableFuture.runAsync(() -> {
                try {
                    c.tm().resume(tx);
                    c.tm().commit();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            Thread.sleep(200);
            assertFalse(commit.isDone(), "the commit waits for this server's clock to reach the lease's writableFrom");
            adapterTime.advance(Duration.ofMillis(300));
            commit.get(30, TimeUnit.SECONDS);
            assertEquals(List.of("once the clocks agree"), c.messages().stream()
                    .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
            assertEquals(1, c.metrics().getClockRefusals());
        }
    }

    /**
     * A lease server that stops answering: its last clock measurement ages (200 ppm of drift allowed), and once that
     * alone exceeds MaxClockErrorMillis the adapter refuses, saying the clock cannot be measured, rather than trusting
     * an offset measured 45 minutes ago.
     */
    @Test
    void aLeaseServerWhoseClockCannotBeMeasuredAnyMoreIsNotUsed() throws Exception {
        Instant start = Instant.parse("2026-03-01T10:00:00Z");
        ManualTimeSource adapterTime = new ManualTimeSource(start);
        LeaseServer gone = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withTestClock(start));
        String address = gone.address();
        try (RemoteModeProbe c = RemoteModeProbe.start(RemoteModeProbe.freshRoot("remote-gone"), adapterTime, mcf -> {
            mcf.setLeaseService("remote:" + address);
            mcf.setWriterId("fleet-gone");
            mcf.setRemoteOptions("callTimeout=2s");
        })) {
            gone.close();
            adapterTime.advance(Duration.ofMinutes(45));
            c.tm().begin();
            try (LeaseConnection conn = c.connection()) {
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> conn.acquire("gone/account"));
                assertTrue(e.getMessage().contains("the clock of lease server " + address + " cannot be measured"),
                        e.getMessage());
                assertTrue(e.getMessage().contains("does not show it within MaxClockErrorMillis (500 ms)"), e.getMessage());
            } finally {
                c.tm().rollback();
            }
            assertEquals(1, c.metrics().getClockRefusals());
        } finally {
            gone.close();
        }
    }

    /** A branch id as a transaction manager hands it to the adapter. */
    private record TestXid(int formatId, byte[] gtrid, byte[] bqual) implements Xid {
        @Override
        public int getFormatId() {
            return formatId;
        }

        @Override
        public byte[] getGlobalTransactionId() {
            return gtrid.clone();
        }

        @Override
        public byte[] getBranchQualifier() {
            return bqual.clone();
        }
    }

    /** The same branch ids, in order, whatever {@link Xid} class carries them. */
    private static void assertSameBranches(Xid[] expected, Xid[] actual) {
        assertEquals(expected.length, actual.length, Arrays.toString(actual));
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i].getFormatId(), actual[i].getFormatId());
            assertTrue(Arrays.equals(expected[i].getGlobalTransactionId(), actual[i].getGlobalTransactionId()));
            assertTrue(Arrays.equals(expected[i].getBranchQualifier(), actual[i].getBranchQualifier()));
        }
    }

    /** Starts a branch directly (as a transaction manager would), takes {@code name}, buffers {@code payload}, ends it. */
    private static XAResource branch(RemoteModeProbe f, Xid xid, String name, String payload) throws Exception {
        ManagedConnection mc = f.mcf().createManagedConnection(null, null);
        XAResource xa = mc.getXAResource();
        xa.start(xid, XAResource.TMNOFLAGS);
        LeaseConnection conn = (LeaseConnection) mc.getConnection(null, null);
        conn.acquire(name);
        conn.append(bytes(payload));
        conn.close();
        xa.end(xid, XAResource.TMSUCCESS);
        return xa;
    }

    /** Moves the lease server's test clock and the adapter's manual clock together, so they stay in agreement. */
    private static void advanceBoth(TestClockClient serverClock, ManualTimeSource adapterTime, Duration total) {
        for (Duration left = total; !left.isZero(); ) {
            Duration step = left.compareTo(Duration.ofSeconds(2)) < 0 ? left : Duration.ofSeconds(2);
            serverClock.advance(step);
            adapterTime.advance(step);
            left = left.minus(step);
        }
    }

    /**
     * A crash in doubt in remote mode: a branch prepared (the adapter asked the lease server to hold its leases in
     * doubt), then the application server stopped before the commit, so nobody renews them. A minute later, six
     * maximum leases on, the restarted adapter's recovery takes the leases back and commits, once, under the
     * generation it prepared with; meanwhile nobody else could take the name.
     */
    @Test
    void aCrashInDoubtInRemoteModeCommitsAfterTheRestartWhileTheServerHoldsTheLeases() throws Exception {
        Instant start = Instant.parse("2026-03-01T10:00:00Z");
        ManualTimeSource adapterTime = new ManualTimeSource(start);
        try (LeaseServer held = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withTestClock(start));
                TestClockClient serverClock = new TestClockClient(held.address());
                RemoteModeProbe c = RemoteModeProbe.start(RemoteModeProbe.freshRoot("remote-doubt"), adapterTime, mcf -> {
                    mcf.setLeaseService("remote:" + held.address());
                    mcf.setWriterId("fleet-doubt");
                })) {
            Xid x = new TestXid(4242, bytes("remote-doubt"), new byte[] {1});
            XAResource xa = branch(c, x, "doubt/account", "prepared, then the server stopped");
            assertEquals(XAResource.XA_OK, xa.prepare(x));
            long generation = c.preparedGeneration(x);
            c.restart();
            advanceBoth(serverClock, adapterTime, Duration.ofSeconds(60));

            NameStatus status = c.leases().inspect("doubt/account", 1).get(0);
            assertEquals(1, status.holders().size(), "held by the lease server for the prepared branch");
            assertNotNull(status.holders().get(0).inDoubtUntil(), "and shown as held in doubt");
            LeaseBusyException busy = assertThrows(LeaseBusyException.class, () -> c.leases().acquire(
                    LeaseRequest.builder(new HolderId("other-server", "t"), "doubt/account").waitFor(Duration.ZERO)
                            .build()));
            assertTrue(busy.getMessage().contains("doubt/account"), busy.getMessage());

            XAResource recovered = c.mcf().createManagedConnection(null, null).getXAResource();
            assertSameBranches(new Xid[] {x}, recovered.recover(XAResource.TMSTARTRSCAN | XAResource.TMENDRSCAN));
            recovered.commit(x, false);
            List<Message> log = c.messages();
            assertEquals(List.of("prepared, then the server stopped"), log.stream()
                    .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
            assertEquals(generation, log.get(0).leases().get(0).generation(), "under the generation it prepared with");
            assertEquals(0, c.metrics().getHeuristicRollbacks());
            assertEquals(0, recovered.recover(XAResource.TMSTARTRSCAN).length);
            NameStatus after = c.leases().inspect("doubt/account", 1).get(0);
            assertTrue(after.holders().isEmpty(), "released after the commit");
            assertEquals(log.get(0).timestamp(), after.floor(), "with the frame's timestamp as watermark");
        }
    }

    /** The same crash, with the restart later than the in-doubt hold: the leases are gone, the outcome heuristic. */
    @Test
    void aRestartLaterThanTheInDoubtHoldEndsInAHeuristicRollbackReported() throws Exception {
        Instant start = Instant.parse("2026-03-01T10:00:00Z");
        ManualTimeSource adapterTime = new ManualTimeSource(start);
        try (LeaseServer held = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withTestClock(start));
                TestClockClient serverClock = new TestClockClient(held.address());
                RemoteModeProbe c = RemoteModeProbe.start(RemoteModeProbe.freshRoot("remote-late"), adapterTime, mcf -> {
                    mcf.setLeaseService("remote:" + held.address());
                    mcf.setWriterId("fleet-late");
                    mcf.setInDoubtHoldMillis(20_000L);
                })) {
            Xid x = new TestXid(4242, bytes("remote-late"), new byte[] {1});
            XAResource xa = branch(c, x, "late/account", "too late");
            assertEquals(XAResource.XA_OK, xa.prepare(x));
            c.restart();
            advanceBoth(serverClock, adapterTime, Duration.ofSeconds(40));
            assertTrue(c.leases().inspect("late/account", 1).get(0).holders().isEmpty(),
                    "the hold ended, and the leases with it");
            XAResource recovered = c.mcf().createManagedConnection(null, null).getXAResource();
            XAException e = assertThrows(XAException.class, () -> recovered.commit(x, false));
            assertEquals(XAException.XA_HEURRB, e.errorCode);
            assertTrue(e.getMessage().contains("its leases ended with the restart"), e.getMessage());
            assertTrue(c.messages().isEmpty(), "never written late");
            assertEquals(1, c.metrics().getHeuristicBranches().length, "listed until forgotten");
            recovered.forget(x);
            assertEquals(0, c.metrics().getHeuristicBranches().length);
        }
    }

    @Test
    void badRemoteSettingsFailTheDeployment() throws Exception {
        Path root = RemoteModeProbe.freshRoot("remote-bad");
        ResourceException e = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> RemoteModeProbe.start(root, time, mcf -> mcf.setRemoteOptions("tokenFile")));
        assertTrue(e.getMessage().contains("RemoteOptions entry 'tokenFile' is not key=value"), e.getMessage());
        ResourceException none = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> RemoteModeProbe.start(root, time, mcf -> mcf.setLeaseService("remote:")));
        assertTrue(none.getMessage().contains("names no server"), none.getMessage());
    }
}
