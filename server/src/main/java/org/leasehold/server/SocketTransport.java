package org.leasehold.server;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

import org.leasehold.wire.Protocol;
import org.leasehold.wire.SpinWait;
import org.leasehold.wire.WireFrames;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.SocketHello;
import org.leasehold.wire.proto.SocketWelcome;

/**
 * The socket transport: the session stream over a plain (or TLS) TCP connection with length-prefixed protobuf frames
 * instead of HTTP/2, so that a client thread can write its request and read its answer itself, with no thread
 * hand-off on either side. One thread per connection reads its requests and handles each batch inline (the engine never
 * blocks), writing the answers before it reads again (once for all the batches one read brought); answers made on other
 * threads (grants to waiting requests) are written by a small pool, so that a client that stops reading holds up only
 * its own connection. A connection whose answers have not been taken for {@link #writeTimeout} is closed, which
 * withdraws its waiting requests.
 *
 * <p>Sessions here are the same {@link LeaseSessions} sessions as on gRPC: same authentication (bearer token in the
 * {@code SocketHello}, or client certificate), same ACLs, limits and metrics.
 */
final class SocketTransport implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(SocketTransport.class.getName());

    /** Request id of a connection-level error answer, after which the server closes the connection. */
    static final long CONNECTION_ERROR_ID = 0;

    private final ServerSocket listener;
    private final SSLSocketFactory tlsFactory;
    private final boolean tls;
    private final boolean clientCertificates;
    private final Credentials tokens;
    private final LeaseSessions sessions;
    private final ServerMetrics metrics;
    private final int maxMessageBytes;
    private final int maxConnections;
    private final Duration handshakeTimeout;
    private final Duration idleTimeout;
    private final Duration writeTimeout;
    private final Map<Long, Conn> open = new ConcurrentHashMap<>();
    private final AtomicLong ids = new AtomicLong();
    private final ExecutorService writers = Executors.newCachedThreadPool(daemon("leasehold-socket-writer"));
    private final ScheduledExecutorService watchdog = Executors.newSingleThreadScheduledExecutor(
            daemon("leasehold-socket-watchdog"));
    private final Thread acceptor;
    private volatile boolean closing;
    private final Duration spinWait;
    /** Connection threads waiting actively now; at most {@link #maxSpinning}. */
    private final AtomicInteger spinning = new AtomicInteger();
    private final int maxSpinning = Math.max(1, Runtime.getRuntime().availableProcessors() / 2);

    @SuppressWarnings("checkstyle:ParameterNumber")
    SocketTransport(InetSocketAddress listen, SSLContext ssl, boolean clientCertificates, Credentials tokens,
            LeaseSessions sessions, ServerMetrics metrics, int maxMessageBytes, int maxConnections,
            Duration handshakeTimeout, Duration idleTimeout, Duration writeTimeout, Duration spinWait) throws IOException {
        this.tls = ssl != null;
        this.spinWait = spinWait;
        this.clientCertificates = clientCertificates;
        this.tokens = tokens;
        this.sessions = sessions;
        this.metrics = metrics;
        this.maxMessageBytes = maxMessageBytes;
        this.maxConnections = maxConnections;
        this.handshakeTimeout = handshakeTimeout;
        this.idleTimeout = idleTimeout;
        this.writeTimeout = writeTimeout;
        // TLS is layered on each accepted TCP socket (not an SSLServerSocket), so that the watchdog can close the TCP
        // socket under a TLS write that blocks: closing the TLS socket itself would wait for that write.
        this.tlsFactory = ssl != null ? ssl.getSocketFactory() : null;
        this.listener = new ServerSocket();
        listener.setReuseAddress(true);
        listener.bind(listen, 128);
        this.acceptor = daemon("leasehold-socket-accept").newThread(this::acceptLoop);
        acceptor.start();
        long shortest = Math.min(writeTimeout.toMillis(), Math.min(handshakeTimeout.toMillis(), idleTimeout.toMillis()));
        long tick = Math.max(100, Math.min(1_000, shortest / 4));
        watchdog.scheduleWithFixedDelay(this::checkConnections, tick, tick, TimeUnit.MILLISECONDS);
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        AtomicLong n = new AtomicLong();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    int port() {
        return listener.getLocalPort();
    }

    String address() {
        return listener.getInetAddress().getHostAddress() + ":" + listener.getLocalPort();
    }

    private void acceptLoop() {
        while (!closing) {
            Socket s;
            try {
                s = listener.accept();
            } catch (IOException e) {
                if (!closing) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2301 the socket transport could not accept a "
                            + "connection: {0}", e.toString());
                }
                continue;
            }
            if (open.size() >= maxConnections) {
                metrics.refused.labelValues("too_many_connections").inc();
                refuseAndClose(s);
                continue;
            }
            Conn c = new Conn(ids.incrementAndGet(), s);
            open.put(c.id, c);
            metrics.connections.inc();
            metrics.socketConnections.inc();
            Thread t = new Thread(c::run, "leasehold-socket-" + c.id);
            t.setDaemon(true);
            c.reader = t;
            t.start();
        }
    }

    /** Tells a connection beyond the limit why it is closed (plain text only: a TLS handshake could stall). */
    private void refuseAndClose(Socket s) {
        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2302 socket connection from {0} refused: {1} connections are "
                + "open, the server''s --socket-max-connections", s.getRemoteSocketAddress(), maxConnections);
        try (s) {
            if (!tls) {
                WireFrames.write(s.getOutputStream(), SocketWelcome.newBuilder().setProtocolVersion(Protocol.VERSION)
                        .setError(unavailable("the lease server already has " + maxConnections + " socket connections "
                                + "(its --socket-max-connections): share connections between threads, or retry later"))
                        .build());
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2303 refusing {0}: {1}", s.getRemoteSocketAddress(), e);
        }
    }

    private static LeaseError unavailable(String message) {
        return LeaseError.newBuilder().setKind(LeaseError.Kind.UNAVAILABLE).setMessage(message).build();
    }

    private static LeaseError invalid(String message) {
        return LeaseError.newBuilder().setKind(LeaseError.Kind.INVALID).setReason("NULL_ARGUMENT").setMessage(message)
                .build();
    }

    /**
     * Closes connections whose answers have waited longer than the write timeout for the client to read them, that
     * have not said hello within the handshake timeout, or that have sent nothing for the idle timeout. Reads block
     * without a socket timeout (one system call per read; a timed read is three), so these deadlines are kept here.
     */
    private void checkConnections() {
        long now = System.nanoTime();
        for (Conn c : open.values()) {
            long since = c.writingSince;
            if (since != 0 && now - since > writeTimeout.toNanos()) {
                metrics.refused.labelValues("stalled_reader").inc();
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2304 socket connection {0} from {1} has not read its "
                        + "answers for {2}: closing it (its waiting requests are withdrawn)", c.id, c.remote, writeTimeout);
                c.closeSocket();
                continue;
            }
            boolean welcomed = c.welcomed;
            Duration limit = welcomed ? idleTimeout : handshakeTimeout;
            if (now - c.lastReadNanos > limit.toNanos()) {
                metrics.refused.labelValues(welcomed ? "idle" : "handshake_timeout").inc();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2307 socket connection {0} from {1} sent nothing for {2}: "
                        + "closing it", c.id, c.remote, limit);
                c.closeSocket();
            }
        }
    }

    /** Stops accepting, gives pending answers up to {@code drain} to go out, then closes every connection. */
    void close(Duration drain) {
        closing = true;
        try {
            listener.close();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2305 closing the socket listener: {0}", e.toString());
        }
        writers.shutdown();
        try {
            writers.awaitTermination(drain.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        for (Conn c : open.values()) {
            c.closeSocket();
        }
        writers.shutdownNow();
        watchdog.shutdownNow();
    }

    @Override
    public void close() {
        close(Duration.ZERO);
    }

    /** One client connection: its reader thread, its session, and how its answers are written. */
    private final class Conn implements LeaseSessions.Outlet {
        final long id;
        /** The accepted TCP socket: closing it ends the connection at once, TLS or not. */
        final Socket raw;
        /** What requests are read from and answers written to: {@link #raw}, or TLS over it. */
        private Socket socket;
        final String remote;
        final CallGate.Connection gate;
        volatile Thread reader;
        /** When a write of answers began and has not finished (System.nanoTime), or 0. */
        volatile long writingSince;
        /** When the connection was accepted or last delivered a frame (System.nanoTime). */
        volatile long lastReadNanos = System.nanoTime();
        /** Whether the hello was accepted: the idle timeout applies from then, the handshake timeout before. */
        volatile boolean welcomed;
        private OutputStream out;
        private final AtomicBoolean flushQueued = new AtomicBoolean();
        /** Encodes the answers' frames; used under this connection's lock, as the writes are. */
        private final WireFrames.Encoder frames = new WireFrames.Encoder();
        private final AtomicBoolean socketClosed = new AtomicBoolean();
        private final SpinWait spin = new SpinWait(spinWait);

        Conn(long id, Socket raw) {
            this.id = id;
            this.raw = raw;
            this.socket = raw;
            this.remote = String.valueOf(raw.getRemoteSocketAddress());
            this.gate = new CallGate.Connection(id, remote);
        }

        void run() {
            LeaseSessions.SessionHandle session = null;
            try {
                raw.setTcpNoDelay(true);
                if (tlsFactory != null) {
                    SSLSocket ssl = (SSLSocket) tlsFactory.createSocket(raw, null, true);
                    ssl.setUseClientMode(false);
                    if (clientCertificates) {
                        // With tokens too, a certificate is optional (a caller may authenticate either way).
                        if (tokens != null) {
                            ssl.setWantClientAuth(true);
                        } else {
                            ssl.setNeedClientAuth(true);
                        }
                    }
                    socket = ssl;
                }
                out = socket.getOutputStream();
                WireFrames.Reader in = new WireFrames.Reader(socket.getInputStream(), maxMessageBytes);
                String principal = handshake(in);
                if (principal == null) {
                    return;
                }
                session = sessions.open(principal, gate, this);
                lastReadNanos = System.nanoTime();
                welcomed = true;
                InputStream rawIn = raw.getInputStream();
                int framesSinceWait = 0;
                while (true) {
                    if (!in.hasFrame()) {
                        awaitRequest(rawIn, framesSinceWait);
                        framesSinceWait = 0;
                    }
                    SessionRequests batch = in.next(SessionRequests.parser(), "SessionRequests");
                    framesSinceWait++;
                    lastReadNanos = System.nanoTime();
                    // Frames the last read brought in beside this one are handled before the answers are written:
                    // one write for all of them.
                    session.handle(batch, in.hasFrame());
                }
            } catch (WireFrames.BadFrameException e) {
                metrics.refused.labelValues(e.fault()).inc();
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2306 socket connection {0} from {1} sent a bad frame: {2}",
                        id, remote, e.getMessage());
                String limit = e.fault().equals("too_large") ? " (the server's --max-message-bytes)" : "";
                if (session != null) {
                    session.flush(); // the answers to the frames before it
                    tellAndClose(session, "this connection sent a bad frame and is closed: " + e.getMessage() + limit);
                } else {
                    welcomeError(invalid("the first frame must be a SocketHello: " + e.getMessage() + limit));
                }
            } catch (EOFException | SocketException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2308 socket connection {0} from {1} ended: {2}", id, remote,
                        e.getMessage());
            } catch (IOException | RuntimeException e) {
                // After the watchdog or the server's close closed the socket, the read fails in whichever way the
                // socket (TCP or TLS) does: expected, not a fault.
                LOG.log(socketClosed.get() ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, "LEASEHOLD-2309 "
                        + "socket connection {0} from {1} failed: {2}", id, remote, e.toString());
            } finally {
                if (session != null) {
                    session.end();
                }
                closeSocket();
                open.remove(id);
                metrics.connections.dec();
            }
        }

        /**
         * Before a read that would block: waits actively for the next request for up to the spin wait, if fewer than
         * {@link #maxSpinning} connection threads are doing so (so that a quiet server's core does not fall asleep
         * between a client's calls), and counts the outcome. Not after a read that brought several frames
         * ({@code frames}): the client's threads are calling faster than one is answered, so the cores have work, and
         * a thread that blocks lets the next requests gather for one read and one write of their answers.
         */
        private void awaitRequest(InputStream rawIn, int frames) throws IOException {
            if (!spin.enabled()) {
                return;
            }
            if (frames > 1) {
                metrics.spinSkips.inc();
                return;
            }
            if (spinning.incrementAndGet() > maxSpinning) {
                spinning.decrementAndGet();
                return;
            }
            SpinWait.Outcome outcome;
            try {
                outcome = spin.await(rawIn);
            } finally {
                spinning.decrementAndGet();
            }
            if (outcome != SpinWait.Outcome.SKIPPED) {
                (outcome == SpinWait.Outcome.HIT ? metrics.spinHits : metrics.spinMisses).inc();
            }
        }

        /** Reads and checks the client's hello; the principal, or null after refusing the connection. */
        private String handshake(WireFrames.Reader in) throws IOException {
            if (socket instanceof SSLSocket ssl) {
                ssl.startHandshake();
            }
            SocketHello hello = in.next(SocketHello.parser(), "SocketHello");
            if (hello.getProtocolVersion() != Protocol.VERSION) {
                metrics.refused.labelValues("protocol_version").inc();
                welcomeError(invalid("this lease server speaks Leasehold protocol version " + Protocol.VERSION + "; "
                        + (hello.getProtocolVersion() == 0 ? "the first frame was no SocketHello naming a version"
                        : "the connection asked for version " + hello.getProtocolVersion()) + ": use a Leasehold client "
                        + "of a matching version"));
                return null;
            }
            String principal = authenticate(hello);
            if (principal == null) {
                metrics.refused.labelValues("unauthenticated").inc();
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2310 unauthenticated socket connection from {0}", remote);
                welcomeError(LeaseError.newBuilder().setKind(LeaseError.Kind.PERMISSION_DENIED).setMessage(
                        "no valid credentials: send a token listed in the server's token file" + (clientCertificates
                                ? ", or a client certificate signed by the server's client CA" : "")).build());
                return null;
            }
            WireFrames.write(out, SocketWelcome.newBuilder().setProtocolVersion(Protocol.VERSION).setPrincipal(principal)
                    .setProofsOnRequest(true).build());
            return principal;
        }

        private String authenticate(SocketHello hello) {
            if (tokens == null && !clientCertificates) {
                return CallGate.ANONYMOUS;
            }
            if (clientCertificates && socket instanceof SSLSocket ssl) {
                String cn = CallGate.certificateName(ssl.getSession());
                if (cn != null) {
                    return cn;
                }
            }
            if (tokens != null && !hello.getToken().isEmpty()) {
                return tokens.principalOf(hello.getToken().strip());
            }
            return null;
        }

        private void welcomeError(LeaseError error) {
            try {
                WireFrames.write(out, SocketWelcome.newBuilder().setProtocolVersion(Protocol.VERSION).setError(error).build());
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2303 refusing {0}: {1}", remote, e);
            }
        }

        /** Sends a connection-level error answer after the session's pending answers. */
        private void tellAndClose(LeaseSessions.SessionHandle session, String message) {
            session.end();
            try {
                synchronized (this) {
                    WireFrames.write(out, SessionReplies.newBuilder().addReplies(SessionReply.newBuilder()
                            .setRequestId(CONNECTION_ERROR_ID).setError(invalid(message))).build());
                }
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2311 telling {0}: {1}", remote, e);
            }
        }

        @Override
        public void send(SessionReplies replies) {
            synchronized (this) {
                int n = frames.encode(replies);
                writingSince = System.nanoTime();
                try {
                    out.write(frames.buffer(), 0, n);
                } catch (IOException e) {
                    throw new IllegalStateException("socket connection " + id + " is gone: " + e.getMessage(), e);
                } finally {
                    writingSince = 0;
                }
            }
        }

        @Override
        public void complete() {
            closeSocket();
        }

        @Override
        public void flushLater(Runnable flush) {
            if (Thread.currentThread() == reader) {
                flush.run();
                return;
            }
            if (flushQueued.compareAndSet(false, true)) {
                try {
                    writers.execute(() -> {
                        flushQueued.set(false);
                        flush.run();
                    });
                } catch (RejectedExecutionException stopping) {
                    // The server is closing: answer here; the connection is about to be closed anyway.
                    flushQueued.set(false);
                    flush.run();
                }
            }
        }

        void closeSocket() {
            if (socketClosed.compareAndSet(false, true)) {
                try {
                    raw.close();
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2312 closing socket connection {0}: {1}", id, e);
                }
            }
        }
    }
}
