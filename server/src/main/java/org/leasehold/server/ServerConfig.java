package org.leasehold.server;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

import org.leasehold.audit.ServiceKeys;
import org.leasehold.config.Check;
import org.leasehold.engine.EngineConfig;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SpinWait;

/**
 * Everything a {@link LeaseServer} needs, as {@link LeaseServerMain} parsed it from flags, environment and file.
 *
 * @param listen                   gRPC address (port 0: any free port)
 * @param httpListen               metrics and health address, or null for none
 * @param portFile                 file to write the bound ports to once listening, or null
 * @param engine                   the lease engine's settings
 * @param maxWaiters               waiting acquisitions allowed at once on the whole server
 * @param maxWaitersPerConnection  waiting acquisitions allowed at once on one connection
 * @param maxCallsPerConnection    concurrent calls (HTTP/2 streams) per connection
 * @param maxMessageBytes          largest request accepted
 * @param tlsCert                  PEM certificate chain of the server, or null for plaintext
 * @param tlsKey                   PEM PKCS#8 key of {@code tlsCert}
 * @param tlsClientCa              PEM CA(s) whose client certificates authenticate callers (mutual TLS), or null
 * @param tokens                   bearer token file, or null
 * @param acl                      access control list file, or null (every authenticated caller may do everything)
 * @param testClock                start of a manual test clock, or null for the system clock (production)
 * @param exitWhenStdinCloses      shut down when standard input reaches its end (the parent died)
 * @param drainTimeout             how long a graceful shutdown waits for calls in flight
 * @param insecure                 allow listening beyond loopback without TLS and authentication
 * @param socket                   the socket transport's settings, or null for none (gRPC only)
 * @param stateDir                 where the server keeps its time mark (created if missing; one server per
 *                                 directory), or null to keep none (generations and floors may then go back if the
 *                                 clock steps back across a restart)
 * @param backend                  the lease service to serve instead of the embedded engine, as a backend's
 *                                 specification ({@code etcd://<host:port>,...[?options]}), or null for the engine
 * @param signing                  how the server signs its witnesses and time answers ({@link Signing})
 */
public record ServerConfig(InetSocketAddress listen, InetSocketAddress httpListen, Path portFile, EngineConfig engine,
        int maxWaiters, int maxWaitersPerConnection, int maxCallsPerConnection, int maxMessageBytes, Path tlsCert,
        Path tlsKey, Path tlsClientCa, Path tokens, Path acl, Instant testClock, boolean exitWhenStdinCloses,
        Duration drainTimeout, boolean insecure, SocketSettings socket, Path stateDir, String backend, Signing signing) {

    /**
     * The socket transport ({@link SocketTransport}).
     *
     * @param listen          its address (port 0: any free port)
     * @param maxConnections  connections allowed at once (each has a thread on the server)
     * @param writeTimeout    how long answers may wait for a client to read them before its connection is closed
     * @param spinWait        how long a connection's thread, having answered, waits actively for the next request
     *                        before it blocks in a read (zero: never; see {@link SocketTransport})
     */
    public record SocketSettings(InetSocketAddress listen, int maxConnections, Duration writeTimeout, Duration spinWait) {
        /** On loopback, any free port, with the defaults of the command line. */
        public static SocketSettings loopback() {
            return new SocketSettings(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1_024, Duration.ofSeconds(10),
                    SpinWait.DEFAULT);
        }
    }

    /**
     * How the lease server signs (docs/SERVER.md, "Signing"): with a key from {@code keyFile} (PEM, PKCS#8 Ed25519), or
     * else one generated into the state directory (kept across restarts), or else an ephemeral one; its public keys
     * published into the bag store root {@code publishTo} if given.
     *
     * @param enabled   false: the server signs nothing (grants carry no witnesses, time requests are refused)
     * @param keyFile   the PEM private key, or null
     * @param publishTo a bag store root whose {@code .leasehold/keys/} receives the public keys, or null
     * @param linger    how long a batch waits for more statements after its first ({@code --signing-linger}), unless a
     *                  client waits for one of its proofs
     */
    public record Signing(boolean enabled, Path keyFile, Path publishTo, Duration linger) {
        /** How long a signed batch waits for more witnesses after its first, unless somebody waits for a proof. */
        public static final Duration DEFAULT_LINGER = Duration.ofNanos(ServiceKeys.DEFAULT_LINGER_MICROS * 1_000L);
        /** The longest linger accepted. */
        public static final Duration MAX_LINGER = Duration.ofSeconds(1);
        /** Signing on, key in the state directory (or ephemeral), published nowhere. */
        public static final Signing DEFAULT = new Signing(true, null, null);
        /** Signing off. */
        public static final Signing OFF = new Signing(false, null, null);

        /** With the default linger. */
        public Signing(boolean enabled, Path keyFile, Path publishTo) {
            this(enabled, keyFile, publishTo, DEFAULT_LINGER);
        }

        /** The same, with batches that wait {@code d} for more witnesses after their first. */
        public Signing withLinger(Duration d) {
            return new Signing(enabled, keyFile, publishTo, d);
        }
    }

    /**
     * Defaults for tests and embedding: loopback, any free port for gRPC and for the socket transport (served by
     * default, as on the command line; {@code withSocket(null)} for gRPC only), no metrics endpoint, no security, no
     * state directory (give one with {@link #withStateDir}).
     */
    public static ServerConfig loopback(EngineConfig engine) {
        return new ServerConfig(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), null, null, engine, 100_000,
                10_000, 10_000, 1 << 20, null, null, null, null, null, null, false, Duration.ofSeconds(5), false,
                SocketSettings.loopback(), null, null, Signing.DEFAULT);
    }

    /** Checks the settings together; the message says what to change. */
    public ServerConfig validate() {
        engine.validate();
        Check.atLeast("--max-waiters", maxWaiters, 1, "");
        Check.atLeast("--max-waiters-per-connection", maxWaitersPerConnection, 1, "");
        Check.atLeast("--max-calls-per-connection", maxCallsPerConnection, 1, "");
        Check.atLeast("--max-message-bytes", maxMessageBytes, Protocol.MIN_MESSAGE_LIMIT,
                " (clients batch requests up to " + Protocol.BATCH_BYTES + " bytes a message)");
        if ((tlsCert == null) != (tlsKey == null)) {
            throw new IllegalArgumentException("TLS needs both --tls-cert and --tls-key");
        }
        if (tlsClientCa != null && tlsCert == null) {
            throw new IllegalArgumentException("--tls-client-ca (mutual TLS) needs TLS: give --tls-cert and --tls-key");
        }
        boolean secured = tlsCert != null && (tokens != null || tlsClientCa != null);
        if (!secured && !insecure && !isLoopback(listen)) {
            throw new IllegalArgumentException("refusing to listen on " + listen + " without TLS and authentication: "
                    + "give --tls-cert/--tls-key and --tokens or --tls-client-ca, listen on 127.0.0.1, or pass "
                    + "--insecure if this network is trusted");
        }
        if (socket != null) {
            Check.atLeast("--socket-max-connections", socket.maxConnections(), 1, "");
            Check.positive("--socket-write-timeout", socket.writeTimeout());
            SpinWait.checked("--socket-spin-wait", socket.spinWait());
            if (!secured && !insecure && !isLoopback(socket.listen())) {
                throw new IllegalArgumentException("refusing to listen on " + socket.listen() + " (--socket-listen) "
                        + "without TLS and authentication: give --tls-cert/--tls-key and --tokens or --tls-client-ca, "
                        + "listen on 127.0.0.1, or pass --insecure if this network is trusted");
            }
        }
        Check.notNegative("--drain-timeout", drainTimeout);
        if (signing.linger() == null || signing.linger().isNegative() || signing.linger().compareTo(Signing.MAX_LINGER) > 0
                || signing.linger().toNanos() % 1_000 != 0) {
            throw new IllegalArgumentException("--signing-linger " + signing.linger() + " is out of range: give whole "
                    + "microseconds from 0 (sign each witness at once) to " + Signing.MAX_LINGER.toMillis() + " ms");
        }
        if (!signing.enabled() && (signing.keyFile() != null || signing.publishTo() != null)) {
            throw new IllegalArgumentException("--no-signing contradicts " + (signing.keyFile() != null
                    ? "--signing-key " + signing.keyFile() : "--publish-keys " + signing.publishTo())
                    + ": give either");
        }
        return this;
    }

    static boolean isLoopback(InetSocketAddress a) {
        return a.getAddress() != null && a.getAddress().isLoopbackAddress();
    }

    /** Parses {@code host:port} ({@code [v6]:port} too). */
    static InetSocketAddress address(String option, String text) {
        int colon = text.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException(option + " '" + text + "' is not host:port, for example 127.0.0.1:7420");
        }
        String host = text.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port;
        try {
            port = Integer.parseInt(text.substring(colon + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " '" + text + "' has no port number", e);
        }
        if (port < 0 || port > 65_535) {
            throw new IllegalArgumentException(option + " '" + text + "': the port must be 0 to 65535");
        }
        try {
            return new InetSocketAddress(InetAddress.getByName(host.isEmpty() ? "0.0.0.0" : host), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException(option + " '" + text + "': unknown host " + host, e);
        }
    }

    public ServerConfig withEngine(EngineConfig e) {
        return new ServerConfig(listen, httpListen, portFile, e, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, backend, signing);
    }

    public ServerConfig withTestClock(Instant start) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, start,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, backend, signing);
    }

    public ServerConfig withHttpListen(InetSocketAddress a) {
        return new ServerConfig(listen, a, portFile, engine, maxWaiters, maxWaitersPerConnection, maxCallsPerConnection,
                maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock, exitWhenStdinCloses, drainTimeout,
                insecure, socket, stateDir, backend, signing);
    }

    public ServerConfig withSecurity(Path cert, Path key, Path clientCa, Path tokenFile, Path aclFile) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, cert, key, clientCa, tokenFile, aclFile, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, backend, signing);
    }

    public ServerConfig withLimits(int waiters, int waitersPerConnection, int callsPerConnection, int messageBytes) {
        return new ServerConfig(listen, httpListen, portFile, engine, waiters, waitersPerConnection, callsPerConnection,
                messageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock, exitWhenStdinCloses, drainTimeout,
                insecure, socket, stateDir, backend, signing);
    }

    public ServerConfig withSocket(SocketSettings s) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, s, stateDir, backend, signing);
    }

    public ServerConfig withStateDir(Path dir) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, dir, backend, signing);
    }

    public ServerConfig withBackend(String spec) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, spec, signing);
    }

    public ServerConfig withSigning(Signing s) {
        return new ServerConfig(listen, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, backend, s);
    }

    public ServerConfig withListen(InetSocketAddress a) {
        return new ServerConfig(a, httpListen, portFile, engine, maxWaiters, maxWaitersPerConnection,
                maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl, testClock,
                exitWhenStdinCloses, drainTimeout, insecure, socket, stateDir, backend, signing);
    }
}
