package org.leasehold.remote;

import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.LongSupplier;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;

import com.google.protobuf.ByteString;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ConnectivityState;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NegotiationType;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.stub.StreamObserver;

import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SocketTls;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.KeysReply;
import org.leasehold.wire.proto.KeysRequest;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.SignedTimeReply;
import org.leasehold.wire.proto.TimeRequest;

/**
 * One lease server as the client sees it: its HTTP/2 connections ({@link RemoteClientConfig#connections()}, one by
 * default; every thread's calls are multiplexed on them), a session stream on each, the stubs, the server's last
 * {@link InfoReply} and the measured clock offset.
 *
 * <p>With several connections a name's calls always take the same one ({@link #lane(String)}): a lease's acquisition,
 * withdrawal, renewals, upgrade and release stay in order on one stream, and on the server this client's waiters on a
 * name and its releases of it are handled by the same event-loop thread. Unary calls (information, clock samples,
 * check, admin views) use the first.
 */
final class Endpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Endpoint.class.getName());
    private static final SecureRandom NONCES = new SecureRandom();

    final String address;
    /** The first connection: unary calls. */
    final ManagedChannel channel;
    final LeaseholdGrpc.LeaseholdBlockingStub blocking;
    final LeaseholdGrpc.LeaseholdStub async;
    /** Every connection, the first included, and the stub for its session stream. */
    private final ManagedChannel[] channels;
    private final LeaseholdGrpc.LeaseholdStub[] laneStubs;
    /** Each connection's session stream, made on first use (under {@code this}), read without locking. */
    private final AtomicReferenceArray<SessionChannel> sessions;
    /** TLS of the socket transport, made on first use; null for plain text. Guarded by {@code this}. */
    private SSLContext socketTls;
    private final TimeSource local;
    private final RemoteClientConfig config;
    private final ClockSync clock = new ClockSync();
    /** The proofs of witnesses this server's sessions still owe ({@code WitnessSeals}). */
    final PendingProofs proofs = new PendingProofs();
    /** The server's pinned keys and signed time, and whether this process's clock is close enough to it. */
    final SignedClock signed;
    private volatile InfoReply info;
    /** Whether the server runs on a test clock, once known (it does not change across its restarts). */
    private volatile Boolean testClock;
    private volatile TimeSource.Timer syncTimer;
    private volatile boolean closed;

    Endpoint(String address, RemoteClientConfig config, TimeSource local) {
        this.address = address;
        this.config = config;
        this.local = local;
        this.signed = new SignedClock(address, config.maxClockError());
        int n = config.connections();
        this.channels = new ManagedChannel[n];
        this.laneStubs = new LeaseholdGrpc.LeaseholdStub[n];
        this.sessions = new AtomicReferenceArray<>(n);
        HeaderInterceptor headers = new HeaderInterceptor(config.token());
        try {
            for (int i = 0; i < n; i++) {
                channels[i] = openChannel(address, config);
                laneStubs[i] = LeaseholdGrpc.newStub(ClientInterceptors.intercept(channels[i], headers));
            }
        } catch (RuntimeException e) {
            for (ManagedChannel c : channels) {
                if (c != null) {
                    c.shutdownNow();
                }
            }
            throw e;
        }
        this.channel = channels[0];
        this.blocking = LeaseholdGrpc.newBlockingStub(ClientInterceptors.intercept(channel, headers));
        this.async = laneStubs[0];
    }

    /** One HTTP/2 connection (made when first used) to {@code address}, plain or TLS as configured. */
    private static ManagedChannel openChannel(String address, RemoteClientConfig config) {
        int colon = address.lastIndexOf(':');
        NettyChannelBuilder b = NettyChannelBuilder.forAddress(address.substring(0, colon),
                Integer.parseInt(address.substring(colon + 1)))
                .directExecutor()
                .maxInboundMessageSize(config.maxInboundMessageBytes())
                .keepAliveTime(config.keepAliveTime().toMillis(), TimeUnit.MILLISECONDS)
                .keepAliveTimeout(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .disableRetry();
        if (config.trustCertificates() != null) {
            try {
                SslContextBuilder ssl = GrpcSslContexts.forClient().trustManager(config.trustCertificates().toFile());
                if (config.clientCertificate() != null) {
                    ssl.keyManager(config.clientCertificate().toFile(), config.clientKey().toFile());
                }
                b.sslContext(ssl.build()).negotiationType(NegotiationType.TLS);
            } catch (SSLException | IllegalArgumentException e) {
                throw new IllegalArgumentException("cannot set up TLS to " + address + " from " + config.trustCertificates()
                        + (config.clientCertificate() != null ? ", " + config.clientCertificate() + ", "
                        + config.clientKey() : "") + ": " + e.getMessage(), e);
            }
            if (config.authority() != null) {
                b.overrideAuthority(config.authority());
            }
        } else {
            b.usePlaintext();
        }
        return b.build();
    }

    /** The connection a name's calls take: a hash of the name over {@link RemoteClientConfig#connections()}. */
    int lane(String name) {
        if (channels.length == 1) {
            return 0;
        }
        // Mixed, so that names alike in their low hash bits spread; independent of the rendezvous server choice.
        int h = name.hashCode() * 0x9E3779B9;
        return Math.floorMod(h ^ (h >>> 16), channels.length);
    }

    /** Measures the offset now (a few samples, keeping the best) and schedules the next measurement. */
    void syncNow() throws LeaseException {
        for (int i = 0; i < 3; i++) {
            long t0 = local.nowMicros();
            InfoReply r = call(() -> blocking.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .info(InfoRequest.getDefaultInstance()));
            long t1 = local.nowMicros();
            info = r;
            clock.sample(t0, r.getNowMicros(), t1);
        }
        try {
            checkSignedTime();
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3101 clock sample from {0} failed: {1}", address,
                    e.getMessage());
        }
        scheduleSync();
    }

    /**
     * Asks the server for a signed time over a fresh nonce, verifies it against the pinned keys and compares this
     * process's clock with it ({@link SignedClock#check}). Nothing is checked against a server on a test clock (its
     * time is not the time), a server that signs nothing, or one of an earlier release (no such call), unless this
     * client pinned the server's keys before: then such a server is refused ({@link SignedClock#downgraded}).
     *
     * @throws LeaseException the server did not answer, or its answer does not verify (then acquisitions are refused
     *                        until a later check passes)
     */
    void checkSignedTime() throws LeaseException {
        InfoReply i = info;
        if (i != null && i.getTestClock()) {
            return;
        }
        byte[] nonce = new byte[16];
        NONCES.nextBytes(nonce);
        long t0 = local.nowMicros();
        SignedTimeReply r;
        try {
            r = blocking.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .signTime(TimeRequest.newBuilder().setNonce(ByteString.copyFrom(nonce)).build());
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.UNIMPLEMENTED) {
                if (signed.pinnedKeys()) {
                    throw signed.downgraded("does not know the signed time call");
                }
                return;
            }
            throw failure(e.getStatus());
        }
        long t1 = local.nowMicros();
        if (r.hasError() && r.getError().getKind() == LeaseError.Kind.UNAVAILABLE) {
            // Unavailable is also a signer's passing failure: only a server that serves no keys stopped signing.
            if (signed.pinnedKeys() && fetchKeys().getKeysCount() == 0) {
                throw signed.downgraded("serves no keys and answers that it signs nothing");
            }
            return;
        }
        try {
            signed.check(t0, signed.verify(nonce, r, this::fetchKeys), t1);
        } catch (LeaseServiceUnavailableException refused) {
            signed.refuse(refused.getMessage());
            throw refused;
        }
    }

    /** The server's public keys (one call). */
    KeysReply fetchKeys() throws LeaseException {
        return call(() -> blocking.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .keys(KeysRequest.getDefaultInstance()));
    }

    /**
     * Refuses an acquisition while this process's clock is too far from the server's signed time (or the server's
     * signed time did not verify): the message says by how much and what to do.
     */
    void refuseIfClockOff() throws LeaseServiceUnavailableException {
        String why = signed.refusal();
        if (why != null) {
            throw new LeaseServiceUnavailableException(null, why);
        }
    }

    private void scheduleSync() {
        if (closed) {
            return;
        }
        TimeSource.Timer old = syncTimer;
        if (old != null) {
            old.cancel();
        }
        // After the interval of elapsed time, not at a time of the local clock: a clock stepped back would otherwise
        // put off the very measurement that sees the step by as long as the step.
        syncTimer = local.scheduleAfter(Micros.of(config.clockSyncInterval()), this::syncAsync);
    }

    /** One sample without blocking (runs on the timer thread; the reply arrives on the transport's thread). */
    private void syncAsync() {
        if (closed) {
            return;
        }
        long t0 = local.nowMicros();
        async.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS).info(InfoRequest.getDefaultInstance(),
                new StreamObserver<>() {
                    @Override
                    public void onNext(InfoReply r) {
                        long t1 = local.nowMicros();
                        info = r;
                        clock.sample(t0, r.getNowMicros(), t1);
                    }

                    @Override
                    public void onError(Throwable t) {
                        LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3101 clock sample from {0} failed: {1}", address,
                                t.getMessage());
                        scheduleSync();
                    }

                    @Override
                    public void onCompleted() {
                        scheduleSync();
                        // The signed time takes blocking calls: not on the transport's or the timer's thread.
                        CompletableFuture.runAsync(() -> {
                            try {
                                checkSignedTime();
                            } catch (LeaseException e) {
                                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3101 clock sample from {0} failed: {1}",
                                        address, e.getMessage());
                            }
                        });
                    }
                });
    }

    /** The last server information, fetching it (and the clock offset) if none yet. */
    InfoReply info() throws LeaseException {
        InfoReply r = info;
        if (r == null) {
            syncNow();
            r = info;
        }
        return r;
    }

    /**
     * True if the server said it signs a grant's or renewal's witness only when asked (its last information, no call);
     * false if it did not, or nothing is known yet (then every proof is pushed, as a server of an earlier release
     * does).
     */
    boolean proofsOnRequest() {
        InfoReply r = info;
        return r != null && r.getProofsOnRequest();
    }

    /** Fresh server information (one call). */
    InfoReply fetchInfo() throws LeaseException {
        InfoReply r = call(() -> blocking.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .info(InfoRequest.getDefaultInstance()));
        info = r;
        return r;
    }

    void forgetInfo() {
        info = null;
    }

    boolean testClock() throws LeaseException {
        Boolean known = testClock;
        if (known == null) {
            known = info().getTestClock();
            testClock = known;
        }
        return known;
    }

    /** The server's time as estimated from the local clock and the measured offset. */
    Instant estimatedNow() throws LeaseException {
        if (!clock.hasSample()) {
            syncNow();
        }
        return Micros.toInstant(local.nowMicros() + clock.offsetMicros());
    }

    ClockOffset clockOffset() {
        return clock.snapshot(local.nowMicros());
    }

    /** Runs one blocking call, turning transport failures into the API's exceptions. */
    <T> T call(java.util.function.Supplier<T> call) throws LeaseException {
        try {
            return call.get();
        } catch (StatusRuntimeException e) {
            throw failure(e.getStatus());
        }
    }

    /**
     * Reconnects at once rather than after gRPC's exponential backoff (which grows to two minutes): a restarted
     * server should be seen as soon as it listens again.
     */
    void nudge() {
        for (ManagedChannel c : channels) {
            if (c.getState(false) != ConnectivityState.READY) {
                c.resetConnectBackoff();
            }
        }
    }

    /** The exception for a call that failed at the transport or protocol level. */
    LeaseException failure(Status status) {
        String what = "lease server " + address;
        LeaseException tls = tlsFailure(status, what);
        if (tls != null) {
            nudge();
            info = null;
            return tls;
        }
        switch (status.getCode()) {
            case UNAVAILABLE, DEADLINE_EXCEEDED -> {
                nudge();
                info = null;
                return new LeaseServiceUnavailableException(null, what + " is unreachable or did not answer in time ("
                        + status.getCode() + ": " + status.getDescription() + "); nothing was changed by this call "
                        + "unless it reached the server: retry, and check that the server runs and the network reaches it"
                        + (config.trustCertificates() == null && closedOnPlainText(status) ? " (a server that "
                                + "expects TLS closes plain-text connections like this: then set tlsTrustFile)" : ""),
                        status.asRuntimeException());
            }
            case UNAUTHENTICATED -> {
                return new LeasePermissionDeniedException(null, null, null, what + " did not authenticate this client: "
                        + status.getDescription());
            }
            case PERMISSION_DENIED -> {
                return new LeasePermissionDeniedException(null, null, null, what + " refused the call: "
                        + status.getDescription());
            }
            case CANCELLED -> {
                return new LeaseServiceUnavailableException(null, "the call to " + what + " was cancelled: "
                        + status.getDescription(), status.asRuntimeException());
            }
            default -> {
                return new LeaseException(what + " refused the call (" + status.getCode() + "): " + status.getDescription(),
                        status.asRuntimeException());
            }
        }
    }

    /**
     * True if the server took the connection and then ended it, as a TLS server ends a plain-text connection: gRPC
     * words it "Network closed for unknown reason", or "io exception" over a reset or closed connection, depending on
     * which side notices first. A server that is not there refuses the connection (or the name does not resolve), and
     * a call that timed out is not this either.
     */
    private static boolean closedOnPlainText(Status status) {
        if (status.getCode() != Status.Code.UNAVAILABLE) {
            return false;
        }
        if (String.valueOf(status.getDescription()).contains("Network closed")) {
            return true;
        }
        for (Throwable t = status.getCause(); t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof java.net.ConnectException || t instanceof java.net.UnknownHostException
                    || t instanceof java.nio.channels.UnresolvedAddressException
                    || String.valueOf(t.getMessage()).contains("refused")) {
                return false;
            }
        }
        return status.getCause() != null;
    }

    /**
     * A failed TLS handshake, told as what it most likely means: the server refused this client's certificate (or
     * its lack of one), or this client does not trust the server's certificate; null if {@code status} is not about
     * TLS.
     */
    private LeaseException tlsFailure(Status status, String what) {
        SSLException ssl = null;
        Throwable root = null;
        for (Throwable t = status.getCause(); t != null && t != root; t = t.getCause()) {
            if (t instanceof SSLException s && ssl == null) {
                ssl = s;
            }
            root = t;
        }
        if (ssl == null) {
            return null;
        }
        String detail = root.getMessage() != null ? root.getMessage() : root.toString();
        String clientCert = config.clientCertificate() == null ? "this client sent none: set tlsCertFile and tlsKeyFile to "
                + "a certificate signed by the server's client CA (--tls-client-ca)" : "this client sent "
                + config.clientCertificate() + ", which the server does not accept: use one signed by the server's client "
                + "CA (--tls-client-ca)";
        if (detail.contains("Received fatal alert") || detail.contains("_ALERT_")) {
            // An alert from the server (as the JDK and as BoringSSL word it): it did not accept this client's
            // certificate, or its absence.
            return new LeasePermissionDeniedException(null, null, null, what + " refused the TLS handshake (" + detail
                    + "): it requires a client certificate (mutual TLS), and " + clientCert);
        }
        if (config.trustCertificates() == null) {
            return new LeaseServiceUnavailableException(null, "the TLS handshake with " + what + " failed (" + detail
                    + "), yet this client is set up for plain text: set tlsTrustFile to the CA of the server's "
                    + "certificate", status.asRuntimeException());
        }
        return new LeaseServiceUnavailableException(null, "the TLS handshake with " + what + " failed (" + detail
                + "): check that tlsTrustFile (" + config.trustCertificates() + ") holds the CA that signed the server's "
                + "certificate and that the certificate names " + (config.authority() != null ? "'" + config.authority()
                + "' (tlsAuthority)" : "the host of " + address + " (or set tlsAuthority to a name it carries)")
                + "; if the server requires client certificates (mutual TLS), " + clientCert, status.asRuntimeException());
    }

    /**
     * The session of {@code name}'s connection ({@link #lane(String)}) on the configured transport, made on first use.
     *
     * @param ids request ids for the session's own requests (keep-alives)
     */
    SessionChannel session(String name, SessionChannel.Orphans orphans, LongSupplier ids) throws LeaseException {
        int lane = lane(name);
        SessionChannel s = sessions.get(lane);
        if (s != null) {
            return s;
        }
        synchronized (this) {
            s = sessions.get(lane);
            if (s == null) {
                if (config.transport() == RemoteClientConfig.Transport.SOCKET) {
                    if (socketTls == null && config.trustCertificates() != null) {
                        try {
                            socketTls = SocketTls.clientContext(config.trustCertificates(), config.clientCertificate(),
                                    config.clientKey());
                        } catch (SSLException | IllegalArgumentException e) {
                            throw new LeaseException("cannot set up TLS to " + address + " from "
                                    + config.trustCertificates() + ": " + e.getMessage(), e);
                        }
                    }
                    s = new SocketSession(this, config, socketTls, orphans, ids);
                } else {
                    s = new AcquireSession(this, laneStubs[lane], orphans, ids);
                }
                sessions.set(lane, s);
            }
            return s;
        }
    }

    /** The host part of {@link #address}. */
    String host() {
        String h = address.substring(0, address.lastIndexOf(':'));
        return h.startsWith("[") && h.endsWith("]") ? h.substring(1, h.length() - 1) : h;
    }

    /**
     * The port of the server's socket transport, as the server tells it (a call, if not known yet).
     *
     * @throws LeaseException the server has none: it was started with {@code --socket-listen none}, or is of a release
     *                        that served it only when asked
     */
    int socketPort() throws LeaseException {
        int port = info().getSocketPort();
        if (port == 0) {
            port = fetchInfo().getSocketPort();
        }
        if (port == 0) {
            throw new LeaseServiceUnavailableException(null, "lease server " + address + " has no socket transport, "
                    + "yet this client takes its lease calls there (transport=socket, the default): start the server "
                    + "without --socket-listen none (it serves the socket transport by default), or set transport=grpc "
                    + "on this client");
        }
        return port;
    }

    @Override
    public void close() {
        closed = true;
        List<SessionChannel> open = new ArrayList<>();
        synchronized (this) {
            for (int i = 0; i < sessions.length(); i++) {
                if (sessions.get(i) != null) {
                    open.add(sessions.get(i));
                }
            }
        }
        for (SessionChannel s : open) {
            s.close();
        }
        TimeSource.Timer t = syncTimer;
        if (t != null) {
            t.cancel();
        }
        for (ManagedChannel c : channels) {
            c.shutdown();
        }
        try {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
            for (ManagedChannel c : channels) {
                if (!c.awaitTermination(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    c.shutdownNow();
                }
            }
        } catch (InterruptedException e) {
            for (ManagedChannel c : channels) {
                c.shutdownNow();
            }
            Thread.currentThread().interrupt();
        }
    }

    /** Adds the protocol version and the bearer token (if any) to every call. */
    private static final class HeaderInterceptor implements ClientInterceptor {
        private final String authorization;

        HeaderInterceptor(String token) {
            this.authorization = token == null ? null : "Bearer " + token;
        }

        @Override
        public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                @Override
                public void start(Listener<R> listener, Metadata headers) {
                    headers.put(Protocol.VERSION_HEADER, Integer.toString(Protocol.VERSION));
                    if (authorization != null) {
                        headers.put(Protocol.AUTHORIZATION, authorization);
                    }
                    super.start(listener, headers);
                }
            };
        }
    }
}
