package org.leasehold.remote;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.leasehold.config.Check;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.SpinWait;

/**
 * Settings of a {@link RemoteLeaseService}. Built with {@link #builder(String...)} in code, or from string properties
 * with {@link #fromProperties(Map)} (the resource adapter's config properties, a properties file): see that method for
 * the keys. {@link #validate()} says what is wrong and what would be accepted.
 *
 * @param servers            the current server set, {@code host:port} each; names are spread over them by rendezvous
 *                           hashing, so every client must list the same set (order does not matter)
 * @param previousServers    during a migration, the old set (empty otherwise): names are leased on both sets until
 *                           the old set's leases are all over
 * @param migrationStartedAt when the migration began (null: when this client started); the old set is dropped after
 *                           its maximum lease plus grace plus clock error from then
 * @param trustCertificates  PEM file of the CA(s) that signed the servers' certificates; null for plaintext
 * @param clientCertificate  PEM certificate chain for mutual TLS, or null
 * @param clientKey          PEM PKCS#8 private key of {@code clientCertificate}, or null
 * @param authority          the name to verify in the servers' certificates instead of the host, or null
 * @param token              a bearer token sent on every call, or null
 * @param callTimeout        how long a call may take beyond any waiting it asked for; default 5 s
 * @param keepAliveTime      HTTP/2 ping interval on idle connections, to notice dead ones; default 10 s
 * @param clockSyncInterval  how often the clock offset is measured again; default 30 s
 * @param maxInboundMessageBytes largest reply accepted (admin views can be large); default 16 MiB
 * @param connections        HTTP/2 connections to each server (1 to {@value #MAX_CONNECTIONS}); default 1. Each
 *                           connection's calls are handled by one event-loop thread on each side, so more than one lets
 *                           a busy client use more cores; a name's calls always take the same connection
 * @param process            this process's name in holder identities made by helpers (the benchmark, the CLI); may be null
 * @param transport          how lease calls (acquire, release, renew, upgrade) travel: {@link Transport#SOCKET} (the
 *                           default: the lower latency, and the higher throughput measured) or {@link Transport#GRPC};
 *                           every other call uses gRPC either way
 * @param spinWait           on the socket transport, how long a thread waiting alone for its answer waits actively
 *                           (yielding its core at every turn) before it blocks in a read; default
 *                           {@link SpinWait#DEFAULT} (50 µs), zero turns it off, at most {@link SpinWait#MAX} (10 ms)
 * @param maxClockError      how far this process's own clock may be from a signing server's signed time (beyond its
 *                           radius and the round trip) before the client refuses to use that server; default 1 s (the
 *                           bag store's bound between a message's timestamp and its signed time)
 */
public record RemoteClientConfig(List<String> servers, List<String> previousServers, Instant migrationStartedAt,
        Path trustCertificates, Path clientCertificate, Path clientKey, String authority, String token,
        Duration callTimeout, Duration keepAliveTime, Duration clockSyncInterval, int maxInboundMessageBytes,
        int connections, String process, Transport transport, Duration spinWait, Duration maxClockError) {

    /** How lease calls travel to the servers. */
    public enum Transport {
        /**
         * The gRPC session stream on {@link #connections} HTTP/2 connections shared by every thread: calls of many
         * threads are batched into few messages (highest throughput under load); each call is handed to the
         * transport's event loop and its answer back to the caller.
         */
        GRPC,
        /**
         * The server's socket transport ({@code --socket-listen}): length-prefixed protobuf frames on
         * {@link #connections} TCP connections (TLS as configured), where the calling thread writes its request and,
         * when no other thread is reading the connection, reads the answer itself (lowest latency: no thread
         * hand-off). Requests of threads that call at the same time are still batched.
         */
        SOCKET
    }

    /** The most connections per server {@link #connections} allows. */
    public static final int MAX_CONNECTIONS = 64;

    /** The property keys {@link #fromProperties} understands. */
    public static final Set<String> KEYS = Set.of("servers", "previousServers", "migrationStartedAt", "tlsTrustFile",
            "tlsCertFile", "tlsKeyFile", "tlsAuthority", "token", "tokenFile", "callTimeout", "keepAliveTime",
            "clockSyncInterval", "maxInboundMessageBytes", "connections", "process", "transport", "spinWait",
            "maxClockError");

    public RemoteClientConfig {
        servers = List.copyOf(servers);
        previousServers = previousServers == null ? List.of() : List.copyOf(previousServers);
    }

    /** Starts a configuration for {@code servers} ({@code host:port} each) with the defaults. */
    public static Builder builder(String... servers) {
        return new Builder(Arrays.asList(servers));
    }

    /**
     * Reads string properties (unknown keys are refused, so that a typo is not silently ignored):
     * <table>
     * <caption>client properties</caption>
     * <tr><th>key</th><th>value</th></tr>
     * <tr><td>servers</td><td>comma-separated {@code host:port} list (required)</td></tr>
     * <tr><td>previousServers</td><td>the old set during a migration (comma-separated)</td></tr>
     * <tr><td>migrationStartedAt</td><td>ISO-8601 instant the migration began</td></tr>
     * <tr><td>tlsTrustFile</td><td>PEM CA file: turns TLS on</td></tr>
     * <tr><td>tlsCertFile, tlsKeyFile</td><td>PEM client certificate and PKCS#8 key for mutual TLS</td></tr>
     * <tr><td>tlsAuthority</td><td>name to verify in server certificates</td></tr>
     * <tr><td>token, tokenFile</td><td>bearer token, or a file holding it (one of the two)</td></tr>
     * <tr><td>callTimeout, keepAliveTime, clockSyncInterval</td><td>durations: {@code 500ms}, {@code 5s}, {@code 2m}
     * or ISO-8601 ({@code PT5S})</td></tr>
     * <tr><td>maxInboundMessageBytes</td><td>integer</td></tr>
     * <tr><td>connections</td><td>connections to each server, 1 to {@value #MAX_CONNECTIONS}</td></tr>
     * <tr><td>process</td><td>this process's name for holder identities</td></tr>
     * <tr><td>transport</td><td>{@code socket} (default) or {@code grpc}: see {@link Transport}</td></tr>
     * <tr><td>spinWait</td><td>a duration ({@code 50us}, {@code 0} for off): see {@link #spinWait}</td></tr>
     * <tr><td>maxClockError</td><td>a duration ({@code 1s}): see {@link #maxClockError}</td></tr>
     * </table>
     */
    public static RemoteClientConfig fromProperties(Map<String, String> properties) {
        for (String key : properties.keySet()) {
            if (!KEYS.contains(key)) {
                throw new IllegalArgumentException("unknown remote client property '" + key + "'; the keys are "
                        + new java.util.TreeSet<>(KEYS));
            }
        }
        String servers = properties.get("servers");
        if (servers == null || servers.isBlank()) {
            throw new IllegalArgumentException("the remote client needs 'servers': a comma-separated host:port list, "
                    + "for example 'leases-1:7420,leases-2:7420'");
        }
        Builder b = new Builder(list(servers));
        String previous = properties.get("previousServers");
        if (previous != null && !previous.isBlank()) {
            b.previousServers(list(previous));
        }
        String started = properties.get("migrationStartedAt");
        if (started != null && !started.isBlank()) {
            try {
                b.migrationStartedAt(Instant.parse(started.trim()));
            } catch (DateTimeParseException e) {
                throw new IllegalArgumentException("migrationStartedAt '" + started
                        + "' is not an ISO-8601 instant such as 2026-03-01T10:00:00Z", e);
            }
        }
        String trust = properties.get("tlsTrustFile");
        if (trust != null && !trust.isBlank()) {
            b.trustCertificates(Path.of(trust.trim()));
        }
        String cert = properties.get("tlsCertFile");
        String key = properties.get("tlsKeyFile");
        if ((cert != null && !cert.isBlank()) || (key != null && !key.isBlank())) {
            if (cert == null || cert.isBlank() || key == null || key.isBlank()) {
                throw new IllegalArgumentException("mutual TLS needs both 'tlsCertFile' and 'tlsKeyFile'");
            }
            b.clientCertificate(Path.of(cert.trim()), Path.of(key.trim()));
        }
        String authority = properties.get("tlsAuthority");
        if (authority != null && !authority.isBlank()) {
            b.authority(authority.trim());
        }
        String token = properties.get("token");
        String tokenFile = properties.get("tokenFile");
        if (token != null && !token.isBlank() && tokenFile != null && !tokenFile.isBlank()) {
            throw new IllegalArgumentException("give either 'token' or 'tokenFile', not both");
        }
        if (token != null && !token.isBlank()) {
            b.token(token.trim());
        } else if (tokenFile != null && !tokenFile.isBlank()) {
            b.tokenFile(Path.of(tokenFile.trim()));
        }
        if (properties.containsKey("callTimeout")) {
            b.callTimeout(Check.duration("callTimeout", properties.get("callTimeout")));
        }
        if (properties.containsKey("keepAliveTime")) {
            b.keepAliveTime(Check.duration("keepAliveTime", properties.get("keepAliveTime")));
        }
        if (properties.containsKey("clockSyncInterval")) {
            b.clockSyncInterval(Check.duration("clockSyncInterval", properties.get("clockSyncInterval")));
        }
        if (properties.containsKey("maxInboundMessageBytes")) {
            b.maxInboundMessageBytes(Check.integer("maxInboundMessageBytes", properties.get("maxInboundMessageBytes"),
                    ""));
        }
        if (properties.containsKey("connections")) {
            b.connections(Check.integer("connections", properties.get("connections"), "; give the number of "
                    + "connections to each server, 1 to " + MAX_CONNECTIONS));
        }
        if (properties.containsKey("process")) {
            b.process(properties.get("process").trim());
        }
        if (properties.containsKey("transport")) {
            String v = properties.get("transport").trim();
            try {
                b.transport(Transport.valueOf(v.toUpperCase(Locale.ROOT)));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("transport '" + v + "' is not known; use 'socket' (the default: "
                        + "the server's --socket-listen transport) or 'grpc'", e);
            }
        }
        if (properties.containsKey("spinWait")) {
            b.spinWait(Check.duration("spinWait", properties.get("spinWait")));
        }
        if (properties.containsKey("maxClockError")) {
            b.maxClockError(Check.duration("maxClockError", properties.get("maxClockError")));
        }
        return b.build();
    }

    private static List<String> list(String csv) {
        List<String> out = new ArrayList<>();
        for (String s : csv.split(",")) {
            if (!s.isBlank()) {
                out.add(s.trim());
            }
        }
        return out;
    }

    /** Checks every value. */
    public RemoteClientConfig validate() {
        if (servers.isEmpty()) {
            throw new IllegalArgumentException("the remote client needs at least one server (host:port)");
        }
        for (List<String> set : List.of(servers, previousServers)) {
            for (String s : set) {
                checkAddress(s);
            }
            if (new java.util.HashSet<>(set).size() != set.size()) {
                throw new IllegalArgumentException("a server is listed twice in " + set + ": list each once");
            }
        }
        if ((clientCertificate == null) != (clientKey == null)) {
            throw new IllegalArgumentException("mutual TLS needs both a client certificate and its key");
        }
        if (clientCertificate != null && trustCertificates == null) {
            throw new IllegalArgumentException("a client certificate needs TLS: give the servers' CA (tlsTrustFile) too");
        }
        Check.positive("callTimeout", callTimeout);
        Check.positive("keepAliveTime", keepAliveTime);
        Check.positive("clockSyncInterval", clockSyncInterval);
        Check.atLeast("maxInboundMessageBytes", maxInboundMessageBytes, Protocol.MIN_MESSAGE_LIMIT,
                " (the server batches answers up to " + Protocol.BATCH_BYTES + " bytes a message; default 16 MiB)");
        Check.present("transport", transport, "use SOCKET (the default) or GRPC");
        Check.inRange("connections", connections, 1, MAX_CONNECTIONS,
                " connections to each server (default 1; about one per core of the client is plenty)");
        SpinWait.checked("spinWait", spinWait);
        Check.positive("maxClockError", maxClockError);
        return this;
    }

    private static void checkAddress(String s) {
        int colon = s.lastIndexOf(':');
        if (colon <= 0 || colon == s.length() - 1) {
            throw new IllegalArgumentException("server address '" + s + "' is not host:port, for example 127.0.0.1:7420");
        }
        try {
            int port = Integer.parseInt(s.substring(colon + 1));
            if (port < 1 || port > 65_535) {
                throw new NumberFormatException();
            }
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("server address '" + s + "' has no valid port (1 to 65535)", e);
        }
    }

    /** Builds a {@link RemoteClientConfig}. */
    public static final class Builder {
        private final List<String> servers;
        private List<String> previousServers = List.of();
        private Instant migrationStartedAt;
        private Path trust;
        private Path cert;
        private Path key;
        private String authority;
        private String token;
        private Duration callTimeout = Duration.ofSeconds(5);
        private Duration keepAliveTime = Duration.ofSeconds(10);
        private Duration clockSyncInterval = Duration.ofSeconds(30);
        private int maxInboundMessageBytes = 16 * 1024 * 1024;
        private int connections = 1;
        private String process;
        private Transport transport = Transport.SOCKET;
        private Duration spinWait = SpinWait.DEFAULT;
        private Duration maxClockError = Duration.ofSeconds(1);

        private Builder(List<String> servers) {
            this.servers = new ArrayList<>(servers);
        }

        public Builder previousServers(List<String> v) {
            previousServers = new ArrayList<>(v);
            return this;
        }

        public Builder migrationStartedAt(Instant v) {
            migrationStartedAt = v;
            return this;
        }

        public Builder trustCertificates(Path caPem) {
            trust = caPem;
            return this;
        }

        public Builder clientCertificate(Path certPem, Path keyPem) {
            cert = certPem;
            key = keyPem;
            return this;
        }

        public Builder authority(String v) {
            authority = v;
            return this;
        }

        public Builder token(String v) {
            token = v;
            return this;
        }

        /** Reads the token from a file (surrounding white space is dropped). */
        public Builder tokenFile(Path file) {
            try {
                token = java.nio.file.Files.readString(file).strip();
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("cannot read the token file " + file + ": " + e.getMessage(), e);
            }
            if (token.isEmpty()) {
                throw new IllegalArgumentException("the token file " + file + " is empty");
            }
            return this;
        }

        public Builder callTimeout(Duration v) {
            callTimeout = v;
            return this;
        }

        public Builder keepAliveTime(Duration v) {
            keepAliveTime = v;
            return this;
        }

        public Builder clockSyncInterval(Duration v) {
            clockSyncInterval = v;
            return this;
        }

        public Builder maxInboundMessageBytes(int v) {
            maxInboundMessageBytes = v;
            return this;
        }

        /** HTTP/2 connections to each server (default 1); a name's calls always take the same one. */
        public Builder connections(int v) {
            connections = v;
            return this;
        }

        public Builder process(String v) {
            process = v;
            return this;
        }

        /** How lease calls travel (default {@link Transport#SOCKET}). */
        public Builder transport(Transport v) {
            transport = v;
            return this;
        }

        /**
         * On the socket transport, how long a thread waiting alone for its answer waits actively before it blocks
         * (default {@link SpinWait#DEFAULT}, 50 µs; zero for never).
         */
        public Builder spinWait(Duration v) {
            spinWait = v;
            return this;
        }

        /** How far this process's clock may be from a signing server's signed time (default 1 s). */
        public Builder maxClockError(Duration v) {
            maxClockError = v;
            return this;
        }

        public RemoteClientConfig build() {
            return new RemoteClientConfig(servers, previousServers, migrationStartedAt, trust, cert, key, authority, token,
                    callTimeout, keepAliveTime, clockSyncInterval, maxInboundMessageBytes, connections, process, transport,
                    spinWait, maxClockError).validate();
        }
    }

    @Override
    public String toString() {
        // Never print the token.
        return "RemoteClientConfig[servers=" + servers + ", previousServers=" + previousServers + ", migrationStartedAt="
                + migrationStartedAt + ", tls=" + (trustCertificates != null) + ", mutualTls=" + (clientCertificate != null)
                + ", token=" + (token != null ? "(set)" : "(none)") + ", callTimeout=" + callTimeout + ", connections=" + connections
                + ", transport=" + transport + (transport == Transport.SOCKET ? ", spinWait=" + spinWait : "") + "]";
    }
}
