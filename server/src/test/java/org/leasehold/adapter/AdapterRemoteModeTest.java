package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jakarta.resource.ResourceException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.server.LeaseServer;
import org.leasehold.server.ServerConfig;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.SystemTimeSource;

/**
 * The resource adapter in remote mode: two adapters (two "servers" of a fleet, with their own writer identities) on
 * one bag store log take their leases from one lease server, so they may share the log, which embedded mode refuses.
 * The first reaches the server over gRPC, the second over its socket transport.
 */
class AdapterRemoteModeTest {
    private LeaseServer server;
    private SystemTimeSource time;
    private AdapterFixture a;
    private AdapterFixture b;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withSocket(ServerConfig.SocketSettings.loopback()));
        time = new SystemTimeSource("adapter-remote-test");
        Path root = AdapterFixture.freshRoot("remote");
        String mode = "remote:" + server.address();
        a = new AdapterFixture(root, time, mcf -> {
            mcf.setLeaseService(mode);
            mcf.setWriterId("fleet-a");
            mcf.setRemoteOptions("callTimeout=5s");
        });
        b = new AdapterFixture(root, time, mcf -> {
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
        a.tm.begin();
        Lease first;
        try (LeaseConnection c = a.connection()) {
            first = c.acquire("shared/account");
            c.append(bytes("from a"));
        }
        CountDownLatch asking = new CountDownLatch(1);
        CompletableFuture<Void> fromB = CompletableFuture.runAsync(() -> {
            try {
                b.tm.begin();
                try (LeaseConnection c = b.connection()) {
                    asking.countDown();
                    c.acquire("shared/account");
                    c.append(bytes("from b"));
                }
                b.tm.commit();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(asking.await(10, TimeUnit.SECONDS));
        Thread.sleep(200);
        assertFalse(fromB.isDone(), "the second server waits for the lease the first holds");
        a.tm.commit();
        fromB.get(30, TimeUnit.SECONDS);

        List<Message> log = a.messages();
        assertEquals(List.of("from a", "from b"), log.stream()
                .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
        assertEquals(List.of("fleet-a", "fleet-b"), log.stream().map(Message::writer).toList());
        assertTrue(log.get(1).timestamp().isAfter(log.get(0).timestamp()));
        assertTrue(log.get(1).leases().get(0).generation() > first.grant("shared/account").generation());
        NameStatus status = a.mcf.runtime().leases().inspect("shared/account", 1).get(0);
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
             AdapterFixture c = new AdapterFixture(AdapterFixture.freshRoot("remote-skew"), adapterTime, mcf -> {
                 mcf.setLeaseService("remote:" + skewed.address());
                 mcf.setWriterId("fleet-skewed");
             })) {
            c.tm.begin();
            try (LeaseConnection conn = c.connection()) {
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> conn.acquire("skewed/account"));
                assertTrue(e.getMessage().contains("the clock of lease server " + skewed.address() + " is 2000.000 ms "
                        + "ahead of this server's"), e.getMessage());
                assertTrue(e.getMessage().contains("beyond MaxClockErrorMillis (500 ms)"), e.getMessage());
                assertTrue(e.getMessage().contains("Synchronize the clocks"), e.getMessage());
            }
            c.tm.rollback();
            assertEquals(1, c.mcf.runtime().metrics().getClockRefusals());
            assertTrue(c.mcf.runtime().leases().inspect("skewed/", 10).isEmpty(), "nothing was asked of the server");

            // The adapter's clock catches up to 300 ms behind, within the bound: the next acquisition measures again
            // and proceeds. The lease is writable from the server's grant time, which this clock has not reached: the
            // commit waits for it (no longer than the bound) instead of failing.
            adapterTime.advance(Duration.ofMillis(1_700));
            c.tm.begin();
            try (LeaseConnection conn = c.connection()) {
                Lease lease = conn.acquire("skewed/account");
                assertTrue(lease.writableFrom().isAfter(adapterTime.now()), lease.writableFrom() + " " + adapterTime.now());
                conn.append(bytes("once the clocks agree"));
            }
            jakarta.transaction.Transaction tx = c.tm.suspend();
            CompletableFuture<Void> commit = CompletableFuture.runAsync(() -> {
                try {
                    c.tm.resume(tx);
                    c.tm.commit();
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
            assertEquals(1, c.mcf.runtime().metrics().getClockRefusals());
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
        try (AdapterFixture c = new AdapterFixture(AdapterFixture.freshRoot("remote-gone"), adapterTime, mcf -> {
            mcf.setLeaseService("remote:" + address);
            mcf.setWriterId("fleet-gone");
            mcf.setRemoteOptions("callTimeout=2s");
        })) {
            gone.close();
            adapterTime.advance(Duration.ofMinutes(45));
            c.tm.begin();
            try (LeaseConnection conn = c.connection()) {
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> conn.acquire("gone/account"));
                assertTrue(e.getMessage().contains("the clock of lease server " + address + " cannot be measured"),
                        e.getMessage());
                assertTrue(e.getMessage().contains("does not show it within MaxClockErrorMillis (500 ms)"), e.getMessage());
            } finally {
                c.tm.rollback();
            }
            assertEquals(1, c.mcf.runtime().metrics().getClockRefusals());
        } finally {
            gone.close();
        }
    }

    @Test
    void badRemoteSettingsFailTheDeployment() throws Exception {
        Path root = AdapterFixture.freshRoot("remote-bad");
        ResourceException e = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> new AdapterFixture(root, time, mcf -> mcf.setRemoteOptions("tokenFile")));
        assertTrue(e.getMessage().contains("RemoteOptions entry 'tokenFile' is not key=value"), e.getMessage());
        ResourceException none = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> new AdapterFixture(root, time, mcf -> mcf.setLeaseService("remote:")));
        assertTrue(none.getMessage().contains("names no server"), none.getMessage());
    }
}
