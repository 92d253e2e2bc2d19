package org.leasehold.adapter;

import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import org.leasehold.backend.LeaseBackends;
import org.leasehold.config.Check;
import org.leasehold.engine.EngineConfig;
import org.leasehold.store.FlushPolicy;
import org.leasehold.store.Names;

/**
 * The settings of one connection definition, as given by the managed connection factory's config properties, checked
 * once. Two factories with equal settings share one runtime (lease service, bag store, journal).
 *
 * @param bagStoreRoot          root directory of the bag store (must exist and be writable)
 * @param log                   the log connections append to
 * @param leaseService          {@code embedded}, {@code remote:<host:port>[,<host:port>...]} once the lease server
 *                              is configured, or a backend's specification ({@code etcd:<host:port>,...[?options]})
 * @param maxLease              maximum lease duration
 * @param grace                 grace after a bucket's end (and after an unrelinquished expiry)
 * @param maxClockError         bound on clock error between processes
 * @param bucketWidth           width of a time bucket
 * @param flushPolicy           when data files are forced
 * @param writerId              the writer identity, or null for {@code <host>-<instance>}
 * @param processId             the lease holder identity's process part, or null for the writer identity
 * @param defaultWait           how long an acquire waits unless told otherwise
 * @param maxNamesPerUnit       the most lease names one unit of work (transaction or connection) may hold
 * @param minTimeLeftAtPrepare  prepare votes rollback when a lease has less than this left
 * @param ownerTtl              embedded mode: how long the log's ownership survives without a heartbeat
 * @param remoteOptions         remote mode: the client's properties ({@code servers} comes from {@code leaseService})
 * @param inDoubtHold           how long the leases of a branch are held for a transaction that has not completed: a
 *                              prepared branch recovered after a restart, or a committed branch whose transaction's
 *                              other branches are still completing
 * @param viewBuildInterval     how often the snapshots of the registered views are built; zero for never (the
 *                              application builds them)
 * @param signingKeyFile        embedded mode: the PKCS #8 PEM file of the Ed25519 key the engine signs its witnesses
 *                              and time answers with, or null for the key generated in the store's state
 * @param signedTimeBound       how far a message's timestamp may lie from the signed time its witnesses carry
 * @param compactionInterval    how often the store compacts the log in the background; zero for never
 * @param compactionHorizon     how old a bucket's end must be before compaction merges it into a segment
 * @param retentionDelay        how long after a segment is published background compaction removes the files of the
 *                              buckets it holds; zero to keep every bucket's files
 */
record AdapterConfig(Path bagStoreRoot, String log, String leaseService, Duration maxLease, Duration grace,
        Duration maxClockError, Duration bucketWidth, FlushPolicy flushPolicy, String writerId, String processId,
        Duration defaultWait, int maxNamesPerUnit, Duration minTimeLeftAtPrepare, Duration ownerTtl,
        Map<String, String> remoteOptions, Duration inDoubtHold, Duration viewBuildInterval, Path signingKeyFile,
        Duration signedTimeBound, Duration compactionInterval, Duration compactionHorizon, Duration retentionDelay) {

    static final String EMBEDDED = "embedded";
    private static final long DAY_MILLIS = Duration.ofDays(1).toMillis();

    boolean embedded() {
        return EMBEDDED.equals(leaseService);
    }

    boolean remote() {
        return leaseService.toLowerCase(Locale.ROOT).startsWith("remote:");
    }

    /** Remote mode: the lease servers, {@code host:port} separated by commas (a backend: what follows its scheme). */
    String remoteServers() {
        return leaseService.substring(leaseService.indexOf(':') + 1).trim();
    }

    /** Backend mode ({@code etcd:...}): the backend's scheme, such as {@code etcd}; null in the other modes. */
    String backend() {
        return embedded() || remote() ? null : LeaseBackends.scheme(leaseService);
    }

    /** Backend mode: where the backend's servers are, as given (before any {@code ?options}). */
    String backendEndpoints() {
        String rest = remoteServers();
        int q = rest.indexOf('?');
        return q < 0 ? rest : rest.substring(0, q);
    }

    /** {@link #leaseService} as it may be shown: a password among a backend's options replaced by {@code ***}. */
    String leaseServiceShown() {
        return shown(leaseService);
    }

    /** A {@code LeaseService} value as it may be shown (null stays null): any {@code password=} value is {@code ***}. */
    static String shown(String leaseService) {
        return leaseService == null ? null : leaseService.replaceAll("password=[^&;]*", "password=***");
    }

    /** The identity of the runtime these settings need: everything that must agree for two factories to share one. */
    String runtimeKey() {
        return bagStoreRoot.toAbsolutePath().normalize() + "|" + log + "|" + leaseService + "|" + writerId;
    }

    /**
     * Builds and checks the settings from the raw property values; the message of the exception names the property,
     * the value and what would be accepted.
     */
    static AdapterConfig from(String bagStoreRoot, String log, String leaseService, Long maxLeaseMillis,
            Long graceMillis, Long maxClockErrorMillis, Long bucketMillis, String flushPolicy, String writerId,
            String processId, Long defaultWaitMillis, Integer maxNamesPerUnit, Long minTimeLeftAtPrepareMillis,
            Long ownerTtlMillis, String remoteOptions, Long inDoubtHoldMillis, Long viewBuildIntervalMillis,
            String signingKeyFile, Long signedTimeBoundMillis, Long compactionIntervalMillis,
            Long compactionHorizonMillis, Long retentionDelayMillis) {
        Check.text("BagStoreRoot", bagStoreRoot, "give the directory of the bag store (a shared file system mount "
                + "for a fleet), which must exist and be writable");
        Path root;
        try {
            root = Path.of(bagStoreRoot.trim());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("BagStoreRoot '" + bagStoreRoot + "' is not a valid path: " + e.getReason());
        }
        if (!Files.isDirectory(root)) {
            throw new IllegalArgumentException("BagStoreRoot " + root + " does not exist or is not a directory: create it "
                    + "(or mount the shared file system there) before deploying");
        }
        if (!Files.isWritable(root)) {
            throw new IllegalArgumentException("BagStoreRoot " + root + " is not writable by this server's user: "
                    + "grant write access or choose another directory");
        }
        String logName = log == null || log.isBlank() ? "default" : log.trim();
        String problem = Names.logNameProblem(logName);
        if (problem != null) {
            throw new IllegalArgumentException("Log '" + logName + "' " + problem);
        }
        String mode = leaseService == null || leaseService.isBlank() ? EMBEDDED : leaseService.trim();
        if (!mode.equals(EMBEDDED) && !LeaseBackends.hasScheme(mode)) {
            throw new IllegalArgumentException("LeaseService '" + leaseService + "' is not understood: use 'embedded' "
                    + "(one server), 'remote:<host:port>[,<host:port>...]' (a lease server shared by a fleet) or "
                    + "'etcd:<host:port>[,<host:port>...]' (an etcd cluster, with the etcd backend's jars)");
        }
        Duration maxLease = millis("MaxLeaseMillis", maxLeaseMillis, 10_000, 1, DAY_MILLIS,
                "use a positive duration of at most one day (86400000); the default is 10000");
        Duration grace = millis("GraceMillis", graceMillis, 2_000, 0, Long.MAX_VALUE, "use 0 or more (default 2000)");
        Duration clockError = millis("MaxClockErrorMillis", maxClockErrorMillis, 500, 0, grace.toMillis() - 1,
                "use 0 or more, and less than GraceMillis (" + grace.toMillis() + ")");
        Duration bucket = millis("BucketMillis", bucketMillis, 1_000, 1, DAY_MILLIS,
                "use a positive width that divides a day (for example 100, 1000 or 60000)");
        if (DAY_MILLIS % bucket.toMillis() != 0) {
            throw Check.invalid("BucketMillis", bucketMillis,
                    "use a positive width that divides a day (for example 100, 1000 or 60000)");
        }
        FlushPolicy flush = flushPolicy(flushPolicy);
        String writer = writerId == null || writerId.isBlank() ? null : writerId.trim();
        if (writer != null) {
            String p = Names.writerIdProblem(writer);
            if (p != null) {
                throw new IllegalArgumentException("WriterId '" + writer + "' " + p);
            }
        }
        String process = processId == null || processId.isBlank() ? null : processId.trim();
        Duration wait = millis("DefaultWaitMillis", defaultWaitMillis, 5_000, 0, Long.MAX_VALUE,
                "use 0 (try once) or more");
        int maxNames = Check.inRange("MaxNamesPerUnit", maxNamesPerUnit == null ? 100 : maxNamesPerUnit, 1,
                EngineConfig.NAMES_PER_REQUEST_LIMIT, " (default 100)");
        Duration minLeft = millis("MinTimeLeftAtPrepareMillis", minTimeLeftAtPrepareMillis, 1_000, 0,
                maxLease.toMillis() - 1, "use 0 or more, and less than MaxLeaseMillis (" + maxLease.toMillis() + ")");
        Duration ttl = millis("OwnerTtlMillis", ownerTtlMillis, 8_000, 1_000, Long.MAX_VALUE,
                "use at least 1000 (default 8000)");
        Duration inDoubt = millis("InDoubtHoldMillis", inDoubtHoldMillis, 300_000, maxLease.toMillis(), DAY_MILLIS,
                "use at least MaxLeaseMillis (" + maxLease.toMillis() + ") and at most one day (86400000); the default, "
                + "300000, covers an application server's restart");
        String viewRule = "use 0 (the adapter builds no snapshot; the application does) or 1000 to 86400000 (one day); "
                + "the default is 60000";
        Duration viewInterval = millis("ViewBuildIntervalMillis", viewBuildIntervalMillis, 60_000, 0, DAY_MILLIS,
                viewRule);
        if (!viewInterval.isZero() && viewInterval.toMillis() < 1_000) {
            throw Check.invalid("ViewBuildIntervalMillis", viewBuildIntervalMillis, viewRule);
        }
        if (!mode.equals(EMBEDDED) && mode.substring(mode.indexOf(':') + 1).isBlank()) {
            throw new IllegalArgumentException("LeaseService '" + leaseService + "' names no server: use "
                    + "'remote:<host:port>[,<host:port>...]' or 'etcd:<host:port>[,<host:port>...]'");
        }
        Path keyFile = signingKeyFile(signingKeyFile, mode);
        Duration signedBound = millis("SignedTimeBoundMillis", signedTimeBoundMillis, 1_000, 1, 3_600_000,
                "use 1 to 3600000 (one hour); the default is 1000: how far a message's timestamp may lie from the "
                + "signed time its leases' witnesses carry");
        String compactionRule = "use 0 (no background compaction; the default) or 1000 to 86400000 (one day)";
        Duration compaction = millis("CompactionIntervalMillis", compactionIntervalMillis, 0, 0, DAY_MILLIS,
                compactionRule);
        if (!compaction.isZero() && compaction.toMillis() < 1_000) {
            throw Check.invalid("CompactionIntervalMillis", compactionIntervalMillis, compactionRule);
        }
        long settled = grace.plus(clockError).toMillis();
        Duration horizon = millis("CompactionHorizonMillis", compactionHorizonMillis, 3_600_000, settled + 1,
                30 * DAY_MILLIS, "use more than GraceMillis plus MaxClockErrorMillis (" + settled + "; a younger "
                + "bucket may still be written to or sealed) and at most 30 days (2592000000); the default is 3600000");
        Duration retention = millis("RetentionDelayMillis", retentionDelayMillis, 0, 0, 365 * DAY_MILLIS,
                "use 0 (keep every bucket's files; the default) or 1000 to 31536000000 (365 days), longer than any "
                + "read may take");
        if (!retention.isZero() && retention.toMillis() < 1_000) {
            throw Check.invalid("RetentionDelayMillis", retentionDelayMillis, "use 0 (keep every bucket's files; the "
                    + "default) or 1000 to 31536000000 (365 days), longer than any read may take");
        }
        if (!retention.isZero() && compaction.isZero()) {
            throw new IllegalArgumentException("RetentionDelayMillis is " + retentionDelayMillis + " but "
                    + "CompactionIntervalMillis is 0: buckets are removed only by background compaction; set "
                    + "CompactionIntervalMillis too (for example 60000), or RetentionDelayMillis to 0");
        }
        return new AdapterConfig(root, logName, mode, maxLease, grace, clockError, bucket, flush, writer, process, wait,
                maxNames, minLeft, ttl, remoteOptions(remoteOptions), inDoubt, viewInterval, keyFile, signedBound,
                compaction, horizon, retention);
    }

    /**
     * The {@code SigningKeyFile} path, or null if unset. Only the embedded engine signs with the adapter's key: a lease
     * server or backend signs with its own. The file itself is read when the runtime starts.
     */
    private static Path signingKeyFile(String text, String mode) {
        if (text == null || text.isBlank()) {
            return null;
        }
        if (!mode.equals(EMBEDDED)) {
            throw new IllegalArgumentException("SigningKeyFile is set, but LeaseService is '" + mode + "': only the "
                    + "embedded engine signs with the adapter's key; configure the key of the lease service instead, "
                    + "or remove SigningKeyFile");
        }
        try {
            return Path.of(text.trim());
        } catch (InvalidPathException e) {
            throw new IllegalArgumentException("SigningKeyFile '" + text + "' is not a valid path: " + e.getReason());
        }
    }

    /**
     * Parses {@code key=value;key=value}: the remote client's properties (token, tokenFile, tlsTrustFile, tlsCertFile,
     * tlsKeyFile, tlsAuthority, callTimeout, previousServers, migrationStartedAt, ...); the client checks the keys.
     */
    static Map<String, String> remoteOptions(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        if (text == null || text.isBlank()) {
            return out;
        }
        for (String part : text.split(";")) {
            if (part.isBlank()) {
                continue;
            }
            int eq = part.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("RemoteOptions entry '" + part.trim() + "' is not key=value: write "
                        + "for example 'tokenFile=/etc/leasehold/token;tlsTrustFile=/etc/leasehold/ca.pem'");
            }
            String key = part.substring(0, eq).trim();
            if (key.equals("servers")) {
                throw new IllegalArgumentException("RemoteOptions may not set 'servers': give them in LeaseService "
                        + "as 'remote:<host:port>[,...]'");
            }
            out.put(key, part.substring(eq + 1).trim());
        }
        return out;
    }

    /** A duration property in milliseconds ({@code defaultMillis} if not set), from {@code min} to {@code max}. */
    private static Duration millis(String property, Long value, long defaultMillis, long min, long max, String rule) {
        return Duration.ofMillis(Check.within(property, value == null ? defaultMillis : value, min, max, rule));
    }

    static FlushPolicy flushPolicy(String text) {
        String v = text == null || text.isBlank() ? "every-batch" : text.trim().toLowerCase(Locale.ROOT);
        if (v.equals("every-batch")) {
            return FlushPolicy.everyBatch();
        }
        if (v.equals("never")) {
            return FlushPolicy.never();
        }
        if (v.startsWith("interval:")) {
            try {
                long ms = Long.parseLong(v.substring("interval:".length()).trim());
                if (ms > 0) {
                    return FlushPolicy.interval(Duration.ofMillis(ms));
                }
            } catch (NumberFormatException e) {
                // Reported below with the accepted forms.
            }
        }
        throw new IllegalArgumentException("FlushPolicy '" + text + "' is not understood: use 'every-batch' (default, "
                + "safe), 'interval:<millis>' (a machine crash can lose that much) or 'never' (tests only)");
    }
}
