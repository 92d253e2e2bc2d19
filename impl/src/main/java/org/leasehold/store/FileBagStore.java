package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.FrameWitness;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStore;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.InvalidAppendException;
import org.leasehold.bag.InvalidLogNameException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.PayloadTooLargeException;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.SealReport;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewEncodingException;
import org.leasehold.bag.ViewState;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.config.Check;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.LeaseNames;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LogDescriptor;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;

/**
 * The bag store on a POSIX file system (local disk, NFS, any shared mount), using only the operations of
 * {@link NfsSafeFiles}. Layout: {@code <root>/<log>/<yyyy>/<MM>/<dd>/<HH>/<mm>/<ss.uuuuuu>/} per bucket, holding one
 * data file per writer ({@code <writer>.<n>.data}), and {@code prelock} and {@code lock} once sealed.
 *
 * <p>One appender (committer thread) per log does group commit; a metronome seals buckets past grace in the logs this
 * store writes to; the writer identity is guarded by a machine-local lock. Time comes from the injected
 * {@link TimeSource}. Thread-safe.
 */
public final class FileBagStore implements BagStore {
    private static final System.Logger LOG = System.getLogger(FileBagStore.class.getName());
    /** The most buckets one {@link #sealThrough} call seals. */
    public static final long MAX_SEAL_BUCKETS = 1_000_000;

    private final BagStoreConfig config;
    private final TimeSource time;
    private final SystemTimeSource ownedTime;
    private final StoreHooks hooks;
    private final NfsSafeFiles fs = new NfsSafeFiles();
    private final LocalWriterLock writerLock;
    private final String writerId;
    private final Sealer sealer;
    private final StoreContext context;
    private final Metronome metronome;
    private final BackgroundCompaction background;
    private final LogGeometry configured;
    private final Map<String, LogHandle> logs = new ConcurrentHashMap<>();
    private final Map<String, Appender> appenders = new ConcurrentHashMap<>();
    private final Object logCreation = new Object();
    private final Set<String> successorSealed = Collections.newSetFromMap(new LinkedHashMap<>(16, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > 10_000;
        }
    });
    private final SecureRandom random = new SecureRandom();
    private volatile boolean closed;

    private FileBagStore(BagStoreConfig config, TimeSource time, SystemTimeSource ownedTime, StoreHooks hooks,
            boolean reader) throws BagStoreException {
        this.config = config.validate();
        this.time = time;
        this.ownedTime = ownedTime;
        this.hooks = hooks;
        this.configured = LogGeometry.of(config);
        checkRoot(config.root());
        Path lockDir = config.localLockDir() != null ? config.localLockDir()
                : Paths.get(System.getProperty("java.io.tmpdir"), "leasehold-writers");
        // A reader (StoreReader) takes no writer identity, so it cannot shift the identities of this machine's writers.
        this.writerLock = reader ? null : LocalWriterLock.acquire(lockDir, config.host(), config.writerId());
        this.writerId = reader ? null : writerLock.writerId();
        this.sealer = new Sealer(fs, writerId, time);
        this.context = new StoreContext(this.config, writerId, fs, time, hooks, sealer);
        this.metronome = config.metronome() && !reader ? new Metronome(context, Micros.of(config.metronomeLookback()))
                : null;
        this.background = config.compactionInterval().isZero() || reader ? null
                : new BackgroundCompaction(time, Micros.of(config.compactionInterval()), this::compact);
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6001 bag store opened at {0} as writer {1} (bucket {2}, grace {3}, "
                + "max clock error {4}, flush {5})", config.root(), reader ? "none (read-only)" : writerId,
                config.bucketWidth(), config.grace(), config.maxClockError(), config.flushPolicy());
    }

    /**
     * Opens a store on {@code config.root()}, which must exist, with time from {@code time}.
     *
     * @throws StoreUnavailableException the root is missing or not a directory, or the writer identity is taken
     */
    public static FileBagStore open(BagStoreConfig config, TimeSource time) throws BagStoreException {
        return new FileBagStore(config, time, null, StoreHooks.NONE, false);
    }

    /** Opens a store on the system clock (closed with the store). */
    public static FileBagStore open(BagStoreConfig config) throws BagStoreException {
        SystemTimeSource t = new SystemTimeSource("leasehold-bag-timer");
        try {
            return new FileBagStore(config, t, t, StoreHooks.NONE, false);
        } catch (BagStoreException | RuntimeException e) {
            t.close();
            throw e;
        }
    }

    /** Opens a store with test hooks. */
    static FileBagStore open(BagStoreConfig config, TimeSource time, StoreHooks hooks) throws BagStoreException {
        return new FileBagStore(config, time, null, hooks, false);
    }

    /** What this store's parts get from it (the read-only {@link StoreReader} and its surveys too). */
    StoreContext context() {
        return context;
    }

    /** Opens a store that only reads: no writer identity, no metronome ({@link StoreReader} wraps it). */
    static FileBagStore openReader(BagStoreConfig config, TimeSource time) throws BagStoreException {
        return new FileBagStore(config, time, null, StoreHooks.NONE, true);
    }

    private void checkRoot(Path root) throws StoreUnavailableException {
        try {
            fs.list(root);
        } catch (NoSuchFileException e) {
            throw new StoreUnavailableException("the bag store's root " + root + " does not exist: create it (or mount "
                    + "the shared file system there) before opening the store", e);
        } catch (NotDirectoryException e) {
            throw new StoreUnavailableException("the bag store's root " + root + " is not a directory: point the "
                    + "store at a directory", e);
        } catch (IOException e) {
            throw new StoreUnavailableException("the bag store's root " + root + " cannot be listed: "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
    }

    // ---------------------------------------------------------------------------------------------------- accessors

    @Override
    public String writerId() {
        return writerId;
    }

    /** The configuration this store was opened with. */
    public BagStoreConfig config() {
        return config;
    }

    /** Counters since the store opened. */
    public StoreStats stats() {
        long batches = 0;
        long frames = 0;
        long bytes = 0;
        long forces = 0;
        long late = 0;
        for (Appender a : appenders.values()) {
            AppendCounters c = a.counters();
            batches += c.batches.sum();
            frames += c.frames.sum();
            bytes += c.bytes.sum();
            forces += c.forces.sum();
            late += c.lateChecks.sum();
        }
        return new StoreStats(batches, frames, bytes, forces, late, metronome == null ? 0 : metronome.sealedBuckets.sum(),
                new EnumMap<>(fs.counts()));
    }

    /** The background compaction, or null when {@link BagStoreConfig#compactionInterval()} is zero (tests). */
    BackgroundCompaction background() {
        return background;
    }

    /** Runs one metronome pass now and waits for it (tests). */
    void runMetronome() {
        if (metronome != null) {
            metronome.runNow();
        }
    }

    private void ensureOpen() throws StoreUnavailableException {
        if (closed) {
            throw context.closed();
        }
    }

    // ---------------------------------------------------------------------------------------------------- append

    @Override
    public Appended append(AppendRequest request) throws BagStoreException {
        CompletableFuture<Appended> f = appendAsync(request);
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    // The outcome is decided by the committer within one batch; wait for it, definitive either way.
                    interrupted = true;
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    if (c instanceof BagStoreException b) {
                        throw b;
                    }
                    if (c instanceof RuntimeException r) {
                        throw r;
                    }
                    throw new WriteOutcomeUnknownException("the append failed unexpectedly: " + c, c);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public CompletableFuture<Appended> appendAsync(AppendRequest request) {
        try {
            ensureOpen();
            if (request == null) {
                throw new InvalidAppendException("the append request is null: build one with AppendRequest.of(log, "
                        + "leases, payloads...)");
            }
            LogHandle h = logForWriting(request.log());
            PendingAppend p = prepare(request, h);
            hooks.afterEncode(request, p.t);
            return appender(h).submit(p);
        } catch (BagStoreException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private Appender appender(LogHandle h) throws StoreUnavailableException {
        Appender a = appenders.get(h.name());
        if (a != null) {
            return a;
        }
        synchronized (logCreation) {
            ensureOpen();
            a = appenders.get(h.name());
            if (a == null) {
                a = new Appender(context, h, metronome == null ? (log, bucket) -> { } : metronome::own);
                appenders.put(h.name(), a);
                if (metronome != null) {
                    metronome.track(h);
                }
                if (background != null) {
                    background.track(h.name());
                }
            }
            return a;
        }
    }

    /**
     * Validates the request, chooses the timestamp under the {@link WriteRule} (sealing an expired predecessor's
     * buckets first when the leases say so), and encodes the frame.
     */
    private PendingAppend prepare(AppendRequest r, LogHandle h) throws BagStoreException {
        String log = h.name();
        checkPayloads(log, r.payloads());
        checkLeases(log, r.leases());
        byte[][] names = Frames.names(r.leases());
        long size = frameSize(log, r, names);
        long now = time.nowMicros();
        WriteRule.Window window = WriteRule.window(h.geometry(), r.leases());
        window.checkWritable(log, now);
        for (long pe : window.expiredPredecessors()) {
            ensureSealedForSuccessor(h, pe);
        }
        long t = window.timestamp(log, r.timestamp(), now, config.maxClockError());
        checkSignedTime(log, r.leases(), t);
        ByteBuffer frame = Frames.encode(t, r.leases(), names, r.payloads(), (int) size);
        return new PendingAppend(frame, r.payloads().size(), t, window.deadline(), r.timestamp() != null);
    }

    /** Refuses an append without payloads, with a null one, or with one over {@code maxPayloadBytes}. */
    private void checkPayloads(String log, List<byte[]> payloads) throws BagStoreException {
        if (payloads.isEmpty()) {
            throw new InvalidAppendException("the append to log '" + log + "' carries no message: give at least one "
                    + "payload (an empty byte array is a valid message)");
        }
        for (int i = 0; i < payloads.size(); i++) {
            byte[] p = payloads.get(i);
            if (p == null) {
                throw new InvalidAppendException("payload " + i + " of the append to log '" + log + "' is null: give a "
                        + "byte array (empty is fine)");
            }
            if (p.length > config.maxPayloadBytes()) {
                throw new PayloadTooLargeException(p.length, config.maxPayloadBytes(), "payload " + i + " of the append to "
                        + "log '" + log + "' is " + p.length + " bytes; the limit is " + config.maxPayloadBytes()
                        + " (maxPayloadBytes): nothing was written. Split the message, or store large data elsewhere "
                        + "and append a reference");
            }
        }
    }

    /** Refuses too many leases, a null, invalid or repeated lease, or a witness over the limit. */
    private static void checkLeases(String log, List<LeaseStamp> leases) throws InvalidAppendException {
        if (leases.size() > Frames.MAX_LEASES) {
            throw new InvalidAppendException("the append to log '" + log + "' names " + leases.size() + " leases; the "
                    + "limit is " + Frames.MAX_LEASES);
        }
        Set<String> seen = new HashSet<>();
        for (LeaseStamp l : leases) {
            if (l == null) {
                throw new InvalidAppendException("the append to log '" + log + "' has a null lease stamp");
            }
            try {
                LeaseNames.check(l.name());
            } catch (InvalidLeaseRequestException e) {
                throw new InvalidAppendException("the append to log '" + log + "' names an invalid lease: "
                        + e.getMessage());
            }
            if (!seen.add(l.name())) {
                throw new InvalidAppendException("the append to log '" + log + "' names lease '"
                        + LeaseNames.printable(l.name()) + "' twice: give each lease once");
            }
            if (l.witnessLength() > Frames.MAX_WITNESS) {
                throw new InvalidAppendException("the witness of lease '" + LeaseNames.printable(l.name()) + "' is "
                        + l.witnessLength() + " bytes; the limit is " + Frames.MAX_WITNESS);
            }
        }
    }

    /**
     * Refuses a witness that is not a frame witness of its lease (name and generation), and a timestamp further than
     * {@code signedTimeBound} from the latest signed time the witnesses carry. Leases without a witness are not
     * checked here (the offline verifier reports them).
     */
    private void checkSignedTime(String log, List<LeaseStamp> leases, long t) throws BagStoreException {
        long latest = Long.MIN_VALUE;
        String from = null;
        for (LeaseStamp l : leases) {
            if (l.witnessLength() == 0) {
                continue;
            }
            // Only what this check needs is read (no proof is parsed): the verifier checks the rest.
            FrameWitness.Summary fw;
            try {
                fw = FrameWitness.summarize(l.witness());
            } catch (AuditFormatException e) {
                throw new InvalidAppendException("the witness of lease '" + LeaseNames.printable(l.name())
                        + "' in the append to log '" + log + "' is not a frame witness: " + e.getMessage()
                        + ". Pass the stamps LeaseStamp.of(lease) makes from the lease the service returned");
            }
            if (!fw.name().equals(l.name()) || fw.generation() != l.generation()) {
                throw new InvalidAppendException("the witness given with lease '" + LeaseNames.printable(l.name())
                        + "' generation " + l.generation() + " in the append to log '" + log + "' is the witness of '"
                        + LeaseNames.printable(fw.name()) + "' generation " + fw.generation()
                        + ": pass the stamps LeaseStamp.of(lease) makes from the lease the service returned");
            }
            if (fw.latestSignedTime() > latest) {
                latest = fw.latestSignedTime();
                from = l.name();
            }
        }
        if (from == null) {
            return;
        }
        long bound = Micros.of(config.signedTimeBound());
        long off = t - latest;
        if (Math.abs(off) > bound) {
            throw new TimestampOutOfRangeException(TimestampOutOfRangeException.Reason.FAR_FROM_SIGNED_TIME,
                    Micros.toInstant(t), null, "the timestamp " + Micros.toInstant(t) + " of the append to log '" + log
                    + "' is " + Duration.ofNanos(Math.abs(off) * 1_000L) + (off > 0 ? " after" : " before")
                    + " the latest signed time its leases carry (" + Micros.toInstant(latest) + ", in the witness of '"
                    + LeaseNames.printable(from) + "'); the bound is " + config.signedTimeBound()
                    + " (signedTimeBound): nothing was written. This clock is off from the lease service's, or the "
                    + "signed time is stale: correct the clock, or renew the lease (or attach a fresh signed time) "
                    + "before writing");
        }
    }

    /** The encoded size of the append's frame; refused over {@code maxFrameBytes}. */
    private long frameSize(String log, AppendRequest r, byte[][] names) throws PayloadTooLargeException {
        long size = Frames.size(r.leases(), names, r.payloads());
        if (size > config.maxFrameBytes()) {
            throw new PayloadTooLargeException(size, config.maxFrameBytes(), "the append to log '" + log + "' encodes to "
                    + size + " bytes; the limit for one append is " + config.maxFrameBytes() + " (maxFrameBytes): "
                    + "nothing was written. Append fewer messages at once");
        }
        return size;
    }

    // ---------------------------------------------------------------------------------------------------- logs

    /**
     * Creates {@code log} (its directory and descriptor, with this store's geometry) unless it exists, so that it can be
     * read before anything is appended to it: a reader then gets an empty stream, not {@link UnknownLogException}.
     *
     * @throws InvalidLogNameException   the name is not acceptable
     * @throws StoreUnavailableException the log could not be created (the message says why)
     */
    public void createLog(String log) throws BagStoreException {
        logForWriting(log);
    }

    private LogHandle logForWriting(String name) throws BagStoreException {
        LogHandle h = logs.get(name == null ? "" : name);
        if (h != null) {
            return h;
        }
        checkLogName(name);
        synchronized (logCreation) {
            ensureOpen();
            h = logs.get(name);
            if (h == null) {
                h = createOrLoad(name);
                logs.put(name, h);
            }
            return h;
        }
    }

    LogHandle logForReading(String name) throws BagStoreException {
        LogHandle h = logs.get(name == null ? "" : name);
        if (h != null) {
            return h;
        }
        checkLogName(name);
        Path dir = config.root().resolve(name);
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (NoSuchFileException e) {
            throw new UnknownLogException(name, "log '" + name + "' does not exist under " + config.root()
                    + ": nothing was ever appended to it or sealed in it. Check the name");
        } catch (IOException e) {
            throw new StoreUnavailableException("cannot list log '" + name + "' under " + config.root() + ": "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        if (!names.contains(Names.DESCRIPTOR)) {
            // Created but never written: a writer links the descriptor before its first bucket.
            return new LogHandle(name, dir, configured);
        }
        h = new LogHandle(name, dir, readDescriptor(name, dir));
        logs.putIfAbsent(name, h);
        return h;
    }

    private static void checkLogName(String name) throws InvalidLogNameException {
        String problem = Names.logNameProblem(name);
        if (problem != null) {
            throw new InvalidLogNameException(name, "the log name '" + (name == null ? "null" : LeaseNames.printable(name))
                    + "' " + problem);
        }
    }

    private LogHandle createOrLoad(String name) throws BagStoreException {
        Path dir = config.root().resolve(name);
        try {
            fs.createDirectory(dir);
            List<String> names = fs.list(dir);
            if (!names.contains(Names.DESCRIPTOR)) {
                Path prepared = dir.resolve(Names.DESCRIPTOR_PREPARED_PREFIX + writerId + "."
                        + HexFormat.of().toHexDigits(random.nextLong()));
                LogGeometry g = configured;
                byte[] bytes = new LogDescriptor(g.widthMicros(), g.graceMicros(), g.errorMicros()).encode();
                try (FileChannel ch = fs.createNew(prepared)) {
                    Sealer.writeFully(ch, ByteBuffer.wrap(bytes), 0);
                    ch.force(true);
                }
                fs.link(dir.resolve(Names.DESCRIPTOR), prepared);
            }
        } catch (NoSuchFileException e) {
            throw new StoreUnavailableException("cannot create log '" + name + "': the bag store's root " + config.root()
                    + " does not exist (any more); create it or mount the shared file system there", e);
        } catch (IOException e) {
            throw new StoreUnavailableException("cannot create log '" + name + "' under " + config.root() + ": "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        LogGeometry g = readDescriptor(name, dir);
        if (!g.equals(configured)) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6003 log ''{0}'' was created with bucket width {1} µs, grace "
                    + "{2} µs and max clock error {3} µs; this store is configured otherwise and uses the log''s values "
                    + "(writers and sealers of one log must agree)", name, g.widthMicros(), g.graceMicros(),
                    g.errorMicros());
        }
        return new LogHandle(name, dir, g);
    }

    private LogGeometry readDescriptor(String name, Path dir) throws BagStoreException {
        byte[] bytes;
        try {
            bytes = Sealer.readSmall(fs, dir.resolve(Names.DESCRIPTOR), 4096);
        } catch (IOException e) {
            throw new StoreUnavailableException("cannot read the descriptor of log '" + name + "' under " + dir + ": "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        try {
            LogDescriptor d = LogDescriptor.parse(bytes);
            return new LogGeometry(d.widthMicros(), d.graceMicros(), d.errorMicros());
        } catch (FormatException e) {
            throw new CorruptRecordException(name, "", Names.DESCRIPTOR, e.offset(), "the descriptor of log '" + name
                    + "' is corrupt: " + e.getMessage() + "; restore it from a replica or backup (it records the log's "
                    + "bucket width, grace and clock error)");
        }
    }

    // ---------------------------------------------------------------------------------------------------- read

    @Override
    public MessageStream read(ReadRequest request) throws BagStoreException {
        ensureOpen();
        if (request == null) {
            throw new InvalidLogNameException(null, "the read request is null: use ReadRequest.all(log)");
        }
        return new LogReader(context, logForReading(request.log()), request);
    }

    /**
     * The state of {@code definition}'s view of {@code log} now: the latest readable snapshot with every message after
     * its boundary applied, unsealed (tentative) ones included; see {@link #view(String, ViewDefinition, boolean)}.
     */
    public <S> ViewState<S> view(String log, ViewDefinition<S> definition) throws BagStoreException {
        return view(log, definition, true);
    }

    /**
     * The state of {@code definition}'s view of {@code log}: the latest readable snapshot (docs/FORMAT.md, "View
     * snapshot file"; a damaged one is logged and an older one, or the beginning of the log, used instead) with the
     * messages after its boundary applied, read as {@link #read} reads them, buckets not sealed yet included if
     * {@code includeUnsealed} (call it under a held lease for the current state).
     *
     * @throws UnknownLogException the log does not exist
     */
    public <S> ViewState<S> view(String log, ViewDefinition<S> definition, boolean includeUnsealed)
            throws BagStoreException {
        ensureOpen();
        return new Views(context, this).read(logForReading(log), definition, includeUnsealed);
    }

    /**
     * Publishes a snapshot of {@code definition}'s view of {@code log} at the latest sealed boundary at or before
     * {@code through}: a bucket boundary whose previous bucket ended more than grace plus clock error ago, every
     * bucket before it sealed (this call seals those that are not). Same messages, same bytes: any process may call
     * it, the first to link its file publishes, the others check they wrote the same bytes.
     *
     * @throws ViewEncodingException     another builder published different bytes: the definition is not deterministic
     * @throws StoreUnavailableException the file system failed; published snapshots stay valid
     */
    public <S> ViewSnapshotReport buildView(String log, ViewDefinition<S> definition, Instant through)
            throws BagStoreException {
        return buildView(log, definition, through, ViewProgress.NONE);
    }

    /**
     * {@link #buildView(String, ViewDefinition, Instant)}, reporting to {@code progress} how far the fold has come.
     *
     * @throws ViewEncodingException     another builder published different bytes: the definition is not deterministic
     * @throws StoreUnavailableException the file system failed; published snapshots stay valid
     */
    public <S> ViewSnapshotReport buildView(String log, ViewDefinition<S> definition, Instant through,
            ViewProgress progress) throws BagStoreException {
        ensureOpen();
        return new Views(context, this).build(logForReading(log), definition, LogGeometry.micros(through), progress);
    }

    /**
     * Checks {@code definition}'s name and version as {@link #view} and {@link #buildView} do, for a caller that keeps
     * definitions to build later.
     *
     * @throws IllegalArgumentException the name is not acceptable, or there is no version; the message says why
     */
    public static void checkView(ViewDefinition<?> definition) {
        Views.checkName(definition);
    }

    // ---------------------------------------------------------------------------------------------------- sealing

    /**
     * {@inheritDoc}
     *
     * <p>One call seals at most {@link #MAX_SEAL_BUCKETS} buckets (about 11.6 days of 1 s buckets), so that it returns
     * in bounded time and its report in bounded memory; seal a longer range in several calls, oldest first.
     *
     * @throws IllegalArgumentException {@code from} or {@code through} is null, or the range spans more than
     *                                  {@link #MAX_SEAL_BUCKETS} buckets (nothing was sealed)
     */
    @Override
    public SealReport sealThrough(String log, Instant from, Instant through) throws BagStoreException {
        ensureOpen();
        if (from == null || through == null) {
            throw new IllegalArgumentException("sealThrough needs both ends of the range; got from=" + from + ", through="
                    + through);
        }
        return sealRange(logForWriting(log), LogGeometry.micros(from), LogGeometry.micros(through));
    }

    private SealReport sealRange(LogHandle h, long from, long through) throws BagStoreException {
        LogGeometry g = h.geometry();
        if (through <= from) {
            return new SealReport(h.name(), List.of());
        }
        long first = g.bucketOf(Math.max(from, LogGeometry.MIN_MICROS));
        long last = g.bucketOf(Math.min(through, LogGeometry.MAX_MICROS) - 1);
        long count = (last - first) / g.widthMicros() + 1;
        if (count > MAX_SEAL_BUCKETS) {
            throw new IllegalArgumentException("sealing " + count + " buckets of log '" + h.name() + "' in one call ("
                    + Micros.toInstant(first) + " to " + Micros.toInstant(g.end(last)) + ") is refused: one call seals "
                    + "at most " + MAX_SEAL_BUCKETS + " buckets (" + Duration.ofNanos(MAX_SEAL_BUCKETS * g.widthMicros()
                    * 1_000L) + " of this log's " + Duration.ofNanos(g.widthMicros() * 1_000L) + " buckets). Nothing "
                    + "was sealed: seal the range in several calls of at most that many buckets each, oldest first");
        }
        long now = time.nowMicros();
        if (now < g.dueAt(last)) {
            throw new BucketNotDueException(Micros.toInstant(g.dueAt(last)), "bucket " + h.bucketPath(last) + " of log '"
                    + h.name() + "' ends at " + Micros.toInstant(g.end(last)) + " and may be sealed only from "
                    + Micros.toInstant(g.dueAt(last)) + " (end plus grace); this clock reads " + Micros.toInstant(now)
                    + ". Nothing was sealed: retry then");
        }
        List<SealReport.BucketSeal> out = new ArrayList<>();
        for (long b = first; b <= last; b += g.widthMicros()) {
            Sealer.Result r = sealer.seal(h, b, true, null);
            out.add(new SealReport.BucketSeal(Micros.toInstant(b), h.bucketPath(b), r.outcome(), r.lock().files().size(),
                    r.lock().totalBytes()));
        }
        return new SealReport(h.name(), out);
    }

    @Override
    public Instant successorWritableFrom(String log, Instant predecessorDeadline) throws BagStoreException {
        ensureOpen();
        return Micros.toInstant(WriteRule.successorWritableFrom(logForWriting(log).geometry(),
                LogGeometry.micros(predecessorDeadline)));
    }

    @Override
    public SealReport sealForSuccessor(String log, Instant predecessorDeadline) throws BagStoreException {
        ensureOpen();
        LogHandle h = logForWriting(log);
        return sealForSuccessor(h, LogGeometry.micros(predecessorDeadline));
    }

    private SealReport sealForSuccessor(LogHandle h, long deadline) throws BagStoreException {
        long from = WriteRule.successorSealFrom(h.geometry(), deadline, Micros.of(config.maxLeaseDuration()));
        SealReport r = sealRange(h, from, deadline);
        synchronized (successorSealed) {
            successorSealed.add(h.name() + "@" + deadline);
        }
        return r;
    }

    private void ensureSealedForSuccessor(LogHandle h, long deadline) throws BagStoreException {
        synchronized (successorSealed) {
            if (successorSealed.contains(h.name() + "@" + deadline)) {
                return;
            }
        }
        SealReport r = sealForSuccessor(h, deadline);
        LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6004 sealed {0} buckets of log ''{1}'' for the successor of a lease "
                + "that expired at {2}", r.buckets().size(), h.name(), Micros.toInstant(deadline));
    }

    // ---------------------------------------------------------------------------------------------------- compaction

    /**
     * Compacts {@code log} with the configured {@link BagStoreConfig#compactionHorizon() compactionHorizon}: see
     * {@link #compact(String, Duration)}.
     */
    public CompactionReport compact(String log) throws BagStoreException {
        return compact(log, config.compactionHorizon());
    }

    /**
     * Merges the buckets of {@code log} that ended more than {@code horizon} ago into segment files, one per
     * {@code segmentSpan} (docs/FORMAT.md, "Segment file"), and publishes each by linking it into place, so that reads
     * of those ranges open one file instead of a directory per bucket. Only sealed buckets that read without any
     * problem are copied; the others stay listed in the segment as read from their directories, so every read returns
     * exactly what it returned before. Call this from any process, as often as wanted (ranges already published are
     * left alone, and two compactors racing publish one segment per range); with
     * {@link BagStoreConfig#compactionInterval() compactionInterval} the store also calls it in the background for the
     * logs it writes to.
     *
     * <p>With {@link BagStoreConfig#removeCompactedBuckets() removeCompactedBuckets} (off by default), it then
     * retires buckets: it marks each published segment the first time it sees it, and once
     * {@link BagStoreConfig#retentionDelay() retentionDelay} plus the log's clock error has passed since the mark, it
     * verifies the whole segment and unlinks the files of the buckets it holds whose lock files agree with it. Reads
     * return the same messages from the segment. Otherwise nothing is deleted.
     *
     * @throws IllegalArgumentException  the horizon is not longer than the log's grace plus its clock error
     * @throws UnknownLogException       the log does not exist
     * @throws StoreUnavailableException the file system failed; what was published stays published: run it again
     */
    public CompactionReport compact(String log, Duration horizon) throws BagStoreException {
        return compact(log, horizon, CompactionProgress.NONE);
    }

    /** {@link #compact(String, Duration)}, telling {@code progress} how far it got. */
    public CompactionReport compact(String log, Duration horizon, CompactionProgress progress) throws BagStoreException {
        ensureOpen();
        Check.positive("horizon", horizon);
        LogHandle h = logForReading(log);
        LogGeometry g = h.geometry();
        long min = g.graceMicros() + g.errorMicros();
        if (Micros.of(horizon) <= min) {
            throw Check.invalid("horizon", horizon, "use more than the grace plus clock error of log '" + log + "' ("
                    + Duration.ofNanos(min * 1_000L) + "): a younger bucket may still be written to or sealed");
        }
        CompactionReport r = new Compactor(context).compact(h, time.nowMicros() - Micros.of(horizon),
                Micros.of(config.segmentSpan()), progress);
        if (!config.removeCompactedBuckets()) {
            return r;
        }
        return r.withBucketsRemoved(new Retention(context).run(h, time::nowMicros));
    }

    // ---------------------------------------------------------------------------------------------------- close

    @Override
    public void close() {
        synchronized (logCreation) {
            if (closed) {
                return;
            }
            closed = true;
        }
        if (background != null) {
            background.close();
        }
        if (metronome != null) {
            metronome.close();
        }
        for (Appender a : appenders.values()) {
            a.close();
        }
        if (writerLock != null) {
            writerLock.close();
        }
        if (ownedTime != null) {
            ownedTime.close();
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6002 bag store at {0} (writer {1}) closed", config.root(), writerId);
    }
}
