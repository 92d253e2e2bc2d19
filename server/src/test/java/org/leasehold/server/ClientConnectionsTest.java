package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * A client with several connections to one server ({@code connections}): its calls spread over all of them, a name's
 * calls always take the same one (the server's per-connection bound on waiters sees them together), and waiting
 * requests are still handed the name in FIFO order. The server runs in this JVM on a loopback port chosen by the OS.
 */
class ClientConnectionsTest {
    private static final Pattern CONNECTIONS = Pattern.compile("(?m)^leasehold_connections (\\S+)$");

    private LeaseServer server;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withLimits(1_000, 3, 1_000, 64 * 1024)
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
    }

    @AfterEach
    void stop() throws Exception {
        server.close();
    }

    private double openConnections() throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.httpPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        Matcher m = CONNECTIONS.matcher(r.body());
        assertTrue(m.find(), r.body());
        return Double.parseDouble(m.group(1));
    }

    @Test
    void callsSpreadOverEveryConnection() throws Exception {
        // HTTP/2 connections (the gauge counts connections of both transports; on the socket transport, the default,
        // the client's gRPC connection for everything else would be a fifth).
        try (RemoteLeaseService client = new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                .transport(RemoteClientConfig.Transport.GRPC).connections(4).build())) {
            HolderId me = new HolderId("connections", "t1");
            for (int i = 0; i < 64; i++) {
                Lease l = client.acquire(LeaseRequest.builder(me, "account/" + i).build());
                assertEquals("account/" + i, l.grants().get(0).name());
                client.release(l, null, null);
            }
            assertEquals(4.0, openConnections(), "64 names over 4 connections use them all");
        }
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (openConnections() > 0 && System.nanoTime() < end) {
            Thread.sleep(20);
        }
        assertEquals(0.0, openConnections(), "closing the client closes every connection");
    }

    @Test
    void aNamesCallsTakeOneConnectionAndItsWaitersAreServedInOrder() throws Exception {
        try (RemoteLeaseService client = new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                .connections(4).build())) {
            Lease first = client.acquire(LeaseRequest.builder(new HolderId("connections", "holder"), "tenant/hot")
                    .build());
            List<CompletableFuture<Lease>> waiters = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                waiters.add(client.acquireAsync(LeaseRequest.builder(new HolderId("connections", "w" + i), "tenant/hot")
                        .waitFor(Duration.ofSeconds(30)).build()));
                // Each waits on the server before the next is sent, so their queue order is known.
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (client.inspect("tenant/hot", 10).get(0).waiters().size() < i + 1 && System.nanoTime() < end) {
                    Thread.sleep(5);
                }
            }
            // Spread over four connections, a fourth waiter would have a connection of its own; on one, the server's
            // bound of three waiters per connection refuses it.
            ExecutionException refused = assertThrows(ExecutionException.class, () -> client.acquireAsync(
                    LeaseRequest.builder(new HolderId("connections", "w3"), "tenant/hot").waitFor(Duration.ofSeconds(30))
                            .build()).get(10, TimeUnit.SECONDS));
            assertTrue(refused.getCause() instanceof LeaseBusyException, refused.toString());
            assertTrue(refused.getCause().getMessage().contains("this connection already has 3 waiting"),
                    refused.getCause().getMessage());

            Lease previous = first;
            for (int i = 0; i < 3; i++) {
                client.release(previous, null, null);
                Lease next = waiters.get(i).get(10, TimeUnit.SECONDS);
                assertEquals("w" + i, next.holder().owner(), "FIFO hand-over");
                assertTrue(next.grants().get(0).generation() > previous.grants().get(0).generation());
                for (int j = i + 1; j < 3; j++) {
                    assertFalse(waiters.get(j).isDone(), "w" + j + " still waits");
                }
                previous = next;
            }
            client.release(previous, null, null);
        }
    }

    @Test
    void aBadConnectionCountIsRefusedSayingWhatIsAccepted() {
        for (String bad : List.of("0", "65", "-1")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> RemoteClientConfig.fromProperties(Map.of("servers", "127.0.0.1:7420", "connections", bad)));
            assertTrue(e.getMessage().contains("connections is " + bad + "; use 1 to 64"), e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RemoteClientConfig.fromProperties(Map.of("servers", "127.0.0.1:7420", "connections", "four")));
        assertTrue(e.getMessage().contains("connections 'four' is not an integer"), e.getMessage());
        assertEquals(2, RemoteClientConfig.fromProperties(Map.of("servers", "127.0.0.1:7420", "connections", " 2 "))
                .connections());
        assertEquals(1, RemoteClientConfig.builder("127.0.0.1:7420").build().connections(), "one by default");
    }
}
