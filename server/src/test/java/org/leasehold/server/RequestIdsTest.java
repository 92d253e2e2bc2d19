package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.NameStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.WithdrawRequest;

/**
 * Request ids are per session and unique while a request is open: an acquisition (or any other request) reusing the
 * id of a waiting acquisition of its session is refused in band, naming the id, on both transports; and the waiting
 * acquisitions the server counts (its gauge, and its {@code --max-waiters} limit) are exactly those still open, so
 * that sessions full of reused ids leave nothing behind: the gauge is back at 0 when they end, and another client's
 * waiting acquisition is granted.
 */
class RequestIdsTest {
    private static final int MAX_WAITERS = 10;
    private static final long ID = 7;

    private final List<AutoCloseable> closing = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();
    private LeaseServer server;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withLimits(MAX_WAITERS, 1_000, 1_000, 64 * 1024).withSocket(ServerConfig.SocketSettings.loopback())
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing) {
            c.close();
        }
        server.close();
    }

    private RawSession session(boolean socket) throws Exception {
        RawSession s = socket ? RawSession.socket(server.socketPort(), null) : RawSession.grpc(server.port(), null);
        closing.add(s);
        return s;
    }

    private RemoteLeaseService client(RemoteClientConfig.Transport transport) {
        RemoteLeaseService c = new RemoteLeaseService(RemoteClientConfig.builder(server.address()).transport(transport)
                .callTimeout(Duration.ofSeconds(10)).build());
        closing.add(c);
        return c;
    }

    private static SessionRequest acquire(long id, String owner, String name, Duration wait) {
        return SessionRequest.newBuilder().setAcquire(AcquireRequest.newBuilder().setRequestId(id)
                .setHolder(Holder.newBuilder().setProcess("ids-test").setOwner(owner)).addNames(name)
                .setWaitMicros(wait.toNanos() / 1_000)).build();
    }

    private static SessionRequest echo(long id) {
        return SessionRequest.newBuilder().setRequestId(id).setEcho(EchoRequest.getDefaultInstance()).build();
    }

    private double waitingGauge() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort()
                + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        for (String line : r.body().split("\n")) {
            if (line.startsWith("leasehold_waiting_acquisitions ")) {
                return Double.parseDouble(line.substring(line.indexOf(' ') + 1).trim());
            }
        }
        throw new AssertionError("no leasehold_waiting_acquisitions in the metrics:\n" + r.body());
    }

    private static int waiters(RemoteLeaseService leases, String name) {
        for (NameStatus s : leases.inspect(name, 1)) {
            if (s.name().equals(name)) {
                return s.waiters().size();
            }
        }
        return 0;
    }

    /** Polls the metrics until the gauge reads {@code expected}: session ends are handled on the server's threads. */
    private void awaitGauge(double expected) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        double now;
        while ((now = waitingGauge()) != expected) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("leasehold_waiting_acquisitions stayed at " + now + ", not " + expected);
            }
            Thread.sleep(10);
        }
    }

    private static void assertDuplicate(SessionReply r, long id) {
        assertEquals(SessionReply.ResultCase.ERROR, r.getResultCase(), r.toString());
        LeaseError e = r.getError();
        assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
        assertEquals(InvalidLeaseRequestException.Reason.DUPLICATE_REQUEST_ID.name(), e.getReason());
        assertTrue(e.getMessage().contains("request id " + id + " is already taken"), e.getMessage());
    }

    @Test
    void sessionsFullOfReusedIdsLeaveNoPhantomWaitersAndOtherClientsWaitsAreGranted() throws Exception {
        RemoteLeaseService holderClient = client(RemoteClientConfig.Transport.GRPC);
        String name = "ids/busy";
        Lease held = holderClient.acquire(LeaseRequest.builder(new HolderId("ids-test", "holder"), name).build());
        // Rounds of sessions, alternating transports, each with one waiting acquisition and duplicates of its id. Had
        // each duplicate left a waiter counted, 4 rounds would fill the server's 10 places for good.
        int duplicates = 4;
        for (int round = 0; round < 4; round++) {
            boolean socket = round % 2 == 1;
            try (RawSession s = session(socket)) {
                List<SessionRequest> batch = new ArrayList<>();
                for (int i = 0; i <= duplicates; i++) {
                    batch.add(acquire(ID, "w" + round + "-" + i, name, Duration.ofMinutes(1)));
                }
                batch.add(echo(ID)); // any request reusing the id is refused while the acquisition waits
                batch.add(echo(1_000));
                s.send(batch.toArray(SessionRequest[]::new));
                List<SessionReply> replies = s.repliesUpTo(1_000);
                assertEquals(duplicates + 2, replies.size(), s.transport() + ": " + replies);
                for (int i = 0; i <= duplicates; i++) {
                    assertDuplicate(replies.get(i), ID);
                }
                assertEquals(1, waiters(holderClient, name), s.transport() + ": the first acquisition waits, alone");
                assertEquals(1.0, waitingGauge(), s.transport() + ": the gauge counts the one waiting");
            }
        }
        awaitGauge(0);
        assertEquals(0, waiters(holderClient, name));

        // Another client's waiting acquisition, on each transport: it is admitted, and granted when the name is free.
        for (RemoteClientConfig.Transport t : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService other = client(t);
            CompletableFuture<Lease> waiting = other.acquireAsync(LeaseRequest.builder(new HolderId("ids-test", "other-"
                    + t), name).waitFor(Duration.ofMinutes(1)).build());
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (waiters(holderClient, name) != 1 && !waiting.isDone()) {
                assertTrue(System.nanoTime() - end < 0, "the acquisition never queued");
                Thread.sleep(10);
            }
            assertEquals(1.0, waitingGauge());
            holderClient.release(held, null, null);
            Lease granted = waiting.get(10, TimeUnit.SECONDS);
            assertEquals(name, granted.grants().get(0).name());
            other.release(granted, null, null);
            held = holderClient.acquire(LeaseRequest.builder(new HolderId("ids-test", "holder"), name).build());
            awaitGauge(0);
        }
    }

    @Test
    void anIdIsFreeAgainOnceItsRequestIsAnsweredAndIdsArePerSession() throws Exception {
        for (boolean socket : new boolean[] {false, true}) {
            String name = "ids/free-" + socket;
            try (RawSession a = session(socket); RawSession b = session(socket)) {
                // The same id in two sessions: two requests, both answered (one granted, one waiting).
                a.send(acquire(ID, "a", name, Duration.ZERO));
                assertTrue(a.reply(ID).hasLease());
                b.send(acquire(ID, "b", name, Duration.ofMinutes(1)));
                b.send(echo(2));
                b.reply(2);
                // Withdrawn, the id is free again in b's session.
                b.send(SessionRequest.newBuilder().setWithdraw(WithdrawRequest.newBuilder().setRequestId(ID)).build());
                List<SessionReply> rs = new ArrayList<>();
                rs.add(b.reply(ID));
                rs.add(b.reply(ID));
                assertTrue(rs.stream().anyMatch(r -> r.getResultCase() == SessionReply.ResultCase.WITHDRAWN
                        && r.getWithdrawn()), rs.toString());
                b.send(acquire(ID, "b", name + "/other", Duration.ZERO));
                assertTrue(b.reply(ID).hasLease(), "the id is free again once its request is answered");
            }
        }
        awaitGauge(0);
    }
}
