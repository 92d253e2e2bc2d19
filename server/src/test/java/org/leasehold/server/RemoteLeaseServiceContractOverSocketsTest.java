package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * The lease service contract through the socket transport ({@code --socket-listen}, {@code transport=socket}) with two
 * connections, against a real server process on a test clock: the same answers as on gRPC, with each calling thread
 * doing its own socket I/O.
 */
class RemoteLeaseServiceContractOverSocketsTest extends RemoteLeaseServiceContractTest {
    private static final Pattern OPENED = Pattern.compile("(?m)^leasehold_socket_connections_opened_total (\\S+)$");

    @Override
    protected int connections() {
        return 2;
    }

    @Override
    protected RemoteClientConfig.Transport transport() {
        return RemoteClientConfig.Transport.SOCKET;
    }

    private static double socketConnectionsOpened() throws Exception {
        return socketConnectionsOpened(server);
    }

    private static double socketConnectionsOpened(ServerProcess server) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                URI.create("http://127.0.0.1:" + server.httpPort() + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        Matcher m = OPENED.matcher(r.body());
        assertTrue(m.find(), r.body());
        return Double.parseDouble(m.group(1));
    }

    /** The calls really take the socket transport: the server counts the client's connection there. */
    @Test
    void leaseCallsTakeTheSocketTransport() throws Exception {
        try (RemoteFixture f = (RemoteFixture) start(org.leasehold.contract.LeaseFixture.Settings.defaults())) {
            double before = socketConnectionsOpened();
            RemoteLeaseService client = f.client();
            Lease l = client.acquire(LeaseRequest.builder(new HolderId("sockets", "t1"), "socket/proof")
                    .leaseFor(Duration.ofSeconds(5)).build());
            client.release(l, null, null);
            assertEquals(before + 1, socketConnectionsOpened(), "one socket connection for the name's lane");
        }
    }

    /**
     * Without options on either end the lease calls take the socket transport: the server serves it by default (on the
     * host of its gRPC address, a free port it tells clients) and the client takes it by default.
     */
    @Test
    void theDefaultsAreTheSocketTransport() throws Exception {
        assertEquals(RemoteClientConfig.Transport.SOCKET, RemoteClientConfig.builder("127.0.0.1:7420").build().transport());
        try (ServerProcess plain = ServerProcess.start("socket-defaults", "--quiet-period=0s");
             RemoteLeaseService client = new RemoteLeaseService(RemoteClientConfig.builder(plain.address()).build())) {
            assertEquals(0.0, socketConnectionsOpened(plain));
            Lease l = client.acquire(LeaseRequest.builder(new HolderId("defaults", "t1"), "socket/defaults")
                    .leaseFor(Duration.ofSeconds(5)).build());
            client.release(l, null, null);
            assertEquals(1.0, socketConnectionsOpened(plain), "the default client's lease calls took the socket transport");
        }
    }
}
