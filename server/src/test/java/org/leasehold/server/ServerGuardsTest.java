package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteCallFailedException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.AdvanceTestClockRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.UpgradeRequest;

/**
 * What the server refuses, and that it stays up and keeps answering a well-behaved client after each refusal:
 * unauthenticated and ACL-denied calls, an unknown protocol version, malformed and oversized messages, garbage
 * bytes instead of HTTP/2, a flood of waiters beyond the per-connection bound, test-only calls on a production
 * clock. Also the metrics and health endpoints. The server runs in this JVM on a loopback port chosen by the OS.
 */
class ServerGuardsTest {
    private static final String TOKEN_APP = "app-token-0123456789abcdef";
    private static final String TOKEN_OPS = "ops-token-0123456789abcdef";
    private static final HolderId ME = new HolderId("guards", "t1");

    private final Path dir = Path.of("target", "guards-" + System.nanoTime());
    private LeaseServer server;
    private final List<AutoCloseable> closing = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        Files.createDirectories(dir);
        Path tokens = Files.writeString(dir.resolve("tokens"), "# principal token\napp " + TOKEN_APP + "\nops " + TOKEN_OPS
                + "\n");
        Path acl = Files.writeString(dir.resolve("acl"), "app tenant/* lease,check\nops * inspect,check\n");
        ServerConfig config = ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)
                .withMaxWaitersPerName(1_000)).withSecurity(null, null, null, tokens, acl)
                .withLimits(1_000, 3, 1_000, 64 * 1024)
                .withHttpListen(new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
        server = LeaseServer.start(config);
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing) {
            c.close();
        }
        server.close();
    }

    private RemoteLeaseService client(String token) {
        RemoteClientConfig.Builder b = RemoteClientConfig.builder(server.address());
        if (token != null) {
            b.token(token);
        }
        RemoteLeaseService c = new RemoteLeaseService(b.build());
        closing.add(c);
        return c;
    }

    private ManagedChannel channel() {
        ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext().build();
        closing.add(ch::shutdownNow);
        return ch;
    }

    private LeaseholdGrpc.LeaseholdBlockingStub stub(ManagedChannel ch, String version, String token) {
        Metadata h = new Metadata();
        if (version != null) {
            h.put(Protocol.VERSION_HEADER, version);
        }
        if (token != null) {
            h.put(Protocol.AUTHORIZATION, "Bearer " + token);
        }
        return LeaseholdGrpc.newBlockingStub(ch).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h))
                .withDeadlineAfter(5, TimeUnit.SECONDS);
    }

    /** The server still grants and releases for a well-behaved client. */
    private void assertStillServing() throws Exception {
        RemoteLeaseService ok = client(TOKEN_APP);
        Lease l = ok.acquire(LeaseRequest.builder(new HolderId("probe", "p" + System.nanoTime()), "tenant/probe").build());
        ok.release(l, null, null);
    }

    @Test
    void unauthenticatedCallsAreRefusedClearly() throws Exception {
        RemoteLeaseService anonymous = client(null);
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> anonymous.acquire(LeaseRequest.builder(ME, "tenant/1").build()));
        assertTrue(e.getMessage().contains("did not authenticate") && e.getMessage().contains("Bearer"), e.getMessage());
        RemoteLeaseService wrong = client("not-a-valid-token-at-all");
        assertThrows(LeasePermissionDeniedException.class, () -> wrong.acquire(LeaseRequest.builder(ME, "tenant/1").build()));
        assertStillServing();
    }

    @Test
    void aclDeniesOtherNamespacesNamingPrincipalNameAndPermission() throws Exception {
        RemoteLeaseService app = client(TOKEN_APP);
        LeasePermissionDeniedException e = assertThrows(LeasePermissionDeniedException.class,
                () -> app.acquire(LeaseRequest.builder(ME, "tenant/1", "billing/7").build()));
        assertEquals("app", e.principal());
        assertEquals("billing/7", e.name());
        assertEquals("lease", e.permission());
        assertTrue(e.getMessage().contains("'app' may not lease 'billing/7'"), e.getMessage());
        RemoteLeaseService ops = client(TOKEN_OPS);
        assertTrue(ops.inspect("", 10).stream().allMatch(s -> s.holders().isEmpty()), "nothing of a denied request is held");
        RemoteCallFailedException inspect = assertThrows(RemoteCallFailedException.class, () -> app.inspect("", 10));
        assertTrue(inspect.getCause() instanceof LeasePermissionDeniedException, inspect.toString());
        Lease held = app.acquire(LeaseRequest.builder(ME, "tenant/1").build());
        assertEquals(1, ops.inspect("tenant/", 10).get(0).holders().size(), "ops may inspect everything");
        assertThrows(LeasePermissionDeniedException.class, () -> ops.release(held, null, null), "ops may not lease");
        assertTrue(ops.check("tenant/1", held.grant("tenant/1").generation()));
        app.release(held, null, null);
    }

    @Test
    void unknownOrMissingProtocolVersionIsRefusedClearly() throws Exception {
        ManagedChannel ch = channel();
        StatusRuntimeException future = assertThrows(StatusRuntimeException.class,
                () -> stub(ch, "99", TOKEN_APP).info(InfoRequest.getDefaultInstance()));
        assertEquals(Status.Code.FAILED_PRECONDITION, future.getStatus().getCode());
        assertTrue(future.getStatus().getDescription().contains("version 1") && future.getStatus().getDescription()
                .contains("'99'"), future.getStatus().getDescription());
        StatusRuntimeException none = assertThrows(StatusRuntimeException.class,
                () -> stub(ch, null, TOKEN_APP).info(InfoRequest.getDefaultInstance()));
        assertEquals(Status.Code.FAILED_PRECONDITION, none.getStatus().getCode());
        assertEquals("app", stub(ch, "1", TOKEN_APP).info(InfoRequest.getDefaultInstance()).getPrincipal());
        assertStillServing();
    }

    @Test
    void oversizedAndMalformedMessagesAreRefusedClearly() throws Exception {
        ManagedChannel ch = channel();
        StatusRuntimeException big = assertThrows(StatusRuntimeException.class, () -> stub(ch, "1", TOKEN_APP)
                .echo(EchoRequest.newBuilder().setPayload(com.google.protobuf.ByteString.copyFrom(new byte[100_000]))
                        .build()));
        assertEquals(Status.Code.RESOURCE_EXHAUSTED, big.getStatus().getCode());
        assertTrue(big.getStatus().getDescription().contains("65536"), big.getStatus().getDescription());
        // Bytes that are not a protobuf message, sent as an Info request.
        MethodDescriptor<byte[], byte[]> raw = LeaseholdGrpc.getInfoMethod().toBuilder(new RawMarshaller(),
                new RawMarshaller()).build();
        Metadata h = new Metadata();
        h.put(Protocol.VERSION_HEADER, "1");
        h.put(Protocol.AUTHORIZATION, "Bearer " + TOKEN_APP);
        ClientCall<byte[], byte[]> call = io.grpc.ClientInterceptors.intercept(ch,
                MetadataUtils.newAttachHeadersInterceptor(h)).newCall(raw, CallOptions.DEFAULT.withDeadlineAfter(5,
                        TimeUnit.SECONDS));
        StatusRuntimeException garbage = assertThrows(StatusRuntimeException.class,
                () -> ClientCalls.blockingUnaryCall(call, new byte[] {(byte) 0xff, (byte) 0xff, (byte) 0xff, 0x0f, 0x01}));
        assertEquals(Status.Code.INVALID_ARGUMENT, garbage.getStatus().getCode(), garbage.getStatus().toString());
        assertTrue(garbage.getStatus().getDescription().contains("not a valid leasehold.v1.InfoRequest"),
                garbage.getStatus().toString());
        assertStillServing();
    }

    @Test
    void badHeldLeaseRequestsOnTheSessionStreamAreAnsweredInBandAndTheStreamGoesOn() throws Exception {
        ManagedChannel ch = channel();
        Metadata h = new Metadata();
        h.put(Protocol.VERSION_HEADER, "1");
        h.put(Protocol.AUTHORIZATION, "Bearer " + TOKEN_APP);
        BlockingQueue<Object> replies = new LinkedBlockingQueue<>();
        StreamObserver<SessionRequests> stream = LeaseholdGrpc.newStub(ch)
                .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h)).session(new StreamObserver<>() {
                    @Override
                    public void onNext(SessionReplies batch) {
                        replies.addAll(batch.getRepliesList());
                    }

                    @Override
                    public void onError(Throwable t) {
                        replies.add(t);
                    }

                    @Override
                    public void onCompleted() {
                        replies.add("completed");
                    }
                });
        java.util.function.Consumer<SessionRequest> session = r -> stream.onNext(SessionRequests.newBuilder()
                .addRequests(r).build());
        Holder me = Holder.newBuilder().setProcess("guards").setOwner("stream").build();
        // One name, no generation: the reference cannot be decoded.
        session.accept(SessionRequest.newBuilder().setRequestId(1).setRelease(ReleaseRequest.newBuilder()
                .setLease(LeaseRef.newBuilder().setHolder(me).addNames("tenant/s"))).build());
        SessionReply undecodable = reply(replies, 1);
        assertEquals(LeaseError.Kind.INVALID, undecodable.getError().getKind());
        assertTrue(undecodable.getError().getMessage().contains("release request cannot be decoded")
                && undecodable.getError().getMessage().contains("one generation per name"), undecodable.toString());
        // A name outside the caller's namespaces.
        session.accept(SessionRequest.newBuilder().setRequestId(2).setRenew(RenewRequest.newBuilder()
                .setLease(LeaseRef.newBuilder().setHolder(me).addNames("billing/1").addGenerations(1)
                        .setDeadlineMicros(1)).setDeadlineMicros(2)).build());
        SessionReply denied = reply(replies, 2);
        assertEquals(LeaseError.Kind.PERMISSION_DENIED, denied.getError().getKind());
        assertEquals("billing/1", denied.getError().getName());
        // A lease the server never granted.
        session.accept(SessionRequest.newBuilder().setRequestId(3).setUpgrade(UpgradeRequest.newBuilder()
                .setLease(LeaseRef.newBuilder().setHolder(me).addNames("tenant/never").addGenerations(5)
                        .setDeadlineMicros(Long.MAX_VALUE / 2))).build());
        assertTrue(reply(replies, 3).hasError(), "upgrading a lease never granted is refused");
        // A message with no request in it.
        session.accept(SessionRequest.newBuilder().setRequestId(4).build());
        assertEquals(LeaseError.Kind.INVALID, ((SessionReply) replies.poll(5, TimeUnit.SECONDS)).getError().getKind());
        // The same stream still echoes, grants, and releases.
        session.accept(SessionRequest.newBuilder().setRequestId(5).setEcho(EchoRequest.newBuilder()
                .setPayload(com.google.protobuf.ByteString.copyFromUtf8("still here"))).build());
        assertEquals("still here", reply(replies, 5).getEcho().toStringUtf8());
        session.accept(SessionRequest.newBuilder().setAcquire(AcquireRequest.newBuilder().setHolder(me)
                .addNames("tenant/s").setRequestId(6)).build());
        SessionReply granted = reply(replies, 6);
        assertTrue(granted.hasLease(), granted.toString());
        session.accept(SessionRequest.newBuilder().setRequestId(7).setRelease(ReleaseRequest.newBuilder()
                .setLease(LeaseRef.newBuilder().setHolder(me).addNames("tenant/s")
                        .addGenerations(granted.getLease().getGrants(0).getGeneration())
                        .setDeadlineMicros(granted.getLease().getDeadlineMicros()))).build());
        SessionReply released = reply(replies, 7);
        assertEquals(SessionReply.ResultCase.ENDED_AT_MICROS, released.getResultCase(), released.toString());
        assertTrue(released.getEndedAtMicros() >= granted.getLease().getGrantedAtMicros());
        // Several requests in one message: each is answered, the immediate answers in the order asked.
        stream.onNext(SessionRequests.newBuilder()
                .addRequests(SessionRequest.newBuilder().setRequestId(8).setEcho(EchoRequest.newBuilder()
                        .setPayload(com.google.protobuf.ByteString.copyFromUtf8("a"))))
                .addRequests(SessionRequest.newBuilder().setRequestId(9).setEcho(EchoRequest.newBuilder()
                        .setPayload(com.google.protobuf.ByteString.copyFromUtf8("b"))))
                .addRequests(SessionRequest.newBuilder().setAcquire(AcquireRequest.newBuilder().setHolder(me)
                        .addNames("tenant/t").setRequestId(10)))
                .build());
        assertEquals("a", reply(replies, 8).getEcho().toStringUtf8());
        assertEquals("b", reply(replies, 9).getEcho().toStringUtf8());
        assertTrue(reply(replies, 10).hasLease());
        stream.onCompleted();
        assertEquals("completed", replies.poll(5, TimeUnit.SECONDS));
        assertStillServing();
    }

    private static SessionReply reply(BlockingQueue<Object> replies, long id) throws InterruptedException {
        Object r = replies.poll(5, TimeUnit.SECONDS);
        assertTrue(r instanceof SessionReply, "an answer on the open stream, not " + r);
        assertEquals(id, ((SessionReply) r).getRequestId(), r.toString());
        return (SessionReply) r;
    }

    @Test
    void garbageAndTruncatedFramesCloseOnlyThatConnection() throws Exception {
        // Not HTTP/2 at all: the server closes the connection.
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            assertTrue(drainUntilClosed(s.getInputStream()), "the server closed the non-HTTP/2 connection");
        }
        // The HTTP/2 preface, then a frame header announcing 16 KiB of which only 5 bytes follow, then close.
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0}); // empty SETTINGS
            out.write(new byte[] {0, 0x40, 0, 0, 1, 0, 0, 0, 1, 1, 2, 3, 4, 5}); // DATA on stream 1, truncated
            out.flush();
            s.shutdownOutput();
            assertTrue(drainUntilClosed(s.getInputStream()), "the server closed the broken connection");
        }
        // A DATA frame on stream 0 is a protocol error: answered with GOAWAY, connection closed.
        try (Socket s = new Socket("127.0.0.1", server.port())) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.write(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0});
            out.write(new byte[] {0, 0, 2, 0, 0, 0, 0, 0, 0, 9, 9});
            out.flush();
            byte[] received = s.getInputStream().readAllBytes();
            assertTrue(containsGoAway(received), "a GOAWAY frame answers the protocol error");
        }
        assertStillServing();
    }

    private static boolean drainUntilClosed(InputStream in) {
        try {
            in.readAllBytes();
            return true;
        } catch (java.io.IOException e) {
            return e instanceof java.net.SocketException; // reset by the server: closed too
        }
    }

    /** True if the frames in {@code bytes} include a GOAWAY (type 7) with a non-zero error code. */
    private static boolean containsGoAway(byte[] bytes) {
        int i = 0;
        while (i + 9 <= bytes.length) {
            int length = ((bytes[i] & 0xff) << 16) | ((bytes[i + 1] & 0xff) << 8) | (bytes[i + 2] & 0xff);
            int type = bytes[i + 3] & 0xff;
            if (type == 7 && i + 9 + 8 <= bytes.length) {
                int o = i + 9 + 4;
                int code = ((bytes[o] & 0xff) << 24) | ((bytes[o + 1] & 0xff) << 16) | ((bytes[o + 2] & 0xff) << 8)
                        | (bytes[o + 3] & 0xff);
                return code != 0;
            }
            i += 9 + length;
        }
        return false;
    }

    @Test
    void waiterFloodBeyondTheConnectionBoundIsRefused() throws Exception {
        RemoteLeaseService app = client(TOKEN_APP);
        Lease held = app.acquire(LeaseRequest.builder(ME, "tenant/busy").build());
        List<CompletableFuture<Lease>> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            waiters.add(app.acquireAsync(LeaseRequest.builder(new HolderId("flood", "w" + i), "tenant/busy")
                    .waitFor(Duration.ofSeconds(30)).build()));
        }
        int refused = 0;
        for (int i = 3; i < 5; i++) {
            CompletableFuture<Lease> extra = waiters.get(i);
            ExecutionException e = assertThrows(ExecutionException.class, () -> extra.get(5, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof LeaseBusyException, e.toString());
            assertTrue(e.getCause().getMessage().contains("--max-waiters-per-connection"), e.getCause().getMessage());
            refused++;
        }
        assertEquals(2, refused);
        assertFalse(waiters.get(0).isDone(), "the waiters within the bound still wait");
        assertStillServing();
        app.release(held, null, null);
        Lease first = waiters.get(0).get(5, TimeUnit.SECONDS);
        assertEquals("w0", first.holder().owner(), "the first waiter is granted when the holder releases");
        app.release(first, null, null);
    }

    @Test
    void testOnlyCallsAreRefusedOnTheSystemClock() throws Exception {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, () -> stub(channel(), "1", TOKEN_OPS)
                .advanceTestClock(AdvanceTestClockRequest.newBuilder().setMicros(1_000_000).build()));
        assertEquals(Status.Code.FAILED_PRECONDITION, e.getStatus().getCode());
        assertTrue(e.getStatus().getDescription().contains("for tests only"), e.getStatus().getDescription());
    }

    @Test
    void metricsAndHealthEndpointsReport() throws Exception {
        RemoteLeaseService app = client(TOKEN_APP);
        Lease l = app.acquire(LeaseRequest.builder(ME, "tenant/m").build());
        assertThrows(LeaseBusyException.class, () -> app.acquire(LeaseRequest.builder(new HolderId("x", "y"), "tenant/m")
                .build()));
        app.release(l, null, null);
        HttpClient http = HttpClient.newHttpClient();
        String base = "http://127.0.0.1:" + server.httpPort();
        HttpResponse<String> metrics = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, metrics.statusCode());
        String body = metrics.body();
        assertTrue(body.contains("leasehold_ops_total{op=\"acquire\",outcome=\"granted\"} 1.0"), body);
        assertTrue(body.contains("leasehold_ops_total{op=\"acquire\",outcome=\"busy\"} 1.0"), body);
        assertTrue(body.contains("leasehold_op_duration_seconds_bucket{op=\"release\""), body);
        assertTrue(body.contains("leasehold_connections"), body);
        // The grant's witness was signed (the server signs by default): the signer's counters say so.
        assertTrue(metric(body, "leasehold_signer_statements_total") >= 1, body);
        assertTrue(metric(body, "leasehold_signer_batches_total") >= 1, body);
        assertEquals(0, metric(body, "leasehold_signer_queue_full_waits_total"), body);
        // Written whatever their value (metric fails on a missing sample).
        metric(body, "leasehold_signer_hurried_batches_total");
        metric(body, "leasehold_signer_queued");
        HttpResponse<String> health = http.send(HttpRequest.newBuilder(URI.create(base + "/health")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, health.statusCode());
        assertTrue(health.body().contains("\"status\":\"UP\""), health.body());
        HttpResponse<String> ready = http.send(HttpRequest.newBuilder(URI.create(base + "/ready")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, ready.statusCode(), ready.body());
    }

    /** The value of the sample {@code name} (no labels) in a Prometheus text exposition; fails if it is absent. */
    private static double metric(String body, String name) {
        return MetricSamples.sample(body, name);
    }

    /** Passes bytes through unchanged. */
    private static final class RawMarshaller implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }
    }
}
