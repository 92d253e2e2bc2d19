package org.leasehold.server;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.time.Micros;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SocketTls;

/**
 * The standalone lease server: one embedded lease engine (internally sharded into lock stripes) served over gRPC,
 * with authentication, per-namespace ACLs, metrics and health. {@link #start} binds and returns at once; {@link
 * #close} shuts down gracefully: no new calls, waiting acquisitions answered "unavailable", calls in flight given
 * the drain timeout.
 */
public final class LeaseServer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseServer.class.getName());

    private final ServerConfig config;
    private final EngineHolder holder;
    private final ServerMetrics metrics = new ServerMetrics();
    private final GrpcLeaseEndpoint service;
    private final LeaseSessions sessions;
    private final Server grpc;
    private final HttpEndpoint http;
    private final SocketTransport socket;
    private volatile boolean stopping;

    private LeaseServer(ServerConfig config) throws IOException {
        this.config = config.validate();
        Credentials tokens = config.tokens() != null ? Credentials.read(config.tokens()) : null;
        AccessControl acl = config.acl() != null ? AccessControl.read(config.acl()) : AccessControl.allowAll();
        this.holder = new EngineHolder(config.engine(), config.testClock(), config.stateDir(), config.backend(),
                config.signing());
        metrics.clockBehind(() -> holder.embedded() == null ? 0 : holder.embedded().clockBehind().toNanos() / 1e9);
        if (holder.signer() != null) {
            metrics.signer(holder.signer()::totals);
        }
        GrantOwners owners = new GrantOwners();
        LeaseAccess access = new LeaseAccess(acl, owners);
        LeaseCalls calls = new LeaseCalls(holder, owners, metrics);
        this.sessions = new LeaseSessions(access, calls, config.maxWaiters(), config.maxWaitersPerConnection());
        this.service = new GrpcLeaseEndpoint(access, calls, sessions);
        CallGate gate = new CallGate(tokens, config.tlsClientCa() != null, metrics);
        NettyServerBuilder b = NettyServerBuilder.forAddress(config.listen())
                // Handlers never block (waiting is a future), so they run on the transport's event loop.
                .directExecutor()
                .maxInboundMessageSize(config.maxMessageBytes())
                .maxInboundMetadataSize(16 * 1024)
                .maxConcurrentCallsPerConnection(config.maxCallsPerConnection())
                .permitKeepAliveTime(5, TimeUnit.SECONDS)
                .permitKeepAliveWithoutCalls(true)
                .keepAliveTime(30, TimeUnit.SECONDS)
                .keepAliveTimeout(10, TimeUnit.SECONDS)
                .handshakeTimeout(10, TimeUnit.SECONDS)
                .addTransportFilter(gate.transportFilter())
                .addService(ServerInterceptors.intercept(CallGate.lenient(service.bindService()), gate));
        if (config.tlsCert() != null) {
            SslContextBuilder ssl = GrpcSslContexts.forServer(config.tlsCert().toFile(), config.tlsKey().toFile());
            if (config.tlsClientCa() != null) {
                ssl.trustManager(config.tlsClientCa().toFile())
                        .clientAuth(tokens != null ? ClientAuth.OPTIONAL : ClientAuth.REQUIRE);
            }
            b.sslContext(ssl.build());
        }
        this.grpc = startGrpc(b);
        boolean ok = false;
        HttpEndpoint h = null;
        try {
            h = config.httpListen() != null ? new HttpEndpoint(config.httpListen(), metrics, new HealthView()) : null;
            ServerConfig.SocketSettings s = config.socket();
            this.socket = s == null ? null : new SocketTransport(s.listen(), config.tlsCert() == null ? null
                    : SocketTls.serverContext(config.tlsCert(), config.tlsKey(), config.tlsClientCa()),
                    config.tlsClientCa() != null, tokens, sessions, metrics, config.maxMessageBytes(), s.maxConnections(),
                    Duration.ofSeconds(10), Protocol.SOCKET_IDLE_TIMEOUT, s.writeTimeout(), s.spinWait());
            ok = true;
        } finally {
            if (!ok) {
                grpc.shutdownNow();
                holder.close();
                if (h != null) {
                    h.close();
                }
            }
        }
        this.http = h;
        service.socketPort(socketPort());
        service.maxMessageBytes(config.maxMessageBytes());
        if (config.portFile() != null) {
            Files.writeString(config.portFile(), "grpc=" + port() + "\nhttp=" + (http != null ? http.port() : "")
                    + "\nsocket=" + (socket != null ? socket.port() : "") + "\n", StandardCharsets.UTF_8);
        }
        if (holder.testClock()) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2010 this lease server runs on a TEST CLOCK starting at {0}: "
                    + "time moves only when a test says so. Never use --test-clock in production", config.testClock());
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2001 lease server listening on {0} (gRPC{1}{2}{3}), "
                + "metrics and health on {4}, socket transport on {5}; grants from {6}", address(),
                config.tlsCert() != null ? ", TLS" : "", config.tlsClientCa() != null ? ", client certificates" : "",
                tokens != null ? ", " + tokens.size() + " token(s)" : "", http != null ? "127.0.0.1:" + http.port()
                        : "(off)", socket != null ? socket.address() : "(off)", holder.engine().availableFrom());
    }

    private Server startGrpc(NettyServerBuilder b) throws IOException {
        try {
            return b.build().start();
        } catch (IOException | RuntimeException e) {
            holder.close();
            throw e;
        }
    }

    /** Starts a server with {@code config}; it is listening when this returns. */
    public static LeaseServer start(ServerConfig config) throws IOException {
        return new LeaseServer(config);
    }

    /** The bound gRPC port. */
    public int port() {
        return ((InetSocketAddress) grpc.getListenSockets().get(0)).getPort();
    }

    /** The bound gRPC address as {@code host:port}. */
    public String address() {
        InetSocketAddress a = (InetSocketAddress) grpc.getListenSockets().get(0);
        return a.getAddress().getHostAddress() + ":" + a.getPort();
    }

    /** The bound socket transport port, or -1 if off. */
    public int socketPort() {
        return socket != null ? socket.port() : -1;
    }

    /** The bound metrics and health port, or -1 if off. */
    public int httpPort() {
        return http != null ? http.port() : -1;
    }

    /** When the engine grants again after its quiet period. */
    public Instant availableFrom() {
        return holder.engine().availableFrom();
    }

    /** Blocks until the server has shut down. */
    public void awaitTermination() throws InterruptedException {
        grpc.awaitTermination();
    }

    /** Graceful shutdown: stop accepting calls, answer waiting acquisitions, drain, then stop. */
    @Override
    public void close() {
        synchronized (this) {
            if (stopping) {
                return;
            }
            stopping = true;
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2002 lease server on {0} shutting down: no new calls; {1} waiting "
                + "acquisition(s) will be answered 'unavailable'", address(), sessions.waitingNow());
        grpc.shutdown();
        holder.close();
        if (socket != null) {
            socket.close(config.drainTimeout());
        }
        try {
            if (!grpc.awaitTermination(config.drainTimeout().toMillis(), TimeUnit.MILLISECONDS)) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2003 calls still in flight after the drain timeout {0}; "
                        + "cancelling them", config.drainTimeout());
                grpc.shutdownNow();
                grpc.awaitTermination(2, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            grpc.shutdownNow();
            Thread.currentThread().interrupt();
        }
        if (http != null) {
            http.close();
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2004 lease server stopped");
    }

    /** What /health and /ready report. */
    /**
     * Whether the served lease service grants now: the engine past its quiet period, before its fence and its time
     * mark's horizon; a backend past its quiet period (whether it reaches its cluster shows in the calls).
     */
    private boolean granting() {
        EmbeddedLeaseService engine = holder.embedded();
        return engine != null ? engine.granting() : !holder.time().now().isBefore(holder.engine().availableFrom());
    }

    private final class HealthView implements HttpEndpoint.Status {
        @Override
        public Map<String, Object> keys() {
            return new Signatures(holder).keysView();
        }

        @Override
        public Map<String, Object> health() {
            Map<String, Object> m = new LinkedHashMap<>();
            long now = holder.time().nowMicros();
            long available = Micros.of(holder.engine().availableFrom());
            boolean quiet = now < available;
            metrics.quiet.set(quiet ? 1 : 0);
            m.put("serviceId", holder.engine().serviceId());
            m.put("serverTime", Micros.toInstant(now).toString());
            m.put("availableFrom", Micros.toInstant(available).toString());
            m.put("quietPeriod", quiet);
            EmbeddedLeaseService engine = holder.embedded();
            if (engine != null) {
                m.put("clockBehindSeconds", engine.clockBehind().toNanos() / 1e9);
                m.put("stateDir", holder.stateDir() == null ? "(none)" : holder.stateDir().toString());
                Instant horizon = engine.markHorizon();
                if (horizon != null) {
                    m.put("timeMarkHorizon", horizon.toString());
                }
                String failure = engine.markFailure();
                if (failure != null) {
                    m.put("timeMarkFailure", failure);
                }
            } else {
                m.put("backend", config.backend().replaceAll("password=[^&]*", "password=***"));
            }
            m.put("granting", granting());
            m.put("stopping", stopping);
            m.put("waitingAcquisitions", sessions.waitingNow());
            m.put("testClock", holder.testClock());
            return m;
        }

        @Override
        public boolean ready() {
            return !stopping && granting();
        }
    }
}
