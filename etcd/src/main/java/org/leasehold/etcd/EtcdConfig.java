package org.leasehold.etcd;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.leasehold.config.Check;

/**
 * The settings of an {@link EtcdLeaseService}.
 *
 * @param endpoints          the etcd members' client URLs ({@code http://host:port} or {@code https://...}); any one
 *                           reachable member of the quorum's side serves
 * @param prefix             every key the service writes starts with it, so several services (or other users) share
 *                           one cluster; services with one prefix serve the same names
 * @param serviceId          this front's identity (null: made up from a random number)
 * @param maxLeaseDuration   the longest lease granted or renewed to; default 10 s
 * @param grace              how long after an unreleased full lease's deadline its successor waits before writing
 * @param clockErrorBound    bound on the clock difference between any two services with this prefix: a holder that
 *                           did not release is taken over only at its deadline plus this bound; default 500 ms
 * @param quietPeriod        nothing is granted for this long after the start; default zero (the state lives in etcd)
 * @param maxNamesPerRequest most names in one request; one grant writes all of them in one etcd transaction, so the
 *                           cluster's {@code --max-txn-ops} must be at least twice this plus two
 * @param historyPerName     metadata entries kept per name
 * @param maxMetadataChars   the longest metadata string accepted
 * @param maxWaitersPerName  most requests queued for one name
 * @param callTimeout        how long one call to etcd may take before the operation fails as unavailable
 * @param sessionTtl         the time to live of this front's etcd lease, which its queued requests are attached to:
 *                           a front cut off longer than this loses their places in the queues
 * @param user               etcd user (null: no authentication)
 * @param password           etcd password of {@code user}
 * @param trustCertificates  PEM file of the certificates that sign the members' server certificates (null: the JVM's)
 * @param clientCertificate  PEM file of this client's certificate for mutual TLS (null: none)
 * @param clientKey          PEM file of its PKCS#8 private key
 * @param listNames          at most this many names the service lists at its start, so that its first acquisition of
 *                           a name written earlier reads it rather than guessing it absent (a wrong guess costs etcd a
 *                           failed transaction); 0 lists none; default and most {@value #LIST_NAMES_LIMIT}
 */
public record EtcdConfig(List<URI> endpoints, String prefix, String serviceId, Duration maxLeaseDuration, Duration grace,
        Duration clockErrorBound, Duration quietPeriod, int maxNamesPerRequest, int historyPerName,
        int maxMetadataChars, int maxWaitersPerName, Duration callTimeout, Duration sessionTtl, String user,
        String password, Path trustCertificates, Path clientCertificate, Path clientKey, int listNames) {

    /** The hard upper bound of {@link #maxNamesPerRequest}, as for the embedded engine. */
    public static final int NAMES_PER_REQUEST_LIMIT = 1_000;
    /** The most names a service lists at its start ({@link #listNames}), and the default. */
    public static final int LIST_NAMES_LIMIT = 1 << 20;
    /** The default key prefix. */
    public static final String DEFAULT_PREFIX = "leasehold/";

    public EtcdConfig {
        endpoints = endpoints == null ? List.of() : List.copyOf(endpoints);
    }

    /** The defaults, for {@code endpoints}. */
    public static EtcdConfig defaults(List<URI> endpoints) {
        return new EtcdConfig(endpoints, DEFAULT_PREFIX, null, Duration.ofSeconds(10), Duration.ofSeconds(2),
                Duration.ofMillis(500), Duration.ZERO, NAMES_PER_REQUEST_LIMIT, 16, 4_096, 10_000, Duration.ofSeconds(3),
                Duration.ofSeconds(10), null, null, null, null, null, LIST_NAMES_LIMIT);
    }

    /**
     * Parses {@code etcd:<endpoints>[?option=value&...]} or {@code etcd://<host:port>,...[?...]}: endpoints are
     * comma-separated {@code host:port} or URLs (plain {@code host:port} means {@code http://}, or {@code https://}
     * with {@code tls=true}); the options are {@code prefix}, {@code user}, {@code password}, {@code tls},
     * {@code trust}, {@code cert}, {@code key}, {@code maxLease}, {@code grace}, {@code clockError},
     * {@code callTimeout}, {@code sessionTtl}, {@code serviceId}, {@code listNames} (durations as {@code 10s},
     * {@code 500ms}).
     *
     * @throws IllegalArgumentException naming the part that is wrong
     */
    public static EtcdConfig parse(String spec) {
        EtcdConfig d = defaults(List.of());
        return parse(spec, d.maxLeaseDuration(), d.grace(), d.clockErrorBound());
    }

    /** Like {@link #parse(String)}, with the times the caller runs with unless the specification gives its own. */
    public static EtcdConfig parse(String spec, Duration maxLeaseDefault, Duration graceDefault,
            Duration clockErrorDefault) {
        String s = Check.text("etcd", spec, "give etcd:<host:port>[,<host:port>...][?option=value&...]").trim();
        String body;
        if (s.startsWith("etcd://")) {
            body = s.substring("etcd://".length());
        } else if (s.startsWith("etcd:")) {
            body = s.substring("etcd:".length());
        } else {
            throw Check.invalid("etcd", spec, "it must start with etcd: (for example etcd:10.0.0.1:2379,10.0.0.2:2379)");
        }
        String query = "";
        int q = body.indexOf('?');
        if (q >= 0) {
            query = body.substring(q + 1);
            body = body.substring(0, q);
        }
        boolean tls = false;
        EtcdConfig c = defaults(List.of());
        String prefix = c.prefix();
        String user = null;
        String password = null;
        Path trust = null;
        Path cert = null;
        Path key = null;
        Duration maxLease = maxLeaseDefault;
        Duration grace = graceDefault;
        Duration clockError = clockErrorDefault;
        Duration callTimeout = c.callTimeout();
        Duration sessionTtl = c.sessionTtl();
        String serviceId = null;
        int listNames = c.listNames();
        for (String option : query.isEmpty() ? new String[0] : query.split("&")) {
            int eq = option.indexOf('=');
            if (eq <= 0) {
                throw Check.invalid("etcd option", option, "options are name=value, separated by &");
            }
            String name = option.substring(0, eq);
            String value = option.substring(eq + 1);
            switch (name) {
                case "prefix" -> prefix = value;
                case "user" -> user = value;
                case "password" -> password = value;
                case "tls" -> tls = Boolean.parseBoolean(value);
                case "trust" -> trust = Path.of(value);
                case "cert" -> cert = Path.of(value);
                case "key" -> key = Path.of(value);
                case "maxLease" -> maxLease = Check.duration("etcd maxLease", value);
                case "grace" -> grace = Check.duration("etcd grace", value);
                case "clockError" -> clockError = Check.duration("etcd clockError", value);
                case "callTimeout" -> callTimeout = Check.duration("etcd callTimeout", value);
                case "sessionTtl" -> sessionTtl = Check.duration("etcd sessionTtl", value);
                case "serviceId" -> serviceId = value;
                case "listNames" -> listNames = Check.integer("etcd listNames", value, ": give how many names to "
                        + "list at the start, 0 to " + LIST_NAMES_LIMIT + " (0: none)");
                default -> throw Check.invalid("etcd option", name, "known options are prefix, user, password, tls, "
                        + "trust, cert, key, maxLease, grace, clockError, callTimeout, sessionTtl, serviceId, "
                        + "listNames");
            }
        }
        List<URI> endpoints = new ArrayList<>();
        for (String e : body.split(",")) {
            String t = e.trim();
            if (t.isEmpty()) {
                continue;
            }
            if (!t.contains("://")) {
                t = (tls || trust != null ? "https://" : "http://") + t;
            }
            URI uri = URI.create(t);
            String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
            if (!scheme.equals("http") && !scheme.equals("https") || uri.getHost() == null || uri.getPort() < 0) {
                throw Check.invalid("etcd endpoint", e, "give host:port or http(s)://host:port");
            }
            endpoints.add(uri);
        }
        return new EtcdConfig(endpoints, prefix, serviceId, maxLease, grace, clockError, c.quietPeriod(),
                c.maxNamesPerRequest(), c.historyPerName(), c.maxMetadataChars(), c.maxWaitersPerName(), callTimeout,
                sessionTtl, user, password, trust, cert, key, listNames).validate();
    }

    /** Checks every setting; throws {@link IllegalArgumentException} naming the first one out of range. */
    public EtcdConfig validate() {
        if (endpoints.isEmpty()) {
            throw Check.invalid("etcd endpoints", endpoints, "give at least one member's client URL");
        }
        Check.text("etcd prefix", prefix, "give a key prefix such as leasehold/");
        Check.positiveAtMost("maxLeaseDuration", maxLeaseDuration, Duration.ofDays(1), "at most one day");
        Check.notNegative("grace", grace);
        Check.notNegative("clockErrorBound", clockErrorBound);
        Check.notNegative("quietPeriod", quietPeriod);
        Check.inRange("maxNamesPerRequest", maxNamesPerRequest, 1, NAMES_PER_REQUEST_LIMIT, "");
        Check.atLeast("historyPerName", historyPerName, 1, "");
        Check.atLeast("maxMetadataChars", maxMetadataChars, 0, "");
        Check.atLeast("maxWaitersPerName", maxWaitersPerName, 1, "");
        Check.positive("callTimeout", callTimeout);
        Check.positiveAtMost("sessionTtl", sessionTtl, Duration.ofHours(1), "at most one hour");
        if (sessionTtl.compareTo(Duration.ofSeconds(2)) < 0) {
            throw Check.invalid("sessionTtl", sessionTtl, "at least 2 s (etcd counts leases in whole seconds)");
        }
        Check.inRange("listNames", listNames, 0, LIST_NAMES_LIMIT, " (0 lists no names at the start)");
        if ((user == null) != (password == null)) {
            throw Check.invalid("etcd user", user, "give both user and password, or neither");
        }
        if ((clientCertificate == null) != (clientKey == null)) {
            throw Check.invalid("etcd cert", clientCertificate, "give both the client certificate and its key, or neither");
        }
        return this;
    }

    public EtcdConfig withPrefix(String v) {
        return new EtcdConfig(endpoints, v, serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod,
                maxNamesPerRequest, historyPerName, maxMetadataChars, maxWaitersPerName, callTimeout, sessionTtl, user,
                password, trustCertificates, clientCertificate, clientKey, listNames);
    }

    public EtcdConfig withTimes(Duration maxLease, Duration graceTime, Duration clockError, Duration quiet) {
        return new EtcdConfig(endpoints, prefix, serviceId, maxLease, graceTime, clockError, quiet, maxNamesPerRequest,
                historyPerName, maxMetadataChars, maxWaitersPerName, callTimeout, sessionTtl, user, password,
                trustCertificates, clientCertificate, clientKey, listNames);
    }

    public EtcdConfig withLimits(int historyEntries, int waitersPerName) {
        return new EtcdConfig(endpoints, prefix, serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod,
                maxNamesPerRequest, historyEntries, maxMetadataChars, waitersPerName, callTimeout, sessionTtl, user,
                password, trustCertificates, clientCertificate, clientKey, listNames);
    }

    public EtcdConfig withCallTimeout(Duration v) {
        return new EtcdConfig(endpoints, prefix, serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod,
                maxNamesPerRequest, historyPerName, maxMetadataChars, maxWaitersPerName, v, sessionTtl, user, password,
                trustCertificates, clientCertificate, clientKey, listNames);
    }

    public EtcdConfig withServiceId(String v) {
        return new EtcdConfig(endpoints, prefix, v, maxLeaseDuration, grace, clockErrorBound, quietPeriod,
                maxNamesPerRequest, historyPerName, maxMetadataChars, maxWaitersPerName, callTimeout, sessionTtl, user,
                password, trustCertificates, clientCertificate, clientKey, listNames);
    }

    public EtcdConfig withListNames(int v) {
        return new EtcdConfig(endpoints, prefix, serviceId, maxLeaseDuration, grace, clockErrorBound, quietPeriod,
                maxNamesPerRequest, historyPerName, maxMetadataChars, maxWaitersPerName, callTimeout, sessionTtl, user,
                password, trustCertificates, clientCertificate, clientKey, v);
    }

    @Override
    public String toString() {
        return "EtcdConfig[endpoints=" + endpoints + ", prefix=" + prefix + ", user=" + user
                + (password == null ? "" : ", password=***") + ", maxLease=" + maxLeaseDuration + ", grace=" + grace
                + ", clockError=" + clockErrorBound + ", callTimeout=" + callTimeout + ", sessionTtl=" + sessionTtl
                + ", listNames=" + listNames + "]";
    }
}
