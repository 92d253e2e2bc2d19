package org.leasehold.adapter;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeyRotation;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.backend.LeaseBackend;
import org.leasehold.backend.LeaseBackends;
import org.leasehold.bag.BagStoreException;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.fs.TimeMarkFiles;
import org.leasehold.lease.LeaseService;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Everything one configuration of the adapter runs: the lease service (an embedded engine that owns the log, or a
 * client of a lease server), the bag store with its appender and sealer, the prepare journal, the lease keeper that
 * renews the units' leases (on the container's work manager) and the metrics. Started on first use, stopped when the adapter stops.
 */
final class LeaseholdRuntime implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(LeaseholdRuntime.class.getName());

    private final AdapterConfig config;
    private final FileBagStore store;
    private final LeaseService leases;
    private final EmbeddedOwnership ownership;
    private final TimeMarkFiles mark;
    private final PrepareJournal journal;
    private final AdapterMetrics metrics;
    private final SessionEvents events;
    private final LeaseKeeper keeper;
    private final ResourceManager rm;
    private final AdapterHealth health;
    private final AdapterViews views;
    /** Embedded mode with a generated key: adopts a rotated key file; else null. */
    private final KeyRotation rotation;

    private LeaseholdRuntime(AdapterConfig config, FileBagStore store, LeaseService leases, EmbeddedOwnership ownership,
            TimeMarkFiles mark, PrepareJournal journal, AdapterMetrics metrics, SessionEvents events, LeaseKeeper keeper,
            ResourceManager rm, AdapterHealth health, AdapterViews views, KeyRotation rotation) {
        this.config = config;
        this.store = store;
        this.leases = leases;
        this.ownership = ownership;
        this.mark = mark;
        this.journal = journal;
        this.metrics = metrics;
        this.events = events;
        this.keeper = keeper;
        this.rm = rm;
        this.health = health;
        this.views = views;
        this.rotation = rotation;
    }

    /**
     * Starts a runtime for {@code config}.
     *
     * @throws RuntimeStartException the store, the log's ownership or the journal could not be had; the message says
     *                               why and what to do
     */
    static LeaseholdRuntime start(AdapterConfig config, TimeSource time, Executor work) throws RuntimeStartException {
        BagStoreConfig storeConfig = BagStoreConfig.builder(config.bagStoreRoot()).bucketWidth(config.bucketWidth())
                .grace(config.grace()).maxClockError(config.maxClockError()).flushPolicy(config.flushPolicy())
                .maxLeaseDuration(config.maxLease()).writerId(config.writerId())
                .signedTimeBound(config.signedTimeBound()).compactionInterval(config.compactionInterval())
                .compactionHorizon(config.compactionHorizon()).removeCompactedBuckets(!config.retentionDelay().isZero())
                .retentionDelay(config.retentionDelay().isZero() ? BagStoreConfig.defaults(config.bagStoreRoot())
                        .retentionDelay() : config.retentionDelay()).build();
        FileBagStore store;
        try {
            store = FileBagStore.open(storeConfig.validate(), time);
        } catch (BagStoreException | IllegalArgumentException e) {
            throw new RuntimeStartException("the bag store at " + config.bagStoreRoot() + " could not be opened: "
                    + e.getMessage(), e);
        }
        try {
            // The log exists from the start, so that an application's first read (before anything was appended)
            // finds it empty rather than unknown.
            store.createLog(config.log());
        } catch (BagStoreException e) {
            store.close();
            throw new RuntimeStartException("the bag store at " + config.bagStoreRoot() + " could not be opened: "
                    + e.getMessage(), e);
        }
        NfsSafeFiles fs = new NfsSafeFiles();
        EmbeddedOwnership ownership = null;
        TimeMarkFiles mark = null;
        LeaseService leases = null;
        EmbeddedLeaseService engine = null;
        AuditSigner signer = null;
        KeyRotation rotation = null;
        PrepareJournal journal;
        try {
            if (config.embedded()) {
                ownership = EmbeddedOwnership.claim(fs, config.bagStoreRoot(), config.log(), store.writerId(),
                        config.ownerTtl(), config.maxLease(), config.grace(), config.maxClockError(), time);
                mark = timeMark(fs, config, time);
                // The engine grants from max(now, the mark's horizon) + its quiet period: from when the previous
                // owner's leases are over, and not before its clock has passed the mark.
                Instant base = time.now();
                if (mark.previous() != null && Micros.toInstant(mark.previous().horizon()).isAfter(base)) {
                    base = Micros.toInstant(mark.previous().horizon());
                }
                Duration quiet = Duration.between(base, ownership.grantableFrom());
                String serviceId = "embedded/" + store.writerId() + "/" + config.log();
                Signing signing = signer(fs, config, store.writerId(), serviceId, time);
                signer = signing.signer();
                if (signing.rotatable()) {
                    rotation = new KeyRotation(signing.keys(), signer, time, rotationEvents(config.log()));
                }
                engine = new EmbeddedLeaseService(EngineConfig.defaults()
                        .withServiceId(serviceId)
                        .withMaxLeaseDuration(config.maxLease()).withGrace(config.grace())
                        .withClockErrorBound(config.maxClockError())
                        .withQuietPeriod(quiet.isNegative() ? Duration.ZERO : quiet), time, mark, signer);
                ownership.start(engine::fenceAt);
                leases = engine;
            } else if (config.remote()) {
                leases = remote(config, store.writerId(), time);
            } else {
                leases = backend(config, store.writerId(), time);
            }
            journal = new PrepareJournal(fs, config.bagStoreRoot(), config.log(), store.writerId());
        } catch (EmbeddedOwnership.OwnedElsewhereException | RuntimeStartException | IOException
                | AuditFormatException e) {
            if (ownership != null) {
                ownership.close();
            }
            if (leases != null) {
                leases.close();
            }
            if (rotation != null) {
                rotation.close();
            }
            if (signer != null) {
                signer.close();
            }
            if (mark != null) {
                mark.close();
            }
            store.close();
            if (e instanceof RuntimeStartException rse) {
                throw rse;
            }
            throw new RuntimeStartException(e instanceof IOException ? "the adapter could not set up its files under "
                    + config.bagStoreRoot() + "/.leasehold: " + e : e.getMessage(), e);
        }
        AdapterMetrics metrics = new AdapterMetrics();
        metrics.register(config.log(), store.writerId());
        SessionEvents events = new SessionEvents(time, metrics);
        LeaseKeeper keeper = new LeaseKeeper(leases, time, () -> Duration.ZERO, work);
        String process = config.processId() != null ? config.processId() : store.writerId();
        ClockCheck clocks = leases instanceof RemoteLeaseService r ? ClockCheck.of(r, config.maxClockError(), metrics, time)
                : ClockCheck.none();
        ResourceManager rm = new ResourceManager(config, leases, store, journal, time, keeper, events, metrics, process,
                clocks);
        if (engine != null) {
            rm.reinstatePrepared(engine);
        }
        metrics.branches(rm::preparedBranches, rm::heuristicBranches);
        if (engine != null && engine.signer() != null) {
            metrics.signer(engine.signer()::totals);
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4004 adapter runtime started: log {0} at {1}, writer {2}, lease "
                + "service {3}", config.log(), config.bagStoreRoot(), store.writerId(), leases.serviceId());
        AdapterHealth health = new AdapterHealth(config, store.writerId(), leases, ownership,
                leases instanceof RemoteLeaseService r ? ClockCheck.of(r, config.maxClockError(), metrics, time)
                        : ClockCheck.none(), time);
        if (config.backend() != null) {
            try {
                work.execute(health::probeBackend);
            } catch (RejectedExecutionException e) {
                // The first health check asks instead.
            }
        }
        AdapterViews views = new AdapterViews(config.log(), store, time, work, config.viewBuildInterval());
        return new LeaseholdRuntime(config, store, leases, ownership, mark, journal, metrics, events, keeper, rm, health,
                views, rotation);
    }

    /**
     * The embedded engine's time mark, {@code <root>/.leasehold/time-mark/<log>/}: the log's owners record there,
     * one after the other, so that a later owner's generations and floors start above an earlier one's.
     */
    private static TimeMarkFiles timeMark(NfsSafeFiles fs, AdapterConfig config, TimeSource time) throws IOException {
        Path marks = config.bagStoreRoot().resolve(".leasehold").resolve("time-mark");
        fs.createDirectory(marks);
        // On a manual clock (tests) the mark is recorded on the thread that moves time, so that tests are exact.
        return TimeMarkFiles.open(fs, marks.resolve(config.log()), !(time instanceof ManualTimeSource));
    }

    /** What the embedded engine's key rotation logs: a rotation, or a failed look (once per problem). */
    private static KeyRotation.Events rotationEvents(String log) {
        return new KeyRotation.Events() {
            @Override
            public void rotated(KeyId from, KeyId to) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8202 the embedded engine of log {0} rotated its "
                        + "signing key from {1} to {2}, published before its first signature; the old key stays "
                        + "valid until revoked", log, from, to);
            }

            @Override
            public void failed(KeyId current, String problem) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8203 the embedded engine of log {0} could not "
                        + "look for a rotated signing key: {1}; it signs on with key {2} and looks again in {3} s",
                        log, problem, current, KeyRotation.CHECK_MICROS / 1_000_000);
            }
        };
    }

    /**
     * The embedded engine's signer: the key of {@code SigningKeyFile} if one is configured, else its key in
     * {@code <root>/.leasehold/signing/<log>/<writer>/} (generated at the first start); published in
     * {@code <root>/.leasehold/keys/} before it signs.
     *
     * @throws RuntimeStartException the configured key file is missing, unreadable or not an Ed25519 private key
     */
    private static Signing signer(NfsSafeFiles fs, AdapterConfig config, String writer, String serviceId,
            TimeSource time) throws IOException, AuditFormatException, RuntimeStartException {
        PublishedKeys published = new PublishedKeys(fs, config.bagStoreRoot(), writer);
        if (config.signingKeyFile() != null) {
            SigningKey key = configuredKey(config.signingKeyFile());
            ServiceKeys service = new ServiceKeys(null, published, serviceId);
            AuditSigner signer = service.start(key, Micros.of(config.maxClockError()), time.nowMicros());
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8201 the embedded engine of log {0} signs with key {1} of "
                    + "SigningKeyFile {2}, published under {3}", config.log(), key.id(), config.signingKeyFile(),
                    PublishedKeys.directory(config.bagStoreRoot()));
            return new Signing(service, signer, false);
        }
        Path signing = config.bagStoreRoot().resolve(".leasehold").resolve("signing");
        fs.createDirectory(signing);
        fs.createDirectory(signing.resolve(config.log()));
        KeyFiles keys = new KeyFiles(fs, signing.resolve(config.log()).resolve(writer), writer, new SecureRandom());
        ServiceKeys service = new ServiceKeys(keys, published, serviceId);
        return new Signing(service, service.start(keys.current(), Micros.of(config.maxClockError()),
                time.nowMicros()), true);
    }

    /** The embedded engine's keys and signer; {@code rotatable} unless the key is a configured file. */
    private record Signing(ServiceKeys keys, AuditSigner signer, boolean rotatable) {
    }

    /** Reads the {@code SigningKeyFile}; a failure says which file, what is wrong and what to do. */
    static SigningKey configuredKey(Path file) throws RuntimeStartException {
        String remedy = ": create one with 'openssl genpkey -algorithm ed25519 -out " + file + "', readable by this "
                + "server's user only, or remove SigningKeyFile so that the adapter generates its key";
        try {
            return KeyFiles.read(file);
        } catch (NoSuchFileException e) {
            throw new RuntimeStartException("SigningKeyFile " + file + " does not exist" + remedy, e);
        } catch (AccessDeniedException e) {
            throw new RuntimeStartException("SigningKeyFile " + file + " is not readable by this server's user: grant "
                    + "it read access, or configure another key file", e);
        } catch (IOException e) {
            throw new RuntimeStartException("SigningKeyFile " + file + " could not be read (" + e + ")" + remedy, e);
        } catch (AuditFormatException e) {
            throw new RuntimeStartException("SigningKeyFile " + file + " is not an Ed25519 private key: "
                    + e.getMessage(), e);
        }
    }

    /** A client of the lease servers named in {@code LeaseService}, with the {@code RemoteOptions}. */
    private static LeaseService remote(AdapterConfig config, String writer, TimeSource time) throws RuntimeStartException {
        Map<String, String> properties = new LinkedHashMap<>(config.remoteOptions());
        properties.put("servers", config.remoteServers());
        properties.putIfAbsent("process", config.processId() != null ? config.processId() : writer);
        try {
            return new RemoteLeaseService(RemoteClientConfig.fromProperties(properties), time);
        } catch (RuntimeException e) {
            throw new RuntimeStartException("the lease service client for " + config.leaseService()
                    + " could not be set up: " + e.getMessage(), e);
        }
    }

    /** A lease service of another module, found by the scheme of {@code LeaseService} ({@code etcd:...}). */
    private static LeaseService backend(AdapterConfig config, String writer, TimeSource time)
            throws RuntimeStartException {
        try {
            return LeaseBackends.open(config.leaseService(), new LeaseBackend.Settings(config.maxLease(),
                    config.grace(), config.maxClockError(), config.processId() != null ? config.processId() : writer),
                    time, LeaseholdRuntime.class.getClassLoader());
        } catch (RuntimeException e) {
            throw new RuntimeStartException("the lease service " + config.leaseServiceShown() + " could not be set up: "
                    + e.getMessage(), e);
        }
    }

    AdapterConfig config() {
        return config;
    }

    ResourceManager resourceManager() {
        return rm;
    }

    LeaseService leases() {
        return leases;
    }

    FileBagStore store() {
        return store;
    }

    AdapterMetrics metrics() {
        return metrics;
    }

    /** The session events of the leases this runtime keeps alive, and their listeners. */
    SessionEvents sessionEvents() {
        return events;
    }

    /** The log's materialized views: reads, registered definitions, snapshot builds. */
    AdapterViews views() {
        return views;
    }

    /** Readiness and liveness, for health checks (see {@link AdapterHealth}). */
    AdapterStatus status() {
        return health.status();
    }

    /** The log's ownership in embedded mode, else null. */
    EmbeddedOwnership ownership() {
        return ownership;
    }

    @Override
    public void close() {
        views.close();
        keeper.close();
        health.close();
        metrics.unregister();
        if (ownership != null) {
            ownership.close();
        }
        if (rotation != null) {
            rotation.close();
        }
        leases.close();
        if (leases instanceof EmbeddedLeaseService e && e.signer() != null) {
            e.signer().close();
        }
        if (mark != null) {
            mark.close();
        }
        journal.close();
        store.close();
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4005 adapter runtime stopped: log {0} at {1}", config.log(),
                config.bagStoreRoot());
    }

    /** The runtime could not start; the message is for the operator. */
    static final class RuntimeStartException extends Exception {
        private static final long serialVersionUID = 1L;

        RuntimeStartException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
