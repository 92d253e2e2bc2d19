package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import javax.net.ssl.SSLContext;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.google.protobuf.ByteString;
import com.google.protobuf.MessageLite;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.config.Check;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SocketTls;
import org.leasehold.wire.SpinWait;
import org.leasehold.wire.WireFrames;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.SocketHello;
import org.leasehold.wire.proto.SocketWelcome;

/**
 * The server's socket transport ({@code --socket-listen}, {@link SocketTransport}) against in-process servers on
 * loopback ports chosen by the OS, through raw sockets speaking its frames ({@link WireFrames}) and through clients set to
 * {@code transport=socket}. It proves that bad input (garbage, frames that are not a {@code SocketHello}, truncated and
 * oversized frames, an unknown protocol version, a malformed frame after the hello) is answered with an error and
 * closes only that connection; that tokens, ACLs, TLS and client certificates apply as on gRPC; that connections beyond
 * {@code --socket-max-connections} are refused while the others keep working, and one that never says hello only
 * until the handshake timeout; that a client which stops reading (plain text or TLS) is closed after the write timeout
 * without holding up other clients or keeping a name; that a request over the size limit fails naming the limit; that
 * a connection lost while waiting fails that acquisition, withdraws it on the server (nothing is granted twice) and is
 * reopened by the next call; and that many threads sharing one socket client all complete with a history that keeps
 * the lease invariants ({@link RecordedGrantChecker}). After each refusal the server still grants and releases for a
 * well-behaved client on the socket transport.
 */
class SocketTransportTest {
    private static final String TOKEN_APP = "app-token-0123456789abcdef";
    private static final String TOKEN_OPS = "ops-token-0123456789abcdef";
    private static final HolderId ME = new HolderId("socket-test", "t1");
    private static final Duration PROMPT = Duration.ofMillis(500);
    private static final int MESSAGE_LIMIT = 64 * 1024;

    private final Path dir = Path.of("target", "socket-transport-" + System.nanoTime());
    private final Closing closing = new Closing();
    private final List<LeaseServer> servers = new ArrayList<>();
    private final HttpClient http = HttpClient.newHttpClient();
    private LeaseServer server;
    /** The CA that {@link #socketClient()} trusts, for a test whose server uses TLS throughout; null for plain text. */
    private Path trust;

    @AfterEach
    void stop() throws Exception {
        closing.closeAll();
        for (LeaseServer s : servers) {
            s.close();
        }
    }

    // ------------------------------------------------------------------------------------------------ fixtures

    private static ServerConfig base() {
        return ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withLimits(100_000, 1_000, 1_000, MESSAGE_LIMIT)
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    }

    private static ServerConfig.SocketSettings socket(int maxConnections, Duration writeTimeout) {
        return socket(maxConnections, writeTimeout, SpinWait.DEFAULT);
    }

    private static ServerConfig.SocketSettings socket(int maxConnections, Duration writeTimeout, Duration spinWait) {
        return new ServerConfig.SocketSettings(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), maxConnections,
                writeTimeout, spinWait);
    }

    private LeaseServer start(ServerConfig config) throws IOException {
        server = LeaseServer.start(config);
        servers.add(server);
        assertTrue(server.socketPort() > 0, "the socket transport listens");
        return server;
    }

    /** Clients on the socket transport, trusting {@link #trust} if set. */
    private RemoteClientConfig.Builder socketClient() {
        RemoteClientConfig.Builder b = RemoteClientConfig.builder(server.address())
                .transport(RemoteClientConfig.Transport.SOCKET).callTimeout(Duration.ofSeconds(5));
        return trust == null ? b : b.trustCertificates(trust);
    }

    private RemoteLeaseService client(RemoteClientConfig.Builder b) {
        RemoteLeaseService c = new RemoteLeaseService(b.build());
        closing.add(c);
        return c;
    }

    private <T extends AutoCloseable> T closeLater(T c) {
        return closing.later(c);
    }

    /** The server still grants and releases, on the socket transport, for a fresh well-behaved client. */
    private void assertStillServing(RemoteClientConfig.Builder b, String name) throws Exception {
        double opened = socketConnectionsOpened();
        try (RemoteLeaseService ok = new RemoteLeaseService(b.build())) {
            Lease l = ok.acquire(LeaseRequest.builder(new HolderId("probe", "p" + System.nanoTime()), name).build());
            assertEquals(name, l.grants().get(0).name());
            assertTrue(ok.release(l, null, null).compareTo(l.grantedAt()) >= 0);
        }
        assertEquals(opened + 1, socketConnectionsOpened(), "the probe took the socket transport");
    }

    private void assertStillServing() throws Exception {
        assertStillServing(socketClient(), "probe/" + System.nanoTime());
    }

    private String metrics() throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.httpPort()
                + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        return r.body();
    }

    /** The value of one series of the metrics endpoint, 0 if absent. */
    private double metric(String series) throws Exception {
        for (String line : metrics().split("\n")) {
            if (line.startsWith(series + " ")) {
                return Double.parseDouble(line.substring(series.length() + 1).trim());
            }
        }
        return 0;
    }

    private double refused(String reason) throws Exception {
        return metric("leasehold_refused_calls_total{reason=\"" + reason + "\"}");
    }

    private double socketConnectionsOpened() throws Exception {
        return metric("leasehold_socket_connections_opened_total");
    }

    private static void await(String what, Duration within, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + within.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("not within " + within + ": " + what);
            }
            Thread.sleep(10);
        }
    }

    private static NameStatus status(RemoteLeaseService leases, String name) {
        return leases.inspect(name, 1).stream().filter(s -> s.name().equals(name)).findFirst().orElse(null);
    }

    private static int waiters(RemoteLeaseService leases, String name) {
        NameStatus s = status(leases, name);
        return s == null ? 0 : s.waiters().size();
    }

    private static int holders(RemoteLeaseService leases, String name) {
        NameStatus s = status(leases, name);
        return s == null ? 0 : s.holders().size();
    }

    private Raw raw() throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.socketPort()), 5_000);
        return new Raw(s);
    }

    private static SessionRequest acquire(long id, String owner, String name, Duration wait) {
        return SessionRequest.newBuilder().setAcquire(AcquireRequest.newBuilder().setRequestId(id)
                .setHolder(Holder.newBuilder().setProcess("socket-raw").setOwner(owner)).addNames(name)
                .setWaitMicros(wait.toNanos() / 1_000)).build();
    }

    private static SessionRequest withLeaseTime(SessionRequest acquire, Duration leaseTime) {
        return acquire.toBuilder().setAcquire(acquire.getAcquire().toBuilder().setLeaseTimeMicros(leaseTime.toNanos() / 1_000))
                .build();
    }

    private static SessionRequest release(long id, SessionReply granted) {
        return SessionRequest.newBuilder().setRequestId(id).setRelease(ReleaseRequest.newBuilder()
                .setLease(ProtoCodec.ref(ProtoCodec.lease(granted.getLease())))).build();
    }

    private static SessionRequest echo(long id, ByteString payload) {
        return SessionRequest.newBuilder().setRequestId(id).setEcho(EchoRequest.newBuilder().setPayload(payload)).build();
    }

    private static SessionRequests batch(SessionRequest... requests) {
        return SessionRequests.newBuilder().addAllRequests(List.of(requests)).build();
    }

    private static SocketHello hello(int version, String token) {
        SocketHello.Builder b = SocketHello.newBuilder().setProtocolVersion(version);
        if (token != null) {
            b.setToken(token);
        }
        return b.build();
    }

    /** A raw connection to the socket transport: frames written and read by the test itself. */
    private final class Raw implements AutoCloseable {
        final Socket socket;
        final OutputStream out;
        final WireFrames.Reader in;
        private final Deque<SessionReply> unread = new ArrayDeque<>();

        Raw(Socket socket) throws IOException {
            this.socket = socket;
            closeLater(socket);
            socket.setSoTimeout(5_000);
            socket.setTcpNoDelay(true);
            this.out = socket.getOutputStream();
            this.in = new WireFrames.Reader(socket.getInputStream(), 16 * 1024 * 1024);
        }

        void write(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
        }

        void send(MessageLite message) throws IOException {
            write(WireFrames.encode(message));
        }

        SocketWelcome welcome() throws IOException {
            return in.next(SocketWelcome.parser(), "SocketWelcome");
        }

        /** Says hello and expects to be welcomed. */
        SocketWelcome helloOk(String token) throws IOException {
            send(hello(Protocol.VERSION, token));
            SocketWelcome w = welcome();
            assertFalse(w.hasError(), w.toString());
            assertEquals(Protocol.VERSION, w.getProtocolVersion());
            return w;
        }

        /** The next answer to {@code id}, keeping the others for later. */
        SessionReply reply(long id) throws IOException {
            for (SessionReply r : unread) {
                if (r.getRequestId() == id) {
                    unread.remove(r);
                    return r;
                }
            }
            while (true) {
                SessionReplies batch = in.next(SessionReplies.parser(), "SessionReplies");
                SessionReply found = null;
                for (SessionReply r : batch.getRepliesList()) {
                    if (r.getRequestId() == id && found == null) {
                        found = r;
                    } else {
                        unread.add(r);
                    }
                }
                if (found != null) {
                    return found;
                }
            }
        }

        /** Grants {@code name} and releases it on this connection. */
        void acquireAndRelease(long id, String name) throws IOException {
            send(batch(acquire(id, "raw", name, Duration.ZERO)));
            SessionReply granted = reply(id);
            assertTrue(granted.hasLease(), granted.toString());
            send(batch(release(id + 1, granted)));
            SessionReply released = reply(id + 1);
            assertEquals(SessionReply.ResultCase.ENDED_AT_MICROS, released.getResultCase(), released.toString());
        }

        /** The server has closed the connection: the next read sees its end (or a reset), not a time-out. */
        void assertClosedByServer() {
            IOException e = assertThrows(IOException.class, () -> in.next(SessionReplies.parser(), "SessionReplies"),
                    "the server closed the connection");
            assertTrue(e instanceof EOFException || e instanceof SocketException, e.toString());
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    // ------------------------------------------------------------------------------------------------ 1. bad input

    @Test
    void badFramesBeforeTheHelloAreAnsweredWithAWelcomeErrorAndCloseOnlyThatConnection() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        // A well-formed connection first: welcomed as the anonymous principal of a server without authentication.
        try (Raw good = raw()) {
            assertEquals(CallGate.ANONYMOUS, good.helloOk(null).getPrincipal());
            good.acquireAndRelease(1, "bad/good");
        }

        // A frame whose bytes are not a protobuf message at all.
        double malformed = refused("malformed");
        try (Raw r = raw()) {
            r.write(new byte[] {0, 0, 0, 3, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            LeaseError e = r.welcome().getError();
            assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
            assertTrue(e.getMessage().contains("the first frame must be a SocketHello")
                    && e.getMessage().contains("not a valid SocketHello"), e.getMessage());
            r.assertClosedByServer();
        }
        assertEquals(malformed + 1, refused("malformed"));

        // Text (an HTTP request) instead of frames: its first four bytes announce a frame of about 1.2 GB.
        double tooLarge = refused("too_large");
        try (Raw r = raw()) {
            r.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            LeaseError e = r.welcome().getError();
            assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
            assertTrue(e.getMessage().contains("the first frame must be a SocketHello")
                    && e.getMessage().contains("is the peer speaking Leasehold's socket protocol"), e.getMessage());
            r.assertClosedByServer();
        }

        // A frame announcing one byte more than --max-message-bytes: refused before its body is sent.
        try (Raw r = raw()) {
            int n = MESSAGE_LIMIT + 1;
            r.write(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
            LeaseError e = r.welcome().getError();
            assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
            assertTrue(e.getMessage().contains("announces " + n + " bytes")
                    && e.getMessage().contains("limit of " + MESSAGE_LIMIT), e.getMessage());
            r.assertClosedByServer();
        }
        assertEquals(tooLarge + 2, refused("too_large"));

        // A frame announcing 100 bytes of which 10 come, then the end of the client's output.
        double truncated = refused("truncated");
        try (Raw r = raw()) {
            byte[] partial = new byte[14];
            partial[3] = 100;
            r.write(partial);
            r.socket.shutdownOutput();
            LeaseError e = r.welcome().getError();
            assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
            assertTrue(e.getMessage().contains("ended inside a frame, after 14 byte(s)"), e.getMessage());
            r.assertClosedByServer();
        }
        assertEquals(truncated + 1, refused("truncated"));

        // A frame holding another message than a SocketHello (a SessionRequests with an acquisition): it carries no
        // protocol version, so it is refused as a hello of version 0.
        double version = refused("protocol_version");
        try (Raw r = raw()) {
            r.send(batch(acquire(1, "early", "bad/early", Duration.ZERO)));
            LeaseError e = r.welcome().getError();
            assertEquals(LeaseError.Kind.INVALID, e.getKind(), e.toString());
            assertTrue(e.getMessage().contains("protocol version " + Protocol.VERSION), e.getMessage());
            r.assertClosedByServer();
        }

        // A hello of an unknown protocol version.
        try (Raw r = raw()) {
            r.send(hello(99, null));
            SocketWelcome w = r.welcome();
            assertEquals(LeaseError.Kind.INVALID, w.getError().getKind(), w.toString());
            assertEquals(Protocol.VERSION, w.getProtocolVersion(), "the welcome names the version the server speaks");
            assertTrue(w.getError().getMessage().contains("speaks Leasehold protocol version 1")
                    && w.getError().getMessage().contains("asked for version 99"), w.getError().getMessage());
            r.assertClosedByServer();
        }
        assertEquals(version + 2, refused("protocol_version"));
        assertEquals(0, holders(client(socketClient()), "bad/early"), "nothing of the refused connection was granted");
        assertStillServing();
    }

    @Test
    void aBadFrameAfterTheHelloIsAnsweredWithAConnectionErrorOfRequestIdZeroAndWithdrawsItsWaiters() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        RemoteLeaseService holder = client(socketClient());
        Lease held = holder.acquire(LeaseRequest.builder(ME, "bad/held").build());
        double malformed = refused("malformed");
        try (Raw r = raw()) {
            r.helloOk(null);
            // A request that waits, and one answered at once, before the bad frame.
            r.send(batch(acquire(7, "waiter", "bad/held", Duration.ofSeconds(60)),
                    echo(8, ByteString.copyFromUtf8("before"))));
            assertEquals("before", r.reply(8).getEcho().toStringUtf8());
            await("the raw connection's request waits on the server", Duration.ofSeconds(5),
                    () -> waiters(holder, "bad/held") == 1);
            // A frame of 5 bytes that do not parse as SessionRequests.
            r.write(new byte[] {0, 0, 0, 5, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            SessionReplies closing = r.in.next(SessionReplies.parser(), "SessionReplies");
            assertEquals(1, closing.getRepliesCount(), closing.toString());
            SessionReply error = closing.getReplies(0);
            assertEquals(0, error.getRequestId(), "a connection-level error has request id 0");
            assertEquals(LeaseError.Kind.INVALID, error.getError().getKind(), error.toString());
            assertTrue(error.getError().getMessage().contains("bad frame and is closed")
                    && error.getError().getMessage().contains("not a valid SessionRequests"), error.toString());
            r.assertClosedByServer();
        }
        assertEquals(malformed + 1, refused("malformed"));
        await("the closed connection's waiting request is withdrawn", Duration.ofSeconds(5),
                () -> waiters(holder, "bad/held") == 0);
        holder.release(held, null, null);
        assertEquals(0, holders(holder, "bad/held"), "nothing was granted to the closed connection");

        // After the hello, a frame announcing more than the limit: also a connection error, then the end.
        double tooLarge = refused("too_large");
        try (Raw r = raw()) {
            r.helloOk(null);
            r.write(new byte[] {0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            SessionReply error = r.reply(0);
            assertEquals(LeaseError.Kind.INVALID, error.getError().getKind(), error.toString());
            assertTrue(error.getError().getMessage().contains("limit of " + MESSAGE_LIMIT), error.toString());
            r.assertClosedByServer();
        }
        assertEquals(tooLarge + 1, refused("too_large"));
        assertStillServing();
    }

    @Test
    void aRequestLargerThanTheServersLimitIsRefusedByTheClientNamingTheLimitAndDisturbsNoOtherCall() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        RemoteLeaseService leases = client(socketClient());
        leases.release(leases.acquire(LeaseRequest.builder(ME, "big/warm-up").build()), null, null);
        // 1,000 names of 100 bytes: within the engine's limits, but a frame of about 100 KB, over the 64 KiB limit.
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            names.add(String.format("big/%04d/%s", i, "x".repeat(91)));
        }
        // Another call of the same client waits on the same connection meanwhile.
        RemoteLeaseService other = client(socketClient());
        Lease held = other.acquire(LeaseRequest.builder(ME, "big/held").build());
        CompletableFuture<Lease> waiting = leases.acquireAsync(LeaseRequest.builder(new HolderId("socket-test", "w"),
                "big/held").waitFor(Duration.ofSeconds(60)).build());
        await("the other call waits on the server", Duration.ofSeconds(5), () -> waiters(other, "big/held") == 1);
        double tooLarge = refused("too_large");
        double opened = socketConnectionsOpened();
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.acquire(LeaseRequest.builder(ME, names).build()));
        assertTrue(e.getMessage().contains(MESSAGE_LIMIT + " bytes") && e.getMessage().contains("--max-message-bytes"),
                e.getMessage());
        assertEquals(tooLarge, refused("too_large"), "the client did not send it");
        assertEquals(0, holders(leases, names.get(0)), "nothing of the refused request is held");
        // The connection stays: the waiting call still waits, and is granted when the name is released.
        assertFalse(waiting.isDone());
        other.release(held, null, null);
        leases.release(waiting.get(10, TimeUnit.SECONDS), null, null);
        leases.release(leases.acquire(LeaseRequest.builder(ME, "big/after").build()), null, null);
        assertEquals(opened, socketConnectionsOpened(), "no connection was lost or opened");
        assertStillServing();
    }

    /**
     * A server shut down and started again on the same gRPC address (its socket port chosen anew): a waiting
     * acquisition is answered "unavailable" at the shutdown; the holder's idle connection is seen closed by the client's
     * background probe, so its next call finds the new socket port and is told "unavailable until T", the new server's
     * quiet period, not a transport error.
     */
    @Test
    void afterARestartTheClientFindsTheNewSocketPortAndIsToldUnavailableUntilTheQuietPeriodEnds() throws Exception {
        LeaseServer first = start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        RemoteLeaseService holder = client(socketClient());
        RemoteLeaseService waiter = client(socketClient());
        holder.acquire(LeaseRequest.builder(ME, "restart/1").leaseFor(Duration.ofSeconds(5)).build());
        CompletableFuture<Lease> waiting = waiter.acquireAsync(LeaseRequest.builder(new HolderId("socket-test", "w"),
                "restart/1").waitFor(Duration.ofSeconds(60)).build());
        await("the waiter is queued", Duration.ofSeconds(5), () -> waiters(holder, "restart/1") == 1);
        int grpcPort = first.port();
        int oldSocketPort = first.socketPort();
        first.close();
        ExecutionException shut = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertInstanceOf(LeaseServiceUnavailableException.class, shut.getCause());
        LeaseServer second = start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ofMinutes(5)))
                .withListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), grpcPort))
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .withSocket(ServerConfig.SocketSettings.loopback()));
        assertNotEquals(oldSocketPort, second.socketPort(), "a new socket port (else this test proves less)");
        // The client looks at an idle connection every half second; a call made before it has seen the old one close
        // fails as "lost, retry" (no availability time), and the retry it asks for reaches the new server.
        LeaseServiceUnavailableException quiet = null;
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (quiet == null) {
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> holder.acquire(LeaseRequest.builder(ME, "restart/1").build()));
            if (e.availableAt() != null) {
                quiet = e;
            } else {
                assertTrue(e.getMessage().contains("was lost") && e.getMessage().contains("retry"), e.getMessage());
                assertTrue(System.nanoTime() - end < 0, "still told the old connection was lost after 30 s");
            }
        }
        assertEquals(second.availableFrom(), quiet.availableAt(), quiet.getMessage());
        assertEquals(1, socketConnectionsOpened(), "the call reached the new server's socket transport");
    }

    // ------------------------------------------------------------------------------------------------ 2. tokens, ACL

    @Test
    void tokensAndTheAclApplyOnTheSocketTransport() throws Exception {
        Files.createDirectories(dir);
        Path tokens = Files.writeString(dir.resolve("tokens"), "# principal token\napp " + TOKEN_APP + "\nops "
                + TOKEN_OPS + "\n");
        Path acl = Files.writeString(dir.resolve("acl"), "app tenant/* lease,check\nops * inspect,check\n");
        // Tokens without TLS: allowed on loopback.
        start(base().withSecurity(null, null, null, tokens, acl).withSocket(ServerConfig.SocketSettings.loopback()));

        // Clients without a valid token are refused, saying so.
        LeasePermissionDeniedException anonymous = assertThrows(LeasePermissionDeniedException.class,
                () -> client(socketClient()).acquire(LeaseRequest.builder(ME, "tenant/1").build()));
        assertTrue(anonymous.getMessage().contains("did not authenticate"), anonymous.getMessage());
        LeasePermissionDeniedException wrong = assertThrows(LeasePermissionDeniedException.class,
                () -> client(socketClient().token("not-a-valid-token-at-all")).acquire(LeaseRequest.builder(ME,
                        "tenant/1").build()));
        assertTrue(wrong.getMessage().contains("did not authenticate"), wrong.getMessage());

        // On the socket itself: a hello without a token, or with a wrong one, is refused in the welcome.
        double unauthenticated = refused("unauthenticated");
        for (String token : new String[] {null, "not-a-valid-token-at-all"}) {
            try (Raw r = raw()) {
                r.send(hello(Protocol.VERSION, token));
                LeaseError e = r.welcome().getError();
                assertEquals(LeaseError.Kind.PERMISSION_DENIED, e.getKind(), e.toString());
                assertTrue(e.getMessage().contains("no valid credentials") && e.getMessage().contains("token file"),
                        e.getMessage());
                r.assertClosedByServer();
            }
        }
        assertEquals(unauthenticated + 2, refused("unauthenticated"));
        try (Raw r = raw()) {
            assertEquals("app", r.helloOk(TOKEN_APP).getPrincipal(), "the welcome names the token's principal");
            // The ACL applies to the raw session too.
            r.send(batch(acquire(1, "raw", "billing/1", Duration.ZERO)));
            SessionReply denied = r.reply(1);
            assertEquals(LeaseError.Kind.PERMISSION_DENIED, denied.getError().getKind(), denied.toString());
            assertEquals("app", denied.getError().getPrincipal());
            r.acquireAndRelease(2, "tenant/raw");
        }

        // A valid principal: names outside its ACL are denied, naming who, what and which permission.
        double opened = socketConnectionsOpened();
        RemoteLeaseService app = client(socketClient().token(TOKEN_APP));
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> app.acquire(LeaseRequest.builder(ME, "billing/7").build()));
        assertEquals("app", e.principal());
        assertEquals("billing/7", e.name());
        assertEquals("lease", e.permission());
        assertTrue(e.getMessage().contains("'app' may not lease 'billing/7'"), e.getMessage());
        // An allowed name is granted, on the socket transport.
        Lease held = app.acquire(LeaseRequest.builder(ME, "tenant/1").build());
        assertTrue(app.check("tenant/1", held.grant("tenant/1").generation()));
        assertEquals(opened + 1, socketConnectionsOpened(), "the app's lease calls took the socket transport");
        // A principal without the lease permission may not release it.
        RemoteLeaseService ops = client(socketClient().token(TOKEN_OPS));
        LeasePermissionDeniedException opsDenied = assertThrows(LeasePermissionDeniedException.class,
                () -> ops.release(held, null, null));
        assertEquals("ops", opsDenied.principal());
        assertEquals(1, holders(ops, "tenant/1"), "the lease is still held");
        app.release(held, null, null);
        assertStillServing(socketClient().token(TOKEN_APP), "tenant/probe");
    }

    // ------------------------------------------------------------------------------------------------ 3. max connections

    @Test
    void connectionsBeyondTheLimitAreRefusedAndTheOthersKeepWorking() throws Exception {
        start(base().withSocket(socket(2, Duration.ofSeconds(10))));
        // One connection that never says hello (it holds its place until the server's 10 s handshake timeout), and
        // one that does.
        Raw silent = raw();
        Raw first = raw();
        first.helloOk(null);

        double tooMany = refused("too_many_connections");
        try (Raw third = raw()) {
            // Refused as it is accepted, before any hello.
            SocketWelcome w = third.welcome();
            assertEquals(LeaseError.Kind.UNAVAILABLE, w.getError().getKind(), w.toString());
            assertTrue(w.getError().getMessage().contains("already has 2 socket connections")
                    && w.getError().getMessage().contains("--socket-max-connections"), w.getError().getMessage());
            third.assertClosedByServer();
        }
        assertEquals(tooMany + 1, refused("too_many_connections"));
        // A client is told the same, as an unavailable server.
        LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                () -> client(socketClient()).acquire(LeaseRequest.builder(ME, "max/0").build()));
        assertTrue(e.getMessage().contains("--socket-max-connections"), e.getMessage());
        assertEquals(tooMany + 2, refused("too_many_connections"));

        // The open connection is unaffected.
        first.acquireAndRelease(1, "max/1");
        first.send(batch(echo(3, ByteString.copyFromUtf8("first"))));
        assertEquals("first", first.reply(3).getEcho().toStringUtf8());

        // The silent connection is closed at the handshake timeout; then a new client is served again.
        double handshake = refused("handshake_timeout");
        double open = metric("leasehold_connections");
        silent.socket.setSoTimeout(15_000);
        silent.assertClosedByServer();
        assertEquals(handshake + 1, refused("handshake_timeout"));
        await("the server has let go of the silent connection", Duration.ofSeconds(5), () -> {
            try {
                return metric("leasehold_connections") == open - 1;
            } catch (Exception ex) {
                throw new IllegalStateException(ex);
            }
        });
        assertStillServing();
        first.acquireAndRelease(5, "max/1");
    }

    // ------------------------------------------------------------------------------------------------ 4. stalled reader

    @Test
    void aClientThatStopsReadingIsClosedAfterTheWriteTimeoutHoldingUpNobodyAndKeepingNoName() throws Exception {
        start(base().withSocket(socket(1_024, Duration.ofSeconds(1))));
        clientStopsReading(null);
    }

    @Test
    void aClientThatStopsReadingOnTlsIsClosedAfterTheWriteTimeoutToo() throws Exception {
        TestCertificates.Issued ca = TestCertificates.authority(dir, "socket-test-ca");
        TestCertificates.Issued cert = TestCertificates.server(dir, "socket-lease-server", ca);
        trust = ca.certFile();
        start(base().withSecurity(cert.certFile(), cert.keyFile(), null, null, null)
                .withSocket(socket(1_024, Duration.ofSeconds(1))));
        clientStopsReading(SocketTls.clientContext(trust, null, null));
    }

    /** The lease time a stalled reader's acquisitions ask for: a grant the kernel took for it ends this soon. */
    private static final Duration STUCK_LEASE = Duration.ofSeconds(3);

    /**
     * A raw connection (TLS with {@code tls}) waits on two names, then sends echoes whose answers it never reads:
     * the server closes it after the write timeout, meanwhile answering other clients promptly, and nothing of it
     * keeps a name.
     */
    private void clientStopsReading(SSLContext tls) throws Exception {
        RemoteLeaseService a = client(socketClient());
        RemoteLeaseService probe = client(socketClient());
        HolderId holderA = new HolderId("socket-test", "a");
        Lease w1 = a.acquire(LeaseRequest.builder(holderA, "stuck/w1").build());
        Lease w2 = a.acquire(LeaseRequest.builder(holderA, "stuck/w2").build());
        probe.release(probe.acquire(LeaseRequest.builder(ME, "stuck/probe").build()), null, null);
        double stalled = refused("stalled_reader");

        Socket tcp = new Socket();
        tcp.setReceiveBufferSize(4 * 1024);
        tcp.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.socketPort()), 5_000);
        Raw stuck = new Raw(tls == null ? tcp : tls.getSocketFactory().createSocket(tcp, "127.0.0.1", server.socketPort(),
                true));
        // Closed first at the end: closing a TLS socket waits for a write blocked on it, closing the TCP socket does not.
        closeLater(tcp);
        stuck.helloOk(null);
        stuck.send(batch(withLeaseTime(acquire(1, "stuck", "stuck/w1", Duration.ofSeconds(60)), STUCK_LEASE),
                withLeaseTime(acquire(2, "stuck", "stuck/w2", Duration.ofSeconds(60)), STUCK_LEASE)));
        await("the stuck connection's requests wait", Duration.ofSeconds(5),
                () -> waiters(a, "stuck/w1") == 1 && waiters(a, "stuck/w2") == 1);

        // Echoes of 60 KB, whose answers this connection never reads: the server's writes to it block, then its reads.
        byte[] frame = WireFrames.encode(batch(echo(3, ByteString.copyFrom(new byte[60 * 1024]))));
        AtomicLong writingSince = new AtomicLong();
        AtomicReference<IOException> floodEnded = new AtomicReference<>();
        AtomicLong framesWritten = new AtomicLong();
        Thread flood = new Thread(() -> {
            try {
                for (int i = 0; i < 20_000; i++) {
                    writingSince.set(System.nanoTime());
                    stuck.out.write(frame);
                    writingSince.set(0);
                    framesWritten.incrementAndGet();
                }
            } catch (IOException e) {
                floodEnded.set(e);
            }
        }, "stalled-reader-flood");
        flood.setDaemon(true);
        flood.start();
        await("the server stops reading the stuck connection (its writes block)", Duration.ofSeconds(20), () -> {
            long since = writingSince.get();
            return since != 0 && System.nanoTime() - since > TimeUnit.MILLISECONDS.toNanos(200);
        });
        assertTrue(floodEnded.get() == null, "the connection is still open when its writes start blocking");

        // Meanwhile: a release that grants a name to the stuck connection is answered at once, and another client's
        // calls keep being answered promptly.
        long t0 = System.nanoTime();
        a.release(w1, null, null);
        long releaseNanos = System.nanoTime() - t0;
        assertTrue(releaseNanos < PROMPT.toNanos(), "release answered in " + releaseNanos / 1_000_000 + " ms");
        int probes = 0;
        long slowest = 0;
        long giveUp = System.nanoTime() + TimeUnit.SECONDS.toNanos(8);
        while (flood.isAlive() && System.nanoTime() - giveUp < 0) {
            long p0 = System.nanoTime();
            Lease l = probe.acquire(LeaseRequest.builder(ME, "stuck/probe").build());
            probe.release(l, null, null);
            slowest = Math.max(slowest, System.nanoTime() - p0);
            probes++;
        }
        assertFalse(flood.isAlive(), "the stuck connection is still open 8 s after it stopped reading, though the server "
                + "counted " + (refused("stalled_reader") - stalled) + " stalled reader(s) (and logged LEASEHOLD-2304): "
                + "closing it did not complete");
        System.out.println("after " + framesWritten.get() + " unread echo frames, while a connection was stuck: "
                + probes + " acquire/release by another client, the slowest " + slowest / 1_000
                + " us; a release granting to it " + releaseNanos / 1_000 + " us");
        assertTrue(floodEnded.get() != null, "the server closed the stuck connection");
        assertTrue(probes >= 3, "another client was served " + probes + " time(s) while the stuck client was open");
        assertTrue(slowest < PROMPT.toNanos(), "another client's acquire and release took up to " + slowest / 1_000_000
                + " ms while a connection was stuck");
        assertEquals(stalled + 1, refused("stalled_reader"));

        // Nothing of the stuck connection keeps a name past its deadline: its waiting request on w2 was withdrawn; its
        // grant of w1 was released at once if it could not be written, or, if the kernel took its frame before the
        // buffers filled (the server cannot tell it was never read), ends at its deadline (STUCK_LEASE).
        await("the stuck connection's waiter on w2 is withdrawn", Duration.ofSeconds(5), () -> waiters(a, "stuck/w2") == 0);
        NameStatus w1Now = status(a, "stuck/w1");
        boolean writtenToKernel = w1Now != null && !w1Now.holders().isEmpty();
        if (writtenToKernel) {
            assertEquals("stuck", w1Now.holders().get(0).holder().owner(), "only the stuck connection can hold w1");
            assertFalse(w1Now.holders().get(0).deadline().isAfter(w1Now.holders().get(0).grantedAt().plus(STUCK_LEASE)),
                    "the stuck connection's grant ends at its deadline");
        }
        System.out.println("the stuck connection's grant of w1: " + (writtenToKernel ? "still held when its waiter on w2 "
                + "was gone (taken by the kernel before the buffers filled, or about to be released)"
                : "not deliverable, released at once"));
        await("the stuck connection's grant of w1 is gone", STUCK_LEASE.plusSeconds(5),
                () -> waiters(a, "stuck/w1") == 0 && holders(a, "stuck/w1") == 0);
        RemoteLeaseService c = client(socketClient());
        HolderId holderC = new HolderId("socket-test", "c");
        Lease c1 = c.acquire(LeaseRequest.builder(holderC, "stuck/w1").waitFor(Duration.ZERO).build());
        assertTrue(c1.grant("stuck/w1").generation() > w1.grant("stuck/w1").generation());
        a.release(w2, null, null);
        Lease c2 = c.acquire(LeaseRequest.builder(holderC, "stuck/w2").waitFor(Duration.ZERO).build());
        assertEquals(w2.grant("stuck/w2").generation() + 1, c2.grant("stuck/w2").generation(),
                "the stuck connection's waiter was withdrawn, never granted");
        c.release(c1, null, null);
        c.release(c2, null, null);
        assertStillServing();
    }

    // ------------------------------------------------------------------------------------------------ 5. lost connection

    @Test
    void aConnectionLostWhileWaitingFailsTheAcquisitionWithdrawsItAndTheNextCallReconnects() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        // Client B reaches the server through relays on another loopback address, on the same port numbers: the
        // server tells B its socket port, and B connects to it on the host B was given, which is the relay. (On Linux
        // every 127.x.y.z address is loopback; TcpProxy cannot serve here, as the socket port comes from the server.)
        InetAddress relayHost = InetAddress.getByName("127.0.0.2");
        closeLater(new Relay(new InetSocketAddress(relayHost, server.port()), server.port()));
        Relay socketRelay = closeLater(new Relay(new InetSocketAddress(relayHost, server.socketPort()),
                server.socketPort()));
        RemoteLeaseService a = client(socketClient());
        RemoteLeaseService b = client(RemoteClientConfig.builder("127.0.0.2:" + server.port())
                .transport(RemoteClientConfig.Transport.SOCKET).callTimeout(Duration.ofSeconds(5)));
        RemoteLeaseService c = client(socketClient());
        HolderId holderA = new HolderId("socket-test", "a");
        HolderId holderB = new HolderId("socket-test", "b");
        b.release(b.acquire(LeaseRequest.builder(holderB, "lost/warm-up").build()), null, null);
        assertEquals(1, socketRelay.accepted(), "B's socket connection goes through the relay");

        Lease held = a.acquire(LeaseRequest.builder(holderA, "lost/n").build());
        ExecutorService bThread = Executors.newSingleThreadExecutor();
        closing.add(bThread::shutdownNow);
        Future<Lease> waiting = bThread.submit(() -> b.acquire(LeaseRequest.builder(holderB, "lost/n")
                .waitFor(Duration.ofSeconds(60)).build()));
        await("B waits on the server", Duration.ofSeconds(5), () -> waiters(a, "lost/n") == 1);

        socketRelay.breakAll();
        ExecutionException lost = assertThrows(ExecutionException.class, () -> waiting.get(10, TimeUnit.SECONDS));
        assertTrue(lost.getCause() instanceof LeaseServiceUnavailableException, lost.toString());
        assertTrue(lost.getCause().getMessage().contains("was lost") && lost.getCause().getMessage().contains("retry"),
                lost.getCause().getMessage());
        await("the server withdraws B's waiting request", Duration.ofSeconds(5), () -> waiters(a, "lost/n") == 0);

        a.release(held, null, null);
        Lease third = c.acquire(LeaseRequest.builder(new HolderId("socket-test", "c"), "lost/n").waitFor(Duration.ZERO)
                .build());
        assertEquals(held.grant("lost/n").generation() + 1, third.grant("lost/n").generation(),
                "C is granted next: B's withdrawn request was never granted");
        c.release(third, null, null);

        // B's next call opens a new connection and works.
        Lease again = b.acquire(LeaseRequest.builder(holderB, "lost/n").waitFor(Duration.ofSeconds(5)).build());
        assertEquals(third.grant("lost/n").generation() + 1, again.grant("lost/n").generation());
        b.release(again, null, null);
        assertEquals(2, socketRelay.accepted(), "B reconnected");
        assertStillServing();
    }

    /** Forwards TCP connections from {@code listen} to a port on the loopback address; can break them all. */
    private static final class Relay implements AutoCloseable {
        private final ServerSocket listener;
        private final int target;
        private final List<Socket> sockets = new CopyOnWriteArrayList<>();
        private final AtomicInteger accepted = new AtomicInteger();
        private volatile boolean closed;

        Relay(InetSocketAddress listen, int target) throws IOException {
            this.target = target;
            this.listener = new ServerSocket();
            listener.bind(listen, 50);
            Thread t = new Thread(this::accept, "socket-test-relay");
            t.setDaemon(true);
            t.start();
        }

        int accepted() {
            return accepted.get();
        }

        private void accept() {
            while (!closed) {
                try {
                    Socket client = listener.accept();
                    Socket server = new Socket();
                    server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target), 5_000);
                    client.setTcpNoDelay(true);
                    server.setTcpNoDelay(true);
                    sockets.add(client);
                    sockets.add(server);
                    accepted.incrementAndGet();
                    pump(client, server);
                    pump(server, client);
                } catch (IOException e) {
                    // Closed: the relay is done.
                }
            }
        }

        private void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[16 * 1024];
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    int n;
                    while ((n = in.read(buf)) >= 0) {
                        out.write(buf, 0, n);
                    }
                } catch (IOException e) {
                    // Broken: both ends are closed below.
                } finally {
                    closeQuietly(from);
                    closeQuietly(to);
                }
            }, "socket-test-relay-pump");
            t.setDaemon(true);
            t.start();
        }

        /** Closes every relayed connection: both the client and the server see it end. */
        void breakAll() {
            for (Socket s : sockets) {
                closeQuietly(s);
            }
            sockets.clear();
        }

        private static void closeQuietly(Socket s) {
            try {
                s.close();
            } catch (IOException e) {
                // Already closed.
            }
        }

        @Override
        public void close() throws IOException {
            closed = true;
            listener.close();
            breakAll();
        }
    }

    // ------------------------------------------------------------------------------------------------ 6. many threads

    @Test
    void manyThreadsThroughOneSocketClientAllCompleteAndTheHistoryKeepsTheInvariants() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        RemoteLeaseService shared = client(socketClient().callTimeout(Duration.ofSeconds(10)));
        int threads = 16;
        int cycles = 300;
        int names = 8;
        Queue<ObjectNode> records = new ConcurrentLinkedQueue<>();
        AtomicInteger asyncCalls = new AtomicInteger();
        AtomicLong slowest = new AtomicLong();
        AtomicInteger slow = new AtomicInteger();
        long t0 = System.nanoTime();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        closing.add(pool::shutdownNow);
        double opened = socketConnectionsOpened();
        assertTimeoutPreemptively(Duration.ofSeconds(40), () -> {
            List<Future<Integer>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                workers.add(pool.submit(() -> {
                    HolderId me = new HolderId("socket-mt", "t" + thread);
                    List<CompletableFuture<Lease>> later = new ArrayList<>();
                    int granted = 0;
                    for (int i = 0; i < cycles; i++) {
                        String name = "mt/" + ((thread + i) % names);
                        long c0 = System.nanoTime();
                        Lease l = shared.acquire(LeaseRequest.builder(me, name).waitFor(Duration.ofSeconds(10)).build());
                        record(records, "grant", l, null);
                        record(records, "release", l, shared.release(l, null, null));
                        long took = System.nanoTime() - c0;
                        slowest.accumulateAndGet(took, Math::max);
                        if (took > TimeUnit.MILLISECONDS.toNanos(400)) {
                            slow.incrementAndGet();
                        }
                        granted++;
                        if (i % 50 == 25) {
                            // Joined only some cycles later (by this thread), while the connection carries other calls.
                            later.add(shared.acquireAsync(LeaseRequest.builder(new HolderId("socket-mt-async", "t"
                                    + thread + "-" + i), "mt/async/" + (thread % 4)).waitFor(Duration.ofSeconds(20))
                                    .build()));
                            asyncCalls.incrementAndGet();
                        }
                        if (i % 50 == 0 || i == cycles - 1) {
                            granted += joinAndRelease(shared, later, records);
                        }
                    }
                    return granted;
                }));
            }
            int total = 0;
            for (Future<Integer> w : workers) {
                total += w.get();
            }
            assertEquals(threads * cycles + asyncCalls.get(), total, "every acquisition was granted");
        }, "a lost wake-up or a stuck connection: some thread never got its answer");
        System.out.println(threads + " threads x " + cycles + " cycles through one socket connection in "
                + (System.nanoTime() - t0) / 1_000_000 + " ms; slowest acquire+release " + slowest.get() / 1_000_000
                + " ms, " + slow.get() + " over 400 ms");
        assertEquals(threads * 6, asyncCalls.get());
        assertEquals(opened + 1, socketConnectionsOpened(), "every thread's calls shared one socket connection");

        RecordedGrantChecker checker = new RecordedGrantChecker();
        int line = 0;
        for (ObjectNode r : records) {
            checker.add(r, "record " + ++line);
        }
        List<String> violations = checker.check();
        assertTrue(violations.isEmpty(), violations.size() + " violation(s), first: " + violations.subList(0,
                Math.min(10, violations.size())));
        assertEquals(threads * cycles + asyncCalls.get(), checker.grantCount());
        assertStillServing();
    }

    private static int joinAndRelease(RemoteLeaseService leases, List<CompletableFuture<Lease>> futures,
            Queue<ObjectNode> records) throws LeaseException {
        int n = 0;
        for (CompletableFuture<Lease> f : futures) {
            Lease l = f.join();
            record(records, "grant", l, null);
            record(records, "release", l, leases.release(l, null, null));
            n++;
        }
        futures.clear();
        return n;
    }

    /** One record line per name of {@code lease}, as {@link RecordedGrantChecker} reads them. */
    private static void record(Queue<ObjectNode> records, String event, Lease lease, Instant endedAt) {
        for (LeaseGrant g : lease.grants()) {
            ObjectNode line = JsonNodeFactory.instance.objectNode();
            line.put("ev", event);
            line.put("name", g.name());
            line.put("generation", g.generation());
            line.put("holder", lease.holder().toString());
            line.put("mode", lease.mode().type().name());
            line.put("kind", lease.kind().name());
            line.put("grantedAt", lease.grantedAt().toString());
            line.put("deadline", lease.deadline().toString());
            line.put("floor", g.floor().toString());
            line.put("writableFrom", g.writableFrom().toString());
            if (endedAt != null) {
                line.put("endedAt", endedAt.toString());
            }
            records.add(line);
        }
    }

    // ------------------------------------------------------------------------------------------------ 7. TLS

    @Test
    void connectionThreadsWaitActivelyForTheNextRequestByDefaultAndNotWithASpinWaitOfZero() throws Exception {
        // The default: after answering, the connection's thread waits actively for the next request, and says so.
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        RemoteLeaseService on = client(socketClient());
        for (int i = 0; i < 20; i++) {
            Lease l = on.acquire(LeaseRequest.builder(ME, "spin/on/" + i).build());
            assertTrue(on.release(l, null, null).compareTo(l.grantedAt()) >= 0);
        }
        double waited = spinWaits("hit") + spinWaits("miss");
        assertTrue(waited >= 1, "waits for the next request were counted: " + waited);

        // Off on both ends (--socket-spin-wait 0, spinWait=0): the same calls, served the same, and no active wait.
        start(base().withSocket(socket(16, Duration.ofSeconds(10), Duration.ZERO)));
        RemoteLeaseService off = client(socketClient().spinWait(Duration.ZERO));
        for (int i = 0; i < 20; i++) {
            Lease l = off.acquire(LeaseRequest.builder(ME, "spin/off/" + i).build());
            assertTrue(off.release(l, null, null).compareTo(l.grantedAt()) >= 0);
        }
        assertEquals(0, spinWaits("hit") + spinWaits("miss"), "no active wait with --socket-spin-wait 0");
        assertEquals(20, metric("leasehold_ops_total{op=\"acquire\",outcome=\"granted\"}"), "every call served");
    }

    @Test
    void framesThatArriveTogetherAreAnsweredInOneFrameAndTheThreadThenBlocksWithoutWaitingActively() throws Exception {
        start(base().withSocket(ServerConfig.SocketSettings.loopback()));
        double busy = spinWaits("busy");
        try (Raw r = raw()) {
            r.helloOk(null);
            // Three frames in one write, as several client threads' requests arrive while the server is busy: one read
            // brings them all, and their answers go out together when the last has been handled.
            ByteArrayOutputStream three = new ByteArrayOutputStream();
            three.write(WireFrames.encode(batch(echo(1, ByteString.copyFromUtf8("one")))));
            three.write(WireFrames.encode(batch(echo(2, ByteString.copyFromUtf8("two")))));
            three.write(WireFrames.encode(batch(acquire(3, "raw", "together/a", Duration.ZERO))));
            r.write(three.toByteArray());
            SessionReplies answers = r.in.next(SessionReplies.parser(), "SessionReplies");
            assertEquals(List.of(1L, 2L, 3L), answers.getRepliesList().stream().map(SessionReply::getRequestId).toList(),
                    "the three frames' answers in one frame, in order: " + answers);
            assertEquals("two", answers.getReplies(1).getEcho().toStringUtf8());
            assertTrue(answers.getReplies(2).hasLease(), answers.toString());
            // After a read of several frames the thread blocks at once: the client's threads keep it busy.
            await("the wait skipped after a read of three frames is counted", Duration.ofSeconds(5),
                    () -> {
                        try {
                            return spinWaits("busy") >= busy + 1;
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });

            // A good frame and a bad one in one write: the good one is answered, then the connection is closed.
            ByteArrayOutputStream goodThenBad = new ByteArrayOutputStream();
            goodThenBad.write(WireFrames.encode(batch(echo(4, ByteString.copyFromUtf8("before")))));
            goodThenBad.write(new byte[] {0, 0, 0, 5, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            r.write(goodThenBad.toByteArray());
            assertEquals("before", r.reply(4).getEcho().toStringUtf8(), "the frame before the bad one is answered");
            SessionReply error = r.reply(0);
            assertTrue(error.getError().getMessage().contains("bad frame and is closed"), error.toString());
            r.assertClosedByServer();
        }
        assertStillServing();
    }

    @Test
    void aSpinWaitOutOfRangeIsRefusedNamingTheOptionAndItsRange() {
        for (String bad : new String[] {"11ms", "-5us", "1s"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> base()
                    .withSocket(socket(16, Duration.ofSeconds(10), Check.duration("--socket-spin-wait", bad)))
                    .validate(), bad);
            assertTrue(e.getMessage().contains("--socket-spin-wait is") && e.getMessage().contains("use 0 (off) to 10ms"),
                    e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Check.duration("--socket-spin-wait", "soon"));
        assertTrue(e.getMessage().contains("--socket-spin-wait 'soon' is not a duration"), e.getMessage());
    }

    private double spinWaits(String outcome) throws Exception {
        return metric("leasehold_socket_spin_waits_total{outcome=\"" + outcome + "\"}");
    }

    @Test
    void tlsOnTheSocketTransportServesClientsThatTrustTheCaAndRefusesPlainText() throws Exception {
        TestCertificates.Issued ca = TestCertificates.authority(dir, "socket-test-ca");
        TestCertificates.Issued otherCa = TestCertificates.authority(dir, "socket-other-ca");
        TestCertificates.Issued cert = TestCertificates.server(dir, "socket-lease-server", ca);
        start(base().withSecurity(cert.certFile(), cert.keyFile(), null, null, null)
                .withSocket(ServerConfig.SocketSettings.loopback()));

        assertStillServing(socketClient().trustCertificates(ca.certFile()), "tls/1");
        assertStillServing(socketClient().trustCertificates(ca.certFile()).authority("localhost"), "tls/2");

        // Plain text against the TLS server fails as unavailable, naming the setting to change.
        LeaseServiceUnavailableException plain = assertThrows(LeaseServiceUnavailableException.class,
                () -> client(socketClient()).acquire(LeaseRequest.builder(ME, "tls/3").build()));
        assertTrue(plain.getMessage().contains("tlsTrustFile"), plain.getMessage());
        // A client that does not trust the server's CA, the same.
        LeaseServiceUnavailableException untrusted = assertThrows(LeaseServiceUnavailableException.class,
                () -> client(socketClient().trustCertificates(otherCa.certFile())).acquire(LeaseRequest.builder(ME,
                        "tls/4").build()));
        assertTrue(untrusted.getMessage().contains("TLS") && untrusted.getMessage().contains("tlsTrustFile"),
                untrusted.getMessage());
        // A plain-text hello on the TLS socket listener is not welcomed: the connection ends without a SocketWelcome.
        try (Raw r = raw()) {
            r.send(hello(Protocol.VERSION, null));
            IOException e = assertThrows(IOException.class, r::welcome, "no welcome to a plain-text hello");
            System.out.println("plain text on the TLS socket listener: " + e);
        }
        // A raw TLS connection that trusts the CA is welcomed.
        SSLContext tls = SocketTls.clientContext(ca.certFile(), null, null);
        try (Raw r = new Raw(tls.getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.socketPort()))) {
            assertEquals(CallGate.ANONYMOUS, r.helloOk(null).getPrincipal());
            r.acquireAndRelease(1, "tls/raw");
        }
        assertStillServing(socketClient().trustCertificates(ca.certFile()), "tls/5");
    }

    @Test
    void mutualTlsOnTheSocketTransportAuthenticatesTheCertificatesCommonName() throws Exception {
        TestCertificates.Issued ca = TestCertificates.authority(dir, "socket-test-ca");
        TestCertificates.Issued otherCa = TestCertificates.authority(dir, "socket-other-ca");
        TestCertificates.Issued cert = TestCertificates.server(dir, "socket-lease-server", ca);
        TestCertificates.Issued billing = TestCertificates.client(dir, "billing", ca);
        TestCertificates.Issued foreign = TestCertificates.client(dir, "billing", otherCa);
        Files.createDirectories(dir);
        Path acl = Files.writeString(dir.resolve("acl"), "billing tenant/* lease,check\n");
        // Client certificates only: no tokens.
        start(base().withSecurity(cert.certFile(), cert.keyFile(), ca.certFile(), null, acl)
                .withSocket(ServerConfig.SocketSettings.loopback()));

        // Without a certificate, or with one from another CA: refused, saying a client certificate is needed.
        LeasePermissionDeniedException none = assertThrows(LeasePermissionDeniedException.class,
                () -> client(socketClient().trustCertificates(ca.certFile())).acquire(LeaseRequest.builder(ME,
                        "tenant/1").build()));
        assertTrue(none.getMessage().contains("client certificate"), none.getMessage());
        LeasePermissionDeniedException foreignCa = assertThrows(LeasePermissionDeniedException.class,
                () -> client(socketClient().trustCertificates(ca.certFile()).clientCertificate(foreign.certFile(),
                        foreign.keyFile())).acquire(LeaseRequest.builder(ME, "tenant/1").build()));
        assertTrue(foreignCa.getMessage().contains("client certificate"), foreignCa.getMessage());
        // On the socket listener itself: a TLS connection without a certificate gets no welcome.
        try (Raw r = new Raw(SocketTls.clientContext(ca.certFile(), null, null).getSocketFactory()
                .createSocket(InetAddress.getLoopbackAddress(), server.socketPort()))) {
            IOException e = assertThrows(IOException.class, () -> {
                r.send(hello(Protocol.VERSION, null));
                r.welcome();
            }, "no welcome without a client certificate");
            System.out.println("no client certificate on the socket listener: " + e);
        }

        // With a certificate: its common name is the principal, and the ACL applies to it.
        try (Raw r = new Raw(SocketTls.clientContext(ca.certFile(), billing.certFile(), billing.keyFile())
                .getSocketFactory().createSocket(InetAddress.getLoopbackAddress(), server.socketPort()))) {
            assertEquals("billing", r.helloOk(null).getPrincipal(), "the welcome names the certificate's CN");
            r.acquireAndRelease(1, "tenant/raw");
        }
        RemoteClientConfig.Builder withCert = socketClient().trustCertificates(ca.certFile())
                .clientCertificate(billing.certFile(), billing.keyFile());
        RemoteLeaseService leases = client(withCert);
        LeasePermissionDeniedException denied = assertThrows(LeasePermissionDeniedException.class,
                () -> leases.acquire(LeaseRequest.builder(ME, "payroll/1").build()));
        assertEquals("billing", denied.principal());
        assertEquals("payroll/1", denied.name());
        assertStillServing(withCert, "tenant/42");
    }
}
