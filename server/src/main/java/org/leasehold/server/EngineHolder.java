package org.leasehold.server;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.function.Consumer;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeyRotation;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.backend.LeaseBackend;
import org.leasehold.backend.LeaseBackends;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.LeaseService;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.fs.TimeMarkFiles;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeMark;
import org.leasehold.time.TimeSource;

/**
 * The engine the server serves, the clock it runs on and the time mark it keeps in the state directory. In
 * production that is one engine on the system clock for the server's life. With a test clock, tests may replace the
 * engine (a fresh service with new settings, or a restart on the same clock); nothing else ever does.
 *
 * <p>The state directory is the server's alone while it runs: it holds a lock on {@code <dir>/lock} (released by the
 * operating system when the process ends), and its time mark is in {@code <dir>/time-mark/}.
 */
final class EngineHolder {
    private static final System.Logger LOG = System.getLogger(EngineHolder.class.getName());

    private final boolean testClock;
    private final Path stateDir;
    private final FileChannel lockFile;
    private final TimeMarkFiles mark;
    private volatile TimeSource time;
    private final String backend;
    private volatile LeaseService engine;
    private volatile EngineConfig config;
    private final AuditSigner signer;
    /** The keys it serves, the current one first: its key at the start, and each key it rotated to since. */
    private volatile List<PublishedKey> keys = List.of();
    /** Adopts the key files an operator links into the state directory; null unless the keys are generated there. */
    private volatile KeyRotation rotation;
    private final ServiceKeys serviceKeys;

    /**
     * Takes the state directory (null: none) and starts the engine.
     *
     * @throws IOException the state directory cannot be created, locked or read; the message says what to do
     */
    EngineHolder(EngineConfig config, Instant testClockStart, Path stateDir, String backend,
            ServerConfig.Signing signing) throws IOException {
        this.testClock = testClockStart != null;
        this.backend = backend;
        this.stateDir = stateDir == null ? null : stateDir.toAbsolutePath();
        this.config = config;
        FileChannel lock = null;
        TimeMarkFiles m = null;
        if (stateDir != null) {
            try {
                Files.createDirectories(this.stateDir);
                lock = FileChannel.open(this.stateDir.resolve("lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            } catch (IOException e) {
                throw new IOException("the state directory " + this.stateDir + " cannot be used (" + e + "): give a "
                        + "writable local directory with --state-dir, or --no-state-dir to keep no time mark", e);
            }
            try {
                FileLock held;
                try {
                    held = lock.tryLock();
                } catch (OverlappingFileLockException e) {
                    held = null;
                }
                if (held == null) {
                    throw new IOException("another lease server uses the state directory " + this.stateDir + " (it "
                            + "holds " + this.stateDir.resolve("lock") + "): give each server its own --state-dir");
                }
                m = TimeMarkFiles.open(new NfsSafeFiles(), this.stateDir.resolve("time-mark"), !testClock);
            } catch (IOException e) {
                lock.close();
                throw e;
            }
        } else if (backend == null) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2020 this lease server keeps no state directory "
                    + "(--no-state-dir): if its clock steps back across a restart, the generations and floors it grants "
                    + "go back with it. Give --state-dir unless the clock cannot step back");
        }
        this.lockFile = lock;
        this.mark = m;
        this.time = testClock ? new ManualTimeSource(testClockStart) : new SystemTimeSource("leasehold-engine-timer");
        Signer s = null;
        try {
            s = backend != null || !signing.enabled() ? null : signer(signing, config, time, this.stateDir, this::serve);
        } catch (IOException | RuntimeException e) {
            close(lock, m);
            throw e;
        }
        this.signer = s == null ? null : s.signer();
        this.serviceKeys = s == null ? null : s.rotatable();
        if (serviceKeys != null) {
            rotation = new KeyRotation(serviceKeys, signer, time, rotationEvents());
        }
        if (backend != null && signing.enabled()) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8102 this lease server serves the backend {0}, whose grants "
                    + "it does not make: it signs no witnesses and answers no time requests", backend.replaceAll(
                    "password=[^&]*", "password=***"));
        }
        this.engine = backend != null ? open(backend, config, time) : new EmbeddedLeaseService(config, time, mark, signer);
        if (mark != null) {
            TimeMark.Recorded p = mark.previous();
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-2021 state directory {0}: {1}", this.stateDir, p == null
                    ? "no earlier time mark (a first start)" : "the last time mark, recorded at "
                            + Micros.toInstant(p.writtenAt()) + ", has horizon " + Micros.toInstant(p.horizon()));
        }
    }

    /** Serves {@code key} from now on, first (before the signer uses it). */
    private synchronized void serve(PublishedKey key) {
        List<PublishedKey> next = new ArrayList<>();
        next.add(key);
        for (PublishedKey k : keys) {
            if (!k.id().equals(key.id())) {
                next.add(k);
            }
        }
        keys = List.copyOf(next);
    }

    /** A signer, and its service keys when the key files are the state directory's (then it can rotate). */
    private record Signer(AuditSigner signer, ServiceKeys rotatable) {
    }

    /** What the server's key rotation logs: a rotation, or a failed look at the key files (once per problem). */
    private KeyRotation.Events rotationEvents() {
        return new KeyRotation.Events() {
            @Override
            public void rotated(KeyId from, KeyId to) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8103 this lease server rotated its signing key from {0} "
                        + "to {1} (service {2}), served and published before its first signature; the old key stays "
                        + "valid until revoked", from, to, signer.serviceId());
            }

            @Override
            public void failed(KeyId current, String problem) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8104 this lease server could not look for a rotated "
                        + "signing key in {0}: {1}; it signs on with key {2} and looks again in {3} s",
                        stateDir.resolve("signing"), problem, current, KeyRotation.CHECK_MICROS / 1_000_000);
            }
        };
    }

    /**
     * The server's signer (docs/SERVER.md, "Signing"): its key from {@code --signing-key}, or from (or generated
     * into) {@code <state dir>/signing/}, or else an ephemeral one; published into {@code --publish-keys} first, and
     * handed to {@code served} before it signs. With the state directory's keys, the service is named after the
     * first of them, so that a rotation (a newer key file linked there, adopted while the server runs) keeps it.
     */
    private static Signer signer(ServerConfig.Signing signing, EngineConfig config, TimeSource time, Path stateDir,
            Consumer<PublishedKey> served) throws IOException {
        NfsSafeFiles fs = new NfsSafeFiles();
        SecureRandom random = new SecureRandom();
        KeyFiles files = null;
        SigningKey key;
        SigningKey named;
        String origin;
        try {
            if (signing.keyFile() != null) {
                key = KeyFiles.read(signing.keyFile());
                named = key;
                origin = "the key file " + signing.keyFile();
            } else if (stateDir != null) {
                files = new KeyFiles(fs, stateDir.resolve("signing"), "lease-server", random);
                key = files.current();
                named = files.first();
                origin = "the state directory's " + files.directory();
            } else {
                key = SigningKey.generate(random);
                named = key;
                origin = null;
            }
        } catch (AuditFormatException | IOException e) {
            throw new IOException("the signing key " + (signing.keyFile() != null ? signing.keyFile()
                    : stateDir.resolve("signing")) + " cannot be used (" + e.getMessage() + "): give an Ed25519 "
                    + "private key in PEM (PKCS#8) with --signing-key, remove the damaged key file, or --no-signing",
                    e);
        }
        String serviceId = "lease-server/" + named.id();
        long radius = Micros.of(config.clockErrorBound());
        PublishedKeys published = null;
        if (signing.publishTo() != null) {
            if (!Files.isDirectory(signing.publishTo())) {
                throw new IOException("--publish-keys " + signing.publishTo() + " is not a directory: give the root "
                        + "of an existing bag store (its keys go into " + PublishedKeys.directory(signing.publishTo())
                        + ")");
            }
            published = new PublishedKeys(fs, signing.publishTo(), "lease-server");
        }
        if (files != null) {
            serveEarlier(files, key, serviceId, served);
        }
        ServiceKeys keys = new ServiceKeys(files, published, serviceId, served);
        AuditSigner signer;
        try {
            signer = keys.start(key, radius, time.nowMicros(), Micros.of(signing.linger()));
        } catch (AuditFormatException | IOException e) {
            throw new IOException("the public key " + key.id() + " cannot be published into "
                    + PublishedKeys.directory(signing.publishTo()) + " (" + e.getMessage() + "): give the root of "
                    + "a bag store this server may write to with --publish-keys", e);
        }
        if (origin == null) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8101 this lease server signs with an ephemeral key {0} "
                    + "(no --signing-key and no state directory): witnesses it signs verify only against the key it "
                    + "serves now{1}; give --state-dir or --signing-key to keep one key across restarts", key.id(),
                    signing.publishTo() != null ? " and publishes into " + PublishedKeys.directory(signing.publishTo())
                            : "");
        } else {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-8100 this lease server signs as {0} with key {1} from {2}{3}",
                    serviceId, key.id(), origin, signing.publishTo() != null ? ", published into "
                            + PublishedKeys.directory(signing.publishTo()) : "");
        }
        return new Signer(signer, files == null ? null : keys);
    }

    /**
     * Serves the keys of the state directory rotated out before this start (all but {@code current}), so that a
     * client that pinned them before a restart sees the same keys and the current one, as after a rotation. Their
     * start of validity is not kept in the state directory (the store's published keys have it): served as open. A
     * file that cannot be read is left out, with a warning.
     */
    private static void serveEarlier(KeyFiles files, SigningKey current, String serviceId,
            Consumer<PublishedKey> served) throws IOException {
        for (Path f : files.files()) {
            try {
                SigningKey k = KeyFiles.read(f);
                if (!k.id().equals(current.id())) {
                    served.accept(new PublishedKey(k.publicKey(), serviceId, Long.MIN_VALUE, Long.MAX_VALUE,
                            Long.MAX_VALUE));
                }
            } catch (AuditFormatException | IOException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-8105 this lease server does not serve the earlier "
                        + "signing key file {0}: {1}; the witnesses signed with it verify against the keys published "
                        + "into the store (leasehold verify), or restore the file from a backup", f, e.getMessage());
            }
        }
    }

    /** The backend's specification, or null for the embedded engine. */
    String backend() {
        return backend;
    }

    /** The signer of the witnesses and time answers, or null when the server signs nothing. */
    AuditSigner signer() {
        return signer;
    }

    /** The public keys the server signs with (the current one first); empty when it signs nothing. */
    List<PublishedKey> keys() {
        return keys;
    }

    private static void close(FileChannel lock, TimeMarkFiles m) {
        if (m != null) {
            m.close();
        }
        if (lock != null) {
            try {
                lock.close();
            } catch (IOException e) {
                // The lock goes with the process anyway.
            }
        }
    }

    /** The lease service served: the embedded engine, or the backend named by {@code --backend}. */
    LeaseService engine() {
        return engine;
    }

    /** The embedded engine, or null when the server serves a backend. */
    EmbeddedLeaseService embedded() {
        return engine instanceof EmbeddedLeaseService e ? e : null;
    }

    /** The backend's lease service for {@code spec}: stateless here (its state is in the backend). */
    private static LeaseService open(String spec, EngineConfig config, TimeSource time) {
        return LeaseBackends.open(spec, new LeaseBackend.Settings(config.maxLeaseDuration(), config.grace(),
                config.clockErrorBound(), config.serviceId()), time, EngineHolder.class.getClassLoader());
    }

    TimeSource time() {
        return time;
    }

    boolean testClock() {
        return testClock;
    }

    ManualTimeSource manual() {
        return (ManualTimeSource) time;
    }

    EngineConfig config() {
        return config;
    }

    /** The state directory, or null if the server keeps none. */
    Path stateDir() {
        return stateDir;
    }

    /**
     * Test clock only: a new engine with {@code newConfig}; the clock restarts at {@code start} unless null. The new
     * engine goes on recording the time mark but does not wait for the earlier engine's (a test's clock may restart
     * anywhere): it is a fresh service, not a restart.
     */
    synchronized void reset(EngineConfig newConfig, Instant start) {
        if (!testClock) {
            throw new IllegalStateException("only a server on a test clock can be reset");
        }
        LeaseService old = engine;
        if (start != null) {
            time = new ManualTimeSource(start);
        }
        config = newConfig;
        if (start != null && rotation != null) {
            rotation.close();
            rotation = new KeyRotation(serviceKeys, signer, time, rotationEvents());
        }
        engine = backend != null ? open(backend, newConfig, time)
                : new EmbeddedLeaseService(newConfig, time, mark == null ? null : new FreshStart(mark), signer);
        old.close();
    }

    /** A time mark that records into {@code mark} but reports no earlier record. */
    private record FreshStart(TimeMark mark) implements TimeMark {
        @Override
        public Recorded previous() {
            return null;
        }

        @Override
        public void record(Recorded r) throws IOException {
            mark.record(r);
        }

        @Override
        public Executor executor() {
            return mark.executor();
        }
    }

    void close() {
        engine.close();
        if (rotation != null) {
            rotation.close();
        }
        if (signer != null) {
            signer.close();
        }
        if (time instanceof SystemTimeSource s) {
            s.close();
        }
        if (mark != null) {
            mark.close();
        }
        if (lockFile != null) {
            try {
                lockFile.close();
            } catch (IOException e) {
                // The lock goes with the process anyway.
            }
        }
    }
}
