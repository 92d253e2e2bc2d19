package org.leasehold.adapter;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.leasehold.connector.AdapterStatus;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseService;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.TimeSource;

/**
 * The readiness and liveness of one runtime, as {@link AdapterStatus}:
 *
 * <ul>
 *   <li><b>store</b>: the bag store accepts a write. This server's writer overwrites its probe file
 *       {@code <root>/.leasehold/health/<writer>} (the current time, forced to disk), at most once a second; a failure
 *       names the file and the error.
 *   <li><b>leases</b>: embedded mode, this server still owns the log and its last ownership heartbeat succeeded
 *       (the engine grants only while they do); remote mode, every lease server answers a clock sample, asked at most
 *       once a second per server; backend mode ({@code etcd:...}), the backend answers a read (an inspection of names
 *       no lease can have), asked at most once a second.
 *   <li><b>clocks</b>: remote mode, every lease server's clock as last measured is within {@code MaxClockErrorMillis}
 *       of this server's (the rule the adapter refuses leases by); embedded mode has one clock and always passes, and
 *       so does backend mode, whose deadlines are on this server's clock.
 * </ul>
 *
 * <p>Live unless the runtime can never serve again without a restart: another server took the log over (the
 * embedded engine is fenced for good), or the ownership heartbeats stopped running (the adapter's timer is stuck).
 * An unwritable store or an unreachable lease server is only not ready: both recover by themselves.
 */
final class AdapterHealth {
    private static final System.Logger LOG = System.getLogger(AdapterHealth.class.getName());

    /** How long a probe's or a clock sample's result is reused. */
    private static final long REUSE_MICROS = 1_000_000L;
    /** The name prefix a backend's probe inspects: no lease name has a control character, so it finds nothing. */
    static final String PROBE_PREFIX = "\u0001leasehold-health";

    private final AdapterConfig config;
    private final String writer;
    private final LeaseService leases;
    private final EmbeddedOwnership ownership;
    private final ClockCheck clocks;
    private final TimeSource time;
    private final Path probe;
    private final Map<String, Sample> samples = new ConcurrentHashMap<>();
    private Sample lastProbe;
    private Sample lastBackend;
    private volatile boolean closed;

    /** A result and when it was found. */
    private record Sample(long atMicros, String problem) {
    }

    AdapterHealth(AdapterConfig config, String writer, LeaseService leases, EmbeddedOwnership ownership,
            ClockCheck clocks, TimeSource time) {
        this.config = config;
        this.writer = writer;
        this.leases = leases;
        this.ownership = ownership;
        this.clocks = clocks;
        this.time = time;
        this.probe = config.bagStoreRoot().resolve(".leasehold").resolve("health").resolve(writer);
    }

    /** The runtime has stopped: every later status says so. */
    void close() {
        closed = true;
    }

    /** The status now; may write the probe file and, in remote mode, ask the lease servers for a clock sample. */
    AdapterStatus status() {
        if (closed) {
            String stopped = "the adapter's runtime for log '" + config.log() + "' has stopped (the resource adapter "
                    + "was stopped or undeployed): deploy it again, or restart the server";
            return new AdapterStatus(config.log(), writer, config.leaseServiceShown(),
                    List.of(new AdapterStatus.Check(AdapterStatus.RUNTIME, false, stopped)), null);
        }
        List<AdapterStatus.Check> checks = new ArrayList<>();
        String store = storeProblem();
        checks.add(new AdapterStatus.Check(AdapterStatus.STORE, store == null,
                store == null ? "writable: " + probe : store));
        String service = leaseServiceProblem();
        checks.add(new AdapterStatus.Check(AdapterStatus.LEASES, service == null,
                service == null ? leaseServiceFine() : service));
        String clock = clocks.status();
        checks.add(new AdapterStatus.Check(AdapterStatus.CLOCKS, clock == null, clock == null ? clocksFine() : clock));
        return new AdapterStatus(config.log(), writer, config.leaseServiceShown(), checks, notLive());
    }

    private String leaseServiceFine() {
        if (config.embedded()) {
            return "embedded: this server owns log '" + config.log() + "' and grants its leases";
        }
        return config.remote() ? "every lease server answers: " + config.remoteServers()
                : config.backend() + " at " + config.backendEndpoints() + " answers";
    }

    private String clocksFine() {
        if (config.embedded()) {
            return "one clock: the embedded lease service runs on this server's";
        }
        return config.remote() ? "every lease server's clock is within MaxClockErrorMillis ("
                + config.maxClockError().toMillis() + " ms) of this server's"
                : "nothing to compare: " + config.backend() + " keeps no clock, the deadlines are on this server's "
                        + "(MaxClockErrorMillis, " + config.maxClockError().toMillis() + " ms, bounds the clock "
                        + "difference between the servers that share " + config.backend() + ")";
    }

    private synchronized String storeProblem() {
        long now = time.nowMicros();
        if (lastProbe != null && now - lastProbe.atMicros() < REUSE_MICROS && now >= lastProbe.atMicros()) {
            return lastProbe.problem();
        }
        String problem = null;
        try {
            Files.createDirectories(probe.getParent());
            try (FileChannel ch = FileChannel.open(probe, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                ByteBuffer b = ByteBuffer.wrap(String.format("%020d%n", now).getBytes(StandardCharsets.US_ASCII));
                while (b.hasRemaining()) {
                    ch.write(b, b.position());
                }
                ch.force(false);
            }
        } catch (IOException | RuntimeException e) {
            problem = "the bag store at " + config.bagStoreRoot() + " does not accept writes: writing " + probe
                    + " failed (" + e + "); no transaction can commit its messages until it does. Check that the "
                    + "file system is mounted and writable by the server's user, and not full";
        }
        boolean wasDown = lastProbe != null && lastProbe.problem() != null;
        if (problem != null && !wasDown) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4501 {0}", problem);
        } else if (problem == null && wasDown) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4502 the bag store at {0} accepts writes again",
                    config.bagStoreRoot());
        }
        lastProbe = new Sample(now, problem);
        return problem;
    }

    private String leaseServiceProblem() {
        if (ownership != null) {
            if (ownership.replaced()) {
                return "another server took log '" + config.log() + "' over: this server's embedded lease service grants "
                        + "nothing any more";
            }
            String clock = ownership.clockProblem();
            if (clock != null) {
                return clock;
            }
            String beat = ownership.heartbeatProblem();
            if (beat != null) {
                return "this server cannot confirm that it still owns log '" + config.log() + "': " + beat
                        + "; its embedded lease service stops granting half of OwnerTtlMillis after the last success";
            }
            return null;
        }
        if (leases instanceof RemoteLeaseService remote) {
            long now = time.nowMicros();
            for (String address : remote.clockOffsets().keySet()) {
                Sample s = samples.get(address);
                if (s == null || now - s.atMicros() >= REUSE_MICROS || now < s.atMicros()) {
                    String problem = null;
                    try {
                        remote.measureClockOffset(address);
                    } catch (LeaseException | RuntimeException e) {
                        problem = "lease server " + address + " does not answer (" + e.getMessage() + "): no lease "
                                + "is taken through it until it does. Check that it runs and that this server reaches it";
                    }
                    s = new Sample(now, problem);
                    samples.put(address, s);
                }
                if (s.problem() != null) {
                    return s.problem();
                }
            }
            return null;
        }
        return config.backend() == null ? null : backendProblem();
    }

    /**
     * Backend mode: asks the backend now, so that one that does not answer when the runtime starts is logged at once
     * ({@code LEASEHOLD-4701}) rather than at the first health check or transaction.
     */
    void probeBackend() {
        if (config.backend() != null && !closed) {
            backendProblem();
        }
    }

    /**
     * Backend mode: null while the backend answers a read, else why not; asked at most once a second, and logged when
     * it stops answering and when it answers again.
     */
    private synchronized String backendProblem() {
        long now = time.nowMicros();
        if (lastBackend != null && now - lastBackend.atMicros() < REUSE_MICROS && now >= lastBackend.atMicros()) {
            return lastBackend.problem();
        }
        String problem = null;
        try {
            leases.inspect(PROBE_PREFIX, 1);
        } catch (RuntimeException e) {
            problem = config.backend() + " at " + config.backendEndpoints() + " does not answer (" + e.getMessage()
                    + "): no lease is granted until it does. Check that the " + config.backend() + " members run, "
                    + "that this server reaches them, and the LeaseService options (TLS, user)";
        }
        boolean wasDown = lastBackend != null && lastBackend.problem() != null;
        if (problem != null && !wasDown) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4701 log {0}: {1}", config.log(), problem);
        } else if (problem == null && wasDown) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4702 log {0}: {1} at {2} answers again", config.log(),
                    config.backend(), config.backendEndpoints());
        }
        lastBackend = new Sample(now, problem);
        return problem;
    }

    private String notLive() {
        if (ownership == null) {
            return null;
        }
        if (ownership.replaced()) {
            return "another server took log '" + config.log() + "' over: this server's embedded lease service is fenced "
                    + "for good and serves again only after a restart (which claims the log once the other server's "
                    + "ownership lapses)";
        }
        Duration silent = ownership.sinceLastHeartbeat();
        if (silent.compareTo(config.ownerTtl()) > 0) {
            return "the ownership heartbeat of log '" + config.log() + "' has not run for " + silent.toMillis()
                    + " ms (it runs every eighth of OwnerTtlMillis, " + config.ownerTtl().toMillis() + " ms): the "
                    + "adapter's timer is stuck, and its embedded lease service grants nothing; restart the server";
        }
        return null;
    }
}
