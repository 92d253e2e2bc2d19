package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Downgrade protection: a client that pinned a lease server's keys (it signed) refuses that server once it stops
 * signing. The server is restarted on the same ports and state directory with signing off ({@code --no-signing}):
 * the clients of both transports that took witnessed leases before get no lease from it (the grant without a witness
 * is refused with an error that says why, and given back to the server), while a new client, which never saw the
 * server sign, takes leases without witnesses as before.
 */
class SigningDowngradeTest {
    private static final HolderId ME = new HolderId("signing-downgrade-test", "t1");

    private final Path state = Path.of("target", "signing-downgrade-" + System.nanoTime());
    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private <T extends AutoCloseable> T closeLater(T c) {
        return closing.later(c);
    }

    private static InetSocketAddress loopback(int port) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    private LeaseServer start(int port, int socketPort, ServerConfig.Signing signing) throws Exception {
        ServerConfig.SocketSettings socket = ServerConfig.SocketSettings.loopback();
        return closeLater(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withListen(loopback(port)).withHttpListen(loopback(0)).withStateDir(state).withSigning(signing)
                .withSocket(new ServerConfig.SocketSettings(loopback(socketPort), socket.maxConnections(),
                        socket.writeTimeout(), socket.spinWait()))));
    }

    private RemoteLeaseService client(String address, RemoteClientConfig.Transport transport) {
        return closeLater(new RemoteLeaseService(RemoteClientConfig.builder(address).transport(transport)
                .callTimeout(Duration.ofSeconds(10)).build()));
    }

    /**
     * Waits up to a minute (the restarted server grants after its time mark's horizon) for a lease of five minutes:
     * longer than any wait here, so a grant nobody gives back would hold its name past the test.
     */
    private static LeaseRequest request(String name) {
        return LeaseRequest.builder(ME, name).waitFor(Duration.ofSeconds(60)).leaseFor(Duration.ofMinutes(5)).build();
    }

    @Test
    void aServerRestartedWithoutSigningIsRefusedByClientsThatPinnedItsKeys() throws Exception {
        LeaseServer signing = start(0, 0, ServerConfig.Signing.DEFAULT);
        String address = signing.address();
        int port = signing.port();
        int socketPort = signing.socketPort();
        List<RemoteLeaseService> pinned = new ArrayList<>();
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService c = client(address, transport);
            Lease lease = c.acquire(request("downgrade/before/" + transport));
            assertNotNull(lease.grants().get(0).witness(), "the signing server's grant carries a witness");
            c.release(lease, null, null);
            pinned.add(c);
        }
        signing.close();

        LeaseServer unsigned = start(port, socketPort, ServerConfig.Signing.OFF);
        assertEquals(address, unsigned.address(), "the same address");
        List<String> refused = new ArrayList<>();
        for (RemoteLeaseService c : pinned) {
            // The first acquisition reaches the server (its grant is refused), the second is refused at once.
            for (int attempt = 0; attempt < 2; attempt++) {
                String name = "downgrade/after/" + pinned.indexOf(c) + "/" + attempt;
                LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                        () -> c.acquire(request(name)), "a client that pinned the keys takes no unsigned lease");
                assertTrue(e.getMessage().contains("lease server " + address) && e.getMessage().contains(
                        "but this client pinned its keys") && e.getMessage().contains("--no-signing"), e.getMessage());
                refused.add(name);
            }
        }
        // A client that never saw the server sign takes leases, without witnesses, as before; the names whose grants
        // were refused are free (given back, not held for the five minutes they were granted for).
        RemoteLeaseService fresh = client(address, RemoteClientConfig.Transport.GRPC);
        for (String name : refused) {
            Lease lease = fresh.acquire(LeaseRequest.builder(ME, name).waitFor(Duration.ofSeconds(30)).build());
            assertNull(lease.grants().get(0).witness());
            fresh.release(lease, null, null);
        }
    }

    /**
     * The periodic clock check alone finds the downgrade: clients that pinned the keys and measure the clock every
     * 200 ms ask the restarted server for nothing else, log {@code LEASEHOLD-8114} with the check's reason, and then
     * refuse an acquisition before it is sent (the server never granted the name).
     */
    @Test
    void theClockCheckAloneFindsADowngradeAndAcquisitionsAreRefusedBeforeTheyAreSent() throws Exception {
        LeaseServer signing = start(0, 0, ServerConfig.Signing.DEFAULT);
        String address = signing.address();
        List<RemoteLeaseService> pinned = new ArrayList<>();
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService c = closeLater(new RemoteLeaseService(RemoteClientConfig.builder(address)
                    .transport(transport).callTimeout(Duration.ofSeconds(10)).clockSyncInterval(Duration.ofMillis(200))
                    .build()));
            Lease lease = c.acquire(request("check/before/" + transport));
            assertNotNull(lease.grants().get(0).witness());
            c.release(lease, null, null);
            pinned.add(c);
        }
        String reason = "serves no keys and answers that it signs nothing";
        List<LogRecord> logged;
        try (LogCapture clockLog = LogCapture.of("org.leasehold.remote.SignedClock")) {
            logged = clockLog.records();
            int port = signing.port();
            int socketPort = signing.socketPort();
            signing.close();
            start(port, socketPort, ServerConfig.Signing.OFF);
            long until = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (logged.stream().filter(r -> r.getMessage().startsWith("LEASEHOLD-8114")
                    && r.getMessage().contains(reason)).count() < pinned.size() && System.nanoTime() < until) {
                Thread.sleep(50);
            }
        }
        assertTrue(logged.stream().filter(r -> r.getLevel() == Level.WARNING
                && r.getMessage().startsWith("LEASEHOLD-8114") && r.getMessage().contains(reason)).count()
                >= pinned.size(), "each client's clock check found the downgrade: " + logged.stream().map(LogRecord::getMessage)
                        .toList());
        RemoteLeaseService fresh = client(address, RemoteClientConfig.Transport.GRPC);
        for (RemoteLeaseService c : pinned) {
            String name = "check/after/" + pinned.indexOf(c);
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> c.acquire(request(name)));
            assertTrue(e.getMessage().contains(reason) && e.getMessage().contains("but this client pinned its keys"),
                    e.getMessage());
            for (NameStatus st : fresh.inspect(name, 10)) {
                assertEquals(List.of(), st.history(), "never granted: " + st);
                assertEquals(List.of(), st.holders(), "never granted: " + st);
            }
        }
    }
}
