package org.leasehold.etcd;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.ReentrantLock;

import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.Op;
import io.grpc.ClientInterceptor;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * A {@link LeaseService} whose state lives in an etcd cluster: the lease service survives the loss of any minority of
 * etcd members, and any number of services (lease servers, resource adapters) with one key prefix serve the same
 * names. Agreement comes from etcd's Raft; the lease rules are the embedded engine's.
 *
 * <ul>
 * <li><b>State.</b> One key per name ({@code <prefix>n/<name>}, a {@link NameRecord}): floor, writable-from,
 *     predecessor, current holders and history. Every operation reads its names at one revision and writes them in
 *     one transaction that commits only if none of them changed since (compare on modification revisions), and
 *     starts again otherwise; a multi-name grant is one transaction.
 * <li><b>Generations</b> are etcd revisions: the revision of the transaction that granted. They strictly increase
 *     across the cluster and its restarts, and contain no clock.
 * <li><b>Deadlines</b> are absolute instants of service time (this process's {@link TimeSource}), as in the engine. A
 *     holder that did not release is taken over only once {@code now >= deadline + clockErrorBound}: services on
 *     other machines may disagree by that much about "now". The holder itself must stop at its deadline (a renewal or
 *     release after it fails), whatever etcd does: a client cut off from etcd loses its lease by its own clock.
 * <li><b>Waiting</b> is oldest first, as in the engine: by the transaction's start ({@code startedAt}), else the
 *     arrival by this service's clock, equal ages by etcd revision. A request that must wait writes one key per name
 *     ({@code <prefix>w/<name>\0<id>}) in one transaction, attached to this front's etcd lease, and is granted only
 *     when no live request of any of its names comes before it. A watch on the prefix wakes it when any of its names changes;
 *     timers on the {@link TimeSource} wake it when a blocking holder's deadline passes or its wait ends. Nothing
 *     polls.
 * <li><b>Tentative leases, wound-wait, shared and semaphore modes, re-take by the same identity, in-doubt holds</b>:
 *     as the engine decides them, on the records read. Each queued request is also filed under its holder
 *     ({@code <prefix>h/<holder>\0<id>}), so that an older request can tell whether a younger tentative holder in its
 *     way waits (it breaks it) or waits for nothing (it waits for it, and is decided again when the watch shows that
 *     holder starting to wait).
 * </ul>
 *
 * <p>Every call that needs etcd and does not get an answer within the call timeout fails with
 * {@link LeaseServiceUnavailableException}; {@link #check} answers false then (fail closed). See docs/ETCD.md for
 * what differs from the embedded engine.
 */
public final class EtcdLeaseService implements LeaseService {
    private static final System.Logger LOG = System.getLogger(EtcdLeaseService.class.getName());
    /** The longest a lease is held in doubt, as for the embedded engine. */
    public static final Duration MAX_IN_DOUBT_HOLD = Duration.ofDays(1);
    private static final long NONE = Long.MIN_VALUE;
    private static final int MAX_ROUNDS = 10_000;
    /** How long (of service time) a queued request that etcd did not answer waits before it is decided again. */
    private static final long WATCH_RETRY_MICROS = 200_000;
    /** How long (of real time) a watch that failed a second time in a row waits before it is started again. */
    static final long WATCH_RETRY_MILLIS = 200;
    /** The longest wait (of real time) before a watch that keeps failing is started again. */
    static final long WATCH_RETRY_MAX_MILLIS = 5_000;
    /** Most names whose records this service remembers (see {@link #written}). */
    private static final int WRITTEN_LIMIT = 16_384;
    /**
     * Bits of {@link #seen}: 4 Mi, 512 KiB; a listing at the start marks at most a quarter of them
     * ({@link EtcdConfig#LIST_NAMES_LIMIT}), beyond which the bits would be mostly set.
     */
    private static final int SEEN_BITS = 1 << 22;
    /** Names read per page when the service lists the names etcd has records of ({@link #scanNames}). */
    private static final int SCAN_PAGE = 10_000;
    /** Slots of {@link #holderWaitSeen}: holders sharing one only cost a decision made again. */
    private static final int HOLDER_SLOTS = 1024;

    private final EtcdConfig config;
    private final TimeSource time;
    private final EtcdStore store;
    private final String serviceId;
    private final long idHigh;
    private final AtomicLong idCounter = new AtomicLong();
    private final AtomicLong waiterCounter = new AtomicLong();
    private final long maxLease;
    private final long grace;
    private final long clockError;
    private final long availableFrom;
    private final long initialFloor;
    private final ExecutorService dispatcher;
    private final Map<String, Set<Pending>> waiting = new ConcurrentHashMap<>();
    private final Set<Pending> allWaiting = ConcurrentHashMap.newKeySet();
    /**
     * Queued requests of this service that a younger tentative holder blocks which waited for nothing when they were
     * decided (so was not broken), by that holder ({@link EtcdStore#holderPart}): decided again when the watch shows a
     * request of that holder queued.
     */
    private final Map<String, Set<Pending>> spared = new ConcurrentHashMap<>();
    /**
     * Per slot of holders (by hash, {@link #HOLDER_SLOTS}), the highest revision at which the watch reported a request of
     * one of them filed under its holder.
     */
    private final AtomicLongArray holderWaitSeen = new AtomicLongArray(HOLDER_SLOTS);
    private final TimeSource.Timer openTimer;
    /**
     * The name records this service wrote last, as written, with the revision of the write and whether the name's
     * queue was empty then; or, for a name the watch reported changed since (or a write of this service failed on),
     * only that it changed. An acquisition, renewal, upgrade, hold or release decides on the remembered record and
     * commits only if the record is still at that revision (and, for an acquisition, nobody is queued), without
     * reading it first: one round trip instead of two. A name never seen is taken to be absent, on the same terms. If
     * the guess was wrong the commit fails, and it reads and decides as usual.
     */
    private final Map<String, Written> written = new ConcurrentHashMap<>();
    /**
     * One bit per hash of a name: set for every name this service wrote, read as existing, or saw change through its
     * watch. A name whose bit is clear was never seen, so it is guessed absent; a name seen but no longer remembered in
     * {@link #written} (or sharing a bit with one) is read first, instead of guessed absent against the odds.
     */
    private final AtomicLongArray seen = new AtomicLongArray(SEEN_BITS / 64);
    private volatile boolean closed;
    /** Completed with how many names {@link #scanNames} listed, when it stops. */
    private final CompletableFuture<Integer> scan = new CompletableFuture<>();

    /**
     * A name record as this service wrote it: its encoding (null if the name changed since: only {@code revision},
     * the change's, is known), the revision of the transaction that wrote it, and whether no request was queued.
     */
    private record Written(byte[] value, long revision, boolean queueEmpty) {
    }

    /** A request on its way: tried at once, then (if it may wait) queued in etcd and tried again when woken. */
    private static final class Pending {
        final LeaseRequest request;
        final String[] names;
        final String id;
        final long requestedDeadline;
        final long leaseTime;
        final long maxWait;
        /** The requester as {@link EtcdStore#holderPart}: the key its queue entries are filed under. */
        final String holderPart;
        /** The holders this request was last found blocked by and waiting for nothing (see {@link #spared}). */
        volatile Set<String> sparedBy = Set.of();
        long since;
        long age;
        long waitUntil;
        /**
         * The etcd revision at which its queue entries were created (the second key of the queue order, after
         * {@link #age}); 0 while it is not queued, or being queued.
         */
        volatile long queuedRevision;
        final CompletableFuture<Lease> future = new CompletableFuture<>();
        final ReentrantLock lock = new ReentrantLock();
        final AtomicBoolean rerun = new AtomicBoolean();
        /** What a failed one-transaction grant read instead: the next round decides on it without reading again. */
        Map<String, EtcdStore.Read> readInstead;
        volatile boolean registered;
        volatile boolean done;
        TimeSource.Timer timeout;
        TimeSource.Timer wake;

        Pending(LeaseRequest request, String[] names, String id, long requestedDeadline, long leaseTime, long maxWait) {
            this.request = request;
            this.names = names;
            this.id = id;
            this.requestedDeadline = requestedDeadline;
            this.leaseTime = leaseTime;
            this.maxWait = maxWait;
            this.holderPart = EtcdStore.holderPart(request.holder());
        }
    }

    /** Whether a request may hold its names now, and what it changes if so. */
    private static final class Decision {
        boolean grantable = true;
        LeaseException error;
        NameRecord blockedOn;
        int queuedAhead;
        boolean blockedByQueue;
        long heldUntil = NONE;
        long wakeAt = Long.MAX_VALUE;
        final List<Object[]> wound = new ArrayList<>();
        final List<Object[]> retake = new ArrayList<>();
        /** Younger tentative holders in the way that were not broken because they wait for nothing. */
        final Set<String> spared = new HashSet<>();
        /** The revision at which holders' waits were read; 0 if none was needed. */
        long waitsRevision;

        void block(NameRecord rec, boolean byQueue) {
            grantable = false;
            blockedOn = rec;
            blockedByQueue = byQueue;
        }
    }

    /** Connects to the cluster {@code config} names, on {@code time}. The cluster need not be reachable yet. */
    public EtcdLeaseService(EtcdConfig config, TimeSource time) {
        this(config, time, List.of());
    }

    /** As {@link #EtcdLeaseService(EtcdConfig, TimeSource)}, with {@code interceptors} on every call to etcd (tests). */
    EtcdLeaseService(EtcdConfig config, TimeSource time, List<ClientInterceptor> interceptors) {
        this.config = config.validate();
        this.time = time;
        SecureRandom random = new SecureRandom();
        this.idHigh = random.nextLong() | 1L;
        this.serviceId = config.serviceId() != null ? config.serviceId()
                : "etcd-" + Long.toHexString(idHigh & 0xffff_ffffL);
        this.maxLease = Micros.of(config.maxLeaseDuration());
        this.grace = Micros.of(config.grace());
        this.clockError = Micros.of(config.clockErrorBound());
        long start = time.nowMicros();
        long quiet = Micros.of(config.quietPeriod());
        this.availableFrom = Micros.plus(start, quiet);
        this.initialFloor = Micros.plus(start, Math.min(quiet, maxLease));
        this.dispatcher = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "leasehold-etcd-" + serviceId);
            t.setDaemon(true);
            return t;
        });
        this.store = new EtcdStore(config, interceptors);
        watch();
        if (config.listNames() > 0) {
            later(() -> scanNames(null, 0));
        } else {
            scan.complete(0);
        }
        this.openTimer = quiet > 0 ? time.schedule(availableFrom, () -> later(this::wakeAll)) : null;
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-7001 etcd lease service {0} started on {1} (prefix {2}, max lease "
                + "{3}, grace {4}, clock error {5})", serviceId, config.endpoints(), config.prefix(),
                config.maxLeaseDuration(), config.grace(), config.clockErrorBound());
    }

    public EtcdConfig config() {
        return config;
    }

    @Override
    public String serviceId() {
        return serviceId;
    }

    @Override
    public Instant now() {
        return time.now();
    }

    @Override
    public Instant availableFrom() {
        return Micros.toInstant(availableFrom);
    }

    // ---------------------------------------------------------------------------------------------------- acquire

    @Override
    public Lease acquire(LeaseRequest request) throws LeaseException, InterruptedException {
        CompletableFuture<Lease> f = acquireAsync(request);
        try {
            return f.get();
        } catch (InterruptedException e) {
            if (!f.cancel(false) && !f.isCompletedExceptionally()) {
                releaseQuietly(f.getNow(null));
            }
            throw e;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof LeaseException le) {
                throw le;
            }
            throw new IllegalStateException("etcd lease service failure", e.getCause());
        }
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(LeaseRequest request) {
        Pending p;
        try {
            p = pending(request);
        } catch (LeaseException e) {
            return CompletableFuture.failedFuture(e);
        }
        p.lock.lock();
        try {
            Lease lease = attempt(p);
            if (lease != null) {
                forget(p);
                return CompletableFuture.completedFuture(lease);
            }
        } catch (LeaseException e) {
            forget(p);
            return CompletableFuture.failedFuture(e);
        } catch (RuntimeException e) {
            forget(p);
            return CompletableFuture.failedFuture(failure(e));
        } finally {
            p.lock.unlock();
        }
        p.future.whenComplete((l, t) -> {
            if (p.future.isCancelled()) {
                withdraw(p);
            }
        });
        if (p.rerun.get()) {
            later(() -> drive(p));
        }
        return p.future;
    }

    private Pending pending(LeaseRequest request) throws LeaseException {
        if (request == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease request is null");
        }
        String[] names = LeaseNames.canonical(request.names(), config.maxNamesPerRequest());
        LeaseMode mode = request.mode();
        if (mode.type() == LeaseMode.Type.SEMAPHORE && mode.permits() < 1) {
            throw new InvalidLeaseRequestException(Reason.INVALID_PERMITS, "a semaphore needs at least 1 permit; "
                    + "the request for '" + LeaseNames.printable(names[0]) + "' says " + mode.permits());
        }
        if (request.maxWait().isNegative()) {
            throw new InvalidLeaseRequestException(Reason.INVALID_WAIT, "the wait is negative (" + request.maxWait()
                    + "): use Duration.ZERO to try once, or a positive duration to wait");
        }
        long requestedDeadline = NONE;
        long leaseTime = maxLease;
        if (request.deadline() != null) {
            requestedDeadline = Micros.of(request.deadline());
        } else if (request.leaseTime() != null) {
            if (request.leaseTime().isNegative() || request.leaseTime().isZero()) {
                throw new InvalidLeaseRequestException(Reason.INVALID_LEASE_TIME, "the lease time " + request.leaseTime()
                        + " is not positive: ask for a positive duration (at most " + config.maxLeaseDuration() + ")");
            }
            leaseTime = Math.min(maxLease, Micros.of(request.leaseTime()));
        }
        Pending p = new Pending(request, names, serviceId + "-" + waiterCounter.incrementAndGet(), requestedDeadline,
                leaseTime, Micros.of(request.maxWait()));
        long now = time.nowMicros();
        if (requestedDeadline != NONE && requestedDeadline <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the requested deadline "
                    + Micros.toInstant(requestedDeadline) + " is not after the service's time " + Micros.toInstant(now)
                    + ": ask for a deadline in the future (at most " + config.maxLeaseDuration() + " ahead)");
        }
        p.since = now;
        p.age = request.startedAt() != null ? Micros.of(request.startedAt()) : now;
        long waitUntil = Micros.plus(now, p.maxWait);
        if (requestedDeadline != NONE) {
            waitUntil = Math.min(waitUntil, requestedDeadline);
        }
        p.waitUntil = waitUntil;
        return p;
    }

    /**
     * Grants {@code p} now if it can (returns the lease), queues it if it may wait (returns null), or throws why it
     * cannot be granted. Runs under {@code p.lock}.
     */
    private Lease attempt(Pending p) throws LeaseException {
        for (int round = 0; round < MAX_ROUNDS; round++) {
            ensureOpen();
            long now = time.nowMicros();
            boolean mayWait = p.waitUntil > now;
            if (now < availableFrom) {
                if (!mayWait || p.waitUntil < availableFrom) {
                    unregister(p);
                    throw unavailableUntilOpen(now);
                }
                if (!p.registered) {
                    register(p, List.of(), now);
                }
                return null;
            }
            Map<String, EtcdStore.Read> reads = p.readInstead;
            p.readInstead = null;
            boolean guessed = false;
            if (reads == null && round == 0 && !p.registered) {
                reads = guess(p);
                guessed = reads != null;
            }
            if (reads == null) {
                reads = store.read(List.of(p.names), initialFloor);
            }
            see(reads);
            // The clock is read after the snapshot: whatever the snapshot shows ended before this instant, and
            // anything that changes the names after it makes the commit fail (so the grant is at or after it). A
            // guessed snapshot (remembered records, no queue) was etcd's at their revisions, before this instant, and
            // the commit fails unless it still is.
            now = time.nowMicros();
            mayWait = p.waitUntil > now;
            if (p.registered && !queuedOnAll(p, reads)) {
                // This front's etcd lease was lost while the request waited: it queues again, at the back.
                p.registered = false;
            }
            Decision d = decide(p, reads, now);
            if (guessed && (d.error != null || !d.grantable)) {
                // Only a grant is made on a guess: whatever else it says is read first.
                continue;
            }
            if (d.error != null) {
                unregister(p);
                throw d.error;
            }
            if (d.grantable) {
                Lease lease = grant(p, reads, d, now, guessed);
                if (lease != null) {
                    p.registered = false;
                    return lease;
                }
                continue;
            }
            if (!mayWait) {
                boolean waited = p.registered;
                unregister(p);
                throw busy(p, d, now, waited);
            }
            if (!p.registered) {
                for (String n : p.names) {
                    if (reads.get(n).waiters().size() >= config.maxWaitersPerName()) {
                        throw new LeaseBusyException(n, null, "the queue of '" + LeaseNames.printable(n) + "' is full ("
                                + reads.get(n).waiters().size() + " waiting requests, the limit is "
                                + config.maxWaitersPerName() + "): retry later");
                    }
                }
                List<NameRecord> unchanged = new ArrayList<>();
                for (EtcdStore.Read r : reads.values()) {
                    unchanged.add(r.record());
                }
                if (!register(p, unchanged, now)) {
                    continue;
                }
            }
            spare(p, d);
            scheduleWake(p, d.wakeAt);
            return null;
        }
        throw new LeaseServiceUnavailableException(null, "the names " + describe(p.names) + " changed under every one of "
                + MAX_ROUNDS + " attempts to decide the request: retry");
    }

    /**
     * The snapshot an acquisition of {@code p} may be granted on in one transaction, without reading first: each name's
     * record as this service last wrote it, or a fresh record for a name it never saw, with an empty queue. Null (read
     * first) if a name changed since this service wrote it, or had a queue then, or has queued requests of this
     * service. The grant then also compares that each name's queue is empty and each record at its revision.
     */
    private Map<String, EtcdStore.Read> guess(Pending p) {
        Map<String, EtcdStore.Read> reads = new LinkedHashMap<>();
        for (String n : p.names) {
            Set<Pending> local = waiting.get(n);
            if (local != null && !local.isEmpty()) {
                return null;
            }
            Written w = written.get(n);
            if (w == null ? seen(n) : w.value() == null || !w.queueEmpty()) {
                return null;
            }
            NameRecord rec = w == null ? NameRecord.fresh(n, initialFloor) : NameRecord.decode(n, w.value(), w.revision());
            reads.put(n, new EtcdStore.Read(rec, List.of()));
        }
        return reads;
    }

    private boolean queuedOnAll(Pending p, Map<String, EtcdStore.Read> reads) {
        for (EtcdStore.Read r : reads.values()) {
            boolean found = false;
            for (WaiterRecord w : r.waiters()) {
                if (w.id().equals(p.id)) {
                    found = true;
                    break;
                }
            }
            if (!found) {
                return false;
            }
        }
        return true;
    }

    /**
     * Queues {@code p} on all its names in one transaction (so at one revision), provided {@code unchanged} are as
     * read. Returns false if they changed (decide again).
     */
    private boolean register(Pending p, List<NameRecord> unchanged, long now) throws LeaseException {
        long session = store.session();
        for (String n : p.names) {
            waiting.computeIfAbsent(n, k -> ConcurrentHashMap.newKeySet()).add(p);
        }
        allWaiting.add(p);
        WaiterRecord w = new WaiterRecord(p.id, p.request.holder(), p.request.mode(), p.request.kind(), p.age, p.since,
                p.waitUntil, List.of(p.names), 0);
        List<Cmp> compares = new ArrayList<>();
        for (NameRecord r : unchanged) {
            compares.add(store.unchanged(r));
        }
        List<Op> ops = new ArrayList<>();
        for (String n : p.names) {
            ops.add(store.putWaiter(n, w, session));
        }
        ops.add(store.putHolderWait(p.holderPart, p.id, p.waitUntil, session));
        long revision = store.commit(compares, ops, "queueing of a request");
        if (revision < 0) {
            return false;
        }
        p.queuedRevision = revision;
        p.registered = true;
        if (p.timeout == null) {
            p.timeout = time.schedule(p.waitUntil, () -> later(() -> drive(p)));
        }
        return true;
    }

    /** Removes {@code p}'s queue entries (best effort: they also vanish with this front's etcd lease). */
    private void unregister(Pending p) {
        forget(p);
        if (!p.registered) {
            return;
        }
        p.registered = false;
        List<Op> ops = new ArrayList<>();
        for (String n : p.names) {
            ops.add(store.deleteWaiter(n, p.id));
        }
        ops.add(store.deleteHolderWait(p.holderPart, p.id));
        try {
            store.commit(List.of(), ops, "withdrawal of a queued request");
        } catch (LeaseServiceUnavailableException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7006 withdrawing a queued request failed (its entries end "
                    + "with this front''s etcd lease): {0}", e.getMessage());
        }
    }

    private void forget(Pending p) {
        p.done = true;
        p.queuedRevision = 0;
        for (String n : p.names) {
            Set<Pending> s = waiting.get(n);
            if (s != null) {
                s.remove(p);
                if (s.isEmpty()) {
                    waiting.remove(n, s);
                }
            }
        }
        allWaiting.remove(p);
        unspare(p, Set.of());
        TimeSource.Timer t = p.timeout;
        if (t != null) {
            t.cancel();
        }
        t = p.wake;
        if (t != null) {
            t.cancel();
        }
    }

    private void scheduleWake(Pending p, long at) {
        TimeSource.Timer old = p.wake;
        if (old != null) {
            old.cancel();
        }
        p.wake = at == Long.MAX_VALUE || at >= p.waitUntil ? null
                : time.schedule(at, () -> later(() -> drive(p)));
    }

    /**
     * Files {@code p}, which waits, under the younger tentative holders that block it and wait for nothing
     * ({@code d.spared}), so that the watch decides it again when one of them queues a request (it may then be in a
     * cycle of waits, and is broken). A request of such a holder that the watch reported before the filing but after
     * the read of waits makes it decided again at once: the watch records the revision before it looks for filings,
     * and this looks at the revisions after filing, so one of the two sees the other.
     */
    private void spare(Pending p, Decision d) {
        unspare(p, d.spared);
        for (String h : d.spared) {
            spared.compute(h, (k, s) -> {
                Set<Pending> set = s != null ? s : ConcurrentHashMap.newKeySet();
                set.add(p);
                return set;
            });
        }
        p.sparedBy = Set.copyOf(d.spared);
        for (String h : d.spared) {
            if (holderWaitSeen.get(slot(h)) > d.waitsRevision) {
                p.rerun.set(true);
            }
        }
    }

    private static int slot(String holder) {
        return holder.hashCode() & (HOLDER_SLOTS - 1);
    }

    /** Removes {@code p} from {@link #spared} under every holder it was filed under but {@code keep}. */
    private void unspare(Pending p, Set<String> keep) {
        for (String h : p.sparedBy) {
            if (!keep.contains(h)) {
                spared.computeIfPresent(h, (k, s) -> {
                    s.remove(p);
                    return s.isEmpty() ? null : s;
                });
            }
        }
        p.sparedBy = Set.of();
    }

    /** The watch saw a request of {@code holder} queued: decide again the requests that spared that holder. */
    private void holderWaits(String holder, long revision) {
        holderWaitSeen.accumulateAndGet(slot(holder), revision, Math::max);
        Set<Pending> s = spared.get(holder);
        if (s == null) {
            return;
        }
        for (Pending p : s) {
            p.rerun.set(true);
            later(() -> drive(p));
        }
    }

    /** Decides {@code p} again, on a dispatcher thread (woken by a change, a deadline or its timeout). */
    private void drive(Pending p) {
        p.rerun.set(true);
        while (p.rerun.get()) {
            if (!p.lock.tryLock()) {
                return;
            }
            try {
                while (p.rerun.getAndSet(false)) {
                    if (p.done || p.future.isDone()) {
                        // Woken as the head of a queue after it left it (a change seen before it was forgotten): the
                        // wake belongs to the request now first in line.
                        for (String n : p.names) {
                            wakeHead(n);
                        }
                        return;
                    }
                    step(p);
                }
            } finally {
                p.lock.unlock();
            }
        }
    }

    /** One decision of a queued request; completes its future if granted or failed. Runs under {@code p.lock}. */
    private void step(Pending p) {
        if (p.done || p.future.isDone()) {
            return;
        }
        try {
            Lease lease = attempt(p);
            if (lease != null) {
                forget(p);
                if (!p.future.complete(lease)) {
                    releaseQuietly(lease);
                }
            }
        } catch (LeaseServiceUnavailableException e) {
            if (!retryLater(p, e)) {
                forget(p);
                p.future.completeExceptionally(e);
            }
        } catch (LeaseException e) {
            forget(p);
            p.future.completeExceptionally(e);
        } catch (RuntimeException e) {
            unregister(p);
            p.future.completeExceptionally(failure(e));
        }
    }

    /**
     * A queued request that etcd did not answer while it was decided again (etcd restarting, its quorum lost, this
     * process cut off) keeps its place until its wait ends: its queue entries live on with this front's etcd lease,
     * and it is decided again a little later (of service time), and at the end of its wait, when it fails if etcd
     * still does not answer. Returns false if its wait is over (the caller fails it).
     */
    private boolean retryLater(Pending p, LeaseServiceUnavailableException e) {
        long now = time.nowMicros();
        if (closed || now >= p.waitUntil) {
            return false;
        }
        LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7010 a queued request of {0} got no answer from etcd while it "
                + "was decided again; it keeps its place and is decided again: {1}", describe(p.names), e.getMessage());
        scheduleWake(p, Math.min(Micros.plus(now, WATCH_RETRY_MICROS), p.waitUntil));
        return true;
    }

    private void withdraw(Pending p) {
        p.lock.lock();
        try {
            unregister(p);
        } finally {
            p.lock.unlock();
        }
    }

    private void changed(String name, long revision) {
        see(name);
        written.computeIfPresent(name, (k, w) -> w.revision() >= revision ? w : new Written(null, revision, false));
        wakeHead(name);
    }

    /**
     * Decides again, on a dispatcher thread, the request of this service first in {@code name}'s queue order, and any
     * whose place is not known yet (being queued). Those behind the first cannot be granted before it (queues are
     * served in order), so they are not woken: when the first leaves the queue (granted, failed, withdrawn), the
     * change wakes the next, and a wake that finds its request already gone is passed on ({@link #drive}).
     */
    private void wakeHead(String name) {
        Pending head = head(name);
        Set<Pending> s = waiting.get(name);
        if (s == null) {
            return;
        }
        for (Pending p : s) {
            if (p == head || !p.done && p.queuedRevision == 0) {
                p.rerun.set(true);
                later(() -> drive(p));
            }
        }
    }

    /** This service's request first in {@code name}'s queue order (oldest, then earliest queued), or null. */
    private Pending head(String name) {
        Set<Pending> s = waiting.get(name);
        if (s == null) {
            return null;
        }
        Pending head = null;
        for (Pending p : s) {
            long revision = p.queuedRevision;
            if (p.done || revision == 0) {
                continue;
            }
            if (head == null || p.age < head.age || p.age == head.age && revision < head.queuedRevision) {
                head = p;
            }
        }
        return head;
    }

    /** Runs {@code task} on a dispatcher thread (nothing once the service is closed). */
    private void later(Runnable task) {
        try {
            dispatcher.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // Closed: waiting requests were failed by close().
        }
    }

    /** Starts the watch of the prefix (the only one this service has; a failed one is closed before). */
    private void watch() {
        store.watch(this::changed, this::holderWaits, this::watchCreated, this::watchFailed);
    }

    /**
     * Etcd confirmed the watch: every change after the revision it was created at will be delivered, so every queued
     * request is decided again now, reading what etcd holds at that revision or later. Without this, a change
     * committed after a request's last read but before etcd created the watch (which happens a round trip after it is
     * asked for, or later: at a service's start, or after a failed watch while it is replaced) would wake nobody, and
     * the request would wait out its wait although its names were free.
     */
    private void watchCreated() {
        later(this::wakeAll);
    }

    /**
     * The watch failed: watch again and decide every queued request again (a request etcd no longer keeps waiting is
     * decided now, and when the new watch is confirmed ({@link #watchCreated}) every request is decided again, reading
     * what etcd holds then, so no change is missed). The first failure in a row is answered at once, each further one
     * after {@link #retryDelayMillis} of real time (a member down, the network cut, etcd refusing the watch): while no
     * watch is confirmed, queued requests are decided again at that pace, which slows down to one attempt every
     * {@link #WATCH_RETRY_MAX_MILLIS}, so that a cluster that refuses the watch for long is not read again for every
     * queued request five times a second. Real time, not this service's: pacing calls to etcd is no lease rule, and a
     * service clock that stands still or steps back must not leave the service without a watch.
     *
     * @param failuresInARow watches that failed since etcd last confirmed one, this one included (the store counts)
     */
    private void watchFailed(int failuresInARow) {
        if (closed) {
            return;
        }
        Runnable again = () -> {
            if (!closed) {
                watch();
                wakeAll();
            }
        };
        long delay = retryDelayMillis(failuresInARow);
        if (delay == 0) {
            later(again);
        } else {
            CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS, this::later).execute(again);
        }
    }

    /**
     * How long (ms of real time) to wait before watching again after the {@code failuresInARow}-th failure in a row:
     * none after the first, then {@link #WATCH_RETRY_MILLIS}, doubling each time up to {@link #WATCH_RETRY_MAX_MILLIS}.
     */
    static long retryDelayMillis(int failuresInARow) {
        if (failuresInARow <= 1) {
            return 0;
        }
        int doublings = Math.min(failuresInARow - 2, 16);
        return Math.min(WATCH_RETRY_MAX_MILLIS, WATCH_RETRY_MILLIS << doublings);
    }

    private void wakeAll() {
        for (Pending p : allWaiting) {
            later(() -> drive(p));
        }
    }

    /**
     * Decides the first queued request of this front on each of {@code names} now, in the calling thread (after a
     * release); the requests behind it are woken when it leaves the queue ({@link #wakeHead}).
     */
    private void settle(List<String> names) {
        Set<Pending> seen = new HashSet<>();
        for (String n : names) {
            Pending p = head(n);
            if (p == null || !seen.add(p)) {
                continue;
            }
            p.lock.lock();
            try {
                step(p);
            } finally {
                p.lock.unlock();
            }
            if (p.rerun.get()) {
                // A change came while it was decided here (drive found the lock taken): decide it again.
                later(() -> drive(p));
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------- deciding

    /**
     * Ends holders that are over for everyone: a deadline (plus the clock-error bound) in the past. An unreleased full
     * lease leaves its deadline as the floor and writes wait for the grace after it.
     */
    private void clean(NameRecord rec, long now) {
        for (int i = rec.holders.size() - 1; i >= 0; i--) {
            NameRecord.Holder h = rec.holders.get(i);
            long deadline = h.deadlineAt(now, maxLease);
            if (now < Micros.plus(deadline, clockError)) {
                continue;
            }
            rec.holders.remove(i);
            if (h.kind == LeaseKind.FULL) {
                rec.raiseFloor(deadline);
                rec.raiseWritableFrom(Micros.plus(deadline, grace));
            }
            rec.ended(h, Ending.EXPIRED, deadline, NONE, null, config.historyPerName());
        }
    }

    private Decision decide(Pending p, Map<String, EtcdStore.Read> reads, long now)
            throws LeaseServiceUnavailableException {
        Decision d = new Decision();
        HolderWaits waits = new HolderWaits(p, reads, now, d);
        for (String n : p.names) {
            EtcdStore.Read r = reads.get(n);
            NameRecord rec = r.record();
            clean(rec, now);
            boolean retakes = false;
            for (NameRecord.Holder h : rec.holders) {
                if (h.holder.equals(p.request.holder())) {
                    retakes = true;
                    break;
                }
            }
            // Queues are served oldest first (by the transaction's start, else the arrival; equal ages by revision), so
            // an older request is never queued behind a younger waiter: no cycle of waits passes through a queue.
            long mine = Long.MAX_VALUE;
            for (WaiterRecord w : r.waiters()) {
                if (w.id().equals(p.id)) {
                    mine = w.createRevision();
                    if (p.registered) {
                        // The place etcd gave it, which the head of a queue is chosen by (wakeHead).
                        p.queuedRevision = mine;
                    }
                    break;
                }
            }
            int ahead = 0;
            for (WaiterRecord w : r.waiters()) {
                if (!w.id().equals(p.id) && w.waitUntil() > now && ahead(w, p.age, mine)) {
                    ahead++;
                }
            }
            if (p.registered ? ahead > 0 : !retakes && ahead > 0) {
                d.block(rec, true);
                d.queuedAhead = ahead;
                return d;
            }
            if (!admit(p, rec, d, now, waits)) {
                return d;
            }
        }
        return d;
    }

    /** Decides one name, as the engine's admission does; false (with {@code d} saying why) if it blocks or fails. */
    private boolean admit(Pending p, NameRecord rec, Decision d, long now, HolderWaits waits)
            throws LeaseServiceUnavailableException {
        LeaseMode mode = p.request.mode();
        int sameModeHolders = 0;
        List<NameRecord.Holder> blockers = new ArrayList<>();
        List<NameRecord.Holder> semaphoreHolders = new ArrayList<>();
        for (NameRecord.Holder h : rec.holders) {
            if (h.holder.equals(p.request.holder())) {
                d.retake.add(new Object[] {rec, h});
                continue;
            }
            if (mode.type() == LeaseMode.Type.SEMAPHORE && h.mode.type() == LeaseMode.Type.SEMAPHORE) {
                if (h.mode.permits() != mode.permits()) {
                    d.grantable = false;
                    d.error = new InvalidLeaseRequestException(Reason.PERMITS_MISMATCH, "'"
                            + LeaseNames.printable(rec.name) + "' is held as a semaphore of " + h.mode.permits()
                            + " permits; this request says " + mode.permits()
                            + ": every holder of a semaphore must agree on its permits");
                    return false;
                }
                sameModeHolders++;
                semaphoreHolders.add(h);
            } else if (h.mode.type() != mode.type() || mode.type() == LeaseMode.Type.EXCLUSIVE) {
                blockers.add(h);
            }
        }
        if (!semaphoreHolders.isEmpty() && sameModeHolders >= mode.permits()) {
            int needed = sameModeHolders - mode.permits() + 1;
            semaphoreHolders.sort(Comparator.comparingLong((NameRecord.Holder h) -> h.age).reversed());
            List<NameRecord.Holder> victims = new ArrayList<>();
            for (NameRecord.Holder h : semaphoreHolders) {
                if (victims.size() < needed && mayBreak(h, p, waits)) {
                    victims.add(h);
                }
            }
            if (victims.size() < needed) {
                blockBy(d, rec, semaphoreHolders, now);
                return false;
            }
            blockers.addAll(victims);
        }
        for (NameRecord.Holder h : blockers) {
            if (!mayBreak(h, p, waits)) {
                blockBy(d, rec, blockers, now);
                return false;
            }
        }
        for (NameRecord.Holder h : blockers) {
            d.wound.add(new Object[] {rec, h});
        }
        return true;
    }

    /**
     * Wound-wait, as the engine decides it: an older request breaks a younger tentative holding only while its holder
     * waits for a lease (a holder that waits for nothing cannot be in a cycle of waits, so it is waited for). A
     * younger tentative holder found not waiting is noted in the decision ({@link #spare}).
     */
    private static boolean mayBreak(NameRecord.Holder h, Pending p, HolderWaits waits)
            throws LeaseServiceUnavailableException {
        if (!mayWound(h, p)) {
            return false;
        }
        return waits.waits(h);
    }

    private static boolean mayWound(NameRecord.Holder h, Pending p) {
        return h.kind == LeaseKind.TENTATIVE && !h.holder.equals(p.request.holder())
                && h.youngerThan(p.age, p.request.holder());
    }

    /**
     * Which younger tentative holders of the names read wait for a lease: read from etcd (one transaction for all of
     * them) the first time a decision needs to know, so that a request with nobody to break reads nothing more.
     */
    private final class HolderWaits {
        private final Pending p;
        private final Map<String, EtcdStore.Read> reads;
        private final long now;
        private final Decision d;
        private Set<String> waiting;

        HolderWaits(Pending p, Map<String, EtcdStore.Read> reads, long now, Decision d) {
            this.p = p;
            this.reads = reads;
            this.now = now;
            this.d = d;
        }

        boolean waits(NameRecord.Holder h) throws LeaseServiceUnavailableException {
            if (waiting == null) {
                Set<String> candidates = new LinkedHashSet<>();
                for (EtcdStore.Read r : reads.values()) {
                    for (NameRecord.Holder other : r.record().holders) {
                        if (mayWound(other, p)) {
                            candidates.add(EtcdStore.holderPart(other.holder));
                        }
                    }
                }
                EtcdStore.Waiting w = store.waiting(candidates, now);
                waiting = w.holders();
                d.waitsRevision = w.revision();
            }
            String part = EtcdStore.holderPart(h.holder);
            if (waiting.contains(part)) {
                return true;
            }
            d.spared.add(part);
            return false;
        }
    }

    private void blockBy(Decision d, NameRecord rec, List<NameRecord.Holder> blockers, long now) {
        d.block(rec, false);
        for (NameRecord.Holder h : blockers) {
            long deadline = h.deadlineAt(now, maxLease);
            d.heldUntil = Math.max(d.heldUntil, deadline);
            d.wakeAt = Math.min(d.wakeAt, Micros.plus(deadline, clockError));
        }
    }

    /**
     * Writes the grant of {@code p} in one transaction; returns the lease, or null if a name changed meanwhile. On a
     * guessed snapshot ({@link #guess}) the transaction also requires every queue empty, and reads the names if it
     * fails ({@code p.readInstead}).
     */
    private Lease grant(Pending p, Map<String, EtcdStore.Read> reads, Decision d, long now, boolean guessed)
            throws LeaseException {
        for (Object[] w : d.wound) {
            NameRecord rec = (NameRecord) w[0];
            NameRecord.Holder h = (NameRecord.Holder) w[1];
            if (rec.holders.remove(h)) {
                rec.ended(h, Ending.BROKEN, now, NONE, null, config.historyPerName());
            }
        }
        for (Object[] w : d.retake) {
            NameRecord rec = (NameRecord) w[0];
            NameRecord.Holder h = (NameRecord.Holder) w[1];
            if (!rec.holders.remove(h)) {
                continue;
            }
            long wm = NONE;
            if (h.kind == LeaseKind.FULL) {
                // Its previous incarnation published nothing and chose its timestamps before now: at most now plus
                // the clock error, always below its deadline.
                wm = Math.max(h.floor, Math.min(h.deadlineAt(now, maxLease) - 1, Micros.plus(now, clockError)));
                rec.raiseFloor(wm);
            }
            rec.ended(h, Ending.RETAKEN, now, wm, null, config.historyPerName());
        }
        long floor = NONE;
        for (String n : p.names) {
            floor = Math.max(floor, reads.get(n).record().floor);
        }
        long max = Micros.plus(now, maxLease);
        long deadline = p.requestedDeadline != NONE ? Math.min(p.requestedDeadline, max)
                : Math.min(Micros.plus(now, p.leaseTime), max);
        Instant grantedAt = Micros.toInstant(now);
        List<Cmp> compares = new ArrayList<>();
        List<Op> ops = new ArrayList<>();
        CorrelationId[] ids = new CorrelationId[p.names.length];
        Instant[] floors = new Instant[p.names.length];
        Instant[] writable = new Instant[p.names.length];
        org.leasehold.lease.Predecessor[] preds = new org.leasehold.lease.Predecessor[p.names.length];
        byte[][] values = new byte[p.names.length][];
        for (int i = 0; i < p.names.length; i++) {
            NameRecord rec = reads.get(p.names[i]).record();
            ids[i] = new CorrelationId(idHigh, idCounter.incrementAndGet());
            floors[i] = Micros.toInstant(rec.floor);
            writable[i] = rec.writableFrom > now ? Micros.toInstant(rec.writableFrom) : grantedAt;
            preds[i] = rec.predecessor();
            NameRecord.Holder h = new NameRecord.Holder();
            h.holder = p.request.holder();
            h.mode = p.request.mode();
            h.kind = p.request.kind();
            h.age = p.age;
            h.grantedAt = now;
            h.deadline = deadline;
            h.floor = floor;
            h.generation = NameRecord.PENDING;
            h.id = ids[i];
            h.nameCount = p.names.length;
            rec.holders.add(h);
            rec.generation = NameRecord.PENDING;
            values[i] = rec.encode();
            compares.add(store.unchanged(rec));
            ops.add(store.put(rec.name, values[i]));
            if (guessed) {
                compares.add(store.noWaiters(p.names[i]));
            }
            if (p.registered) {
                compares.add(store.exists(store.waiterKey(p.names[i], p.id)));
                ops.add(store.deleteWaiter(p.names[i], p.id));
            }
        }
        if (p.registered) {
            ops.add(store.deleteHolderWait(p.holderPart, p.id));
        }
        long revision;
        if (guessed) {
            EtcdStore.Outcome o = store.commitOrRead(compares, ops, List.of(p.names), initialFloor, "grant");
            revision = o.revision();
            p.readInstead = o.reads();
        } else {
            revision = store.commit(compares, ops, "grant");
        }
        if (revision < 0) {
            for (String n : p.names) {
                stale(n, reads.get(n).record().modRevision);
            }
            return null;
        }
        List<LeaseGrant> grants = new ArrayList<>(p.names.length);
        for (int i = 0; i < p.names.length; i++) {
            grants.add(new LeaseGrant(p.names[i], revision, ids[i], floors[i], writable[i], preds[i]));
            remember(p.names[i], values[i], revision, guessed || othersQueued(reads.get(p.names[i]), p.id) == 0);
        }
        return new Lease(p.request.holder(), p.request.mode(), p.request.kind(), grantedAt, Micros.toInstant(deadline),
                grants);
    }

    private LeaseBusyException busy(Pending p, Decision d, long now, boolean waited) {
        NameRecord rec = d.blockedOn;
        String name = rec == null ? p.names[0] : rec.name;
        StringBuilder sb = new StringBuilder();
        sb.append('\'').append(LeaseNames.printable(name)).append("' is ");
        if (d.blockedByQueue || rec == null) {
            sb.append("promised to ").append(d.queuedAhead).append(" earlier waiting request(s)");
        } else {
            sb.append("held (");
            int shown = 0;
            for (NameRecord.Holder h : rec.holders) {
                if (shown++ == 3) {
                    sb.append(", ...");
                    break;
                }
                if (shown > 1) {
                    sb.append(", ");
                }
                sb.append(h.kind.name().toLowerCase(Locale.ROOT)).append(' ').append(h.mode).append(" by ")
                        .append(h.holder).append(" until ").append(Micros.toInstant(h.deadlineAt(now, maxLease)));
            }
            sb.append(')');
        }
        if (waited) {
            sb.append("; waited ").append(Duration.ofNanos((now - p.since) * 1_000L).toMillis()).append(" ms");
        } else {
            sb.append("; not waiting (zero wait)");
        }
        sb.append(": retry later, or wait longer");
        return new LeaseBusyException(name, d.heldUntil == NONE ? null : Micros.toInstant(d.heldUntil), sb.toString());
    }

    // ---------------------------------------------------------------------------------------------------- holders

    /** The holders a lease value stands for, one per name in the lease's order, as read. */
    private NameRecord.Holder[] find(Lease lease, Map<String, EtcdStore.Read> reads, long now) throws LeaseException {
        List<LeaseGrant> grants = lease.grants();
        if (grants.isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        NameRecord.Holder[] found = new NameRecord.Holder[grants.size()];
        LeaseException missing = null;
        for (int i = 0; i < grants.size(); i++) {
            LeaseGrant g = grants.get(i);
            NameRecord rec = reads.get(g.name()).record();
            NameRecord.Holder h = rec.holderOf(g.generation());
            if (h == null) {
                if (missing == null) {
                    missing = gone(lease, g, rec, now);
                }
                continue;
            }
            if (!h.holder.equals(lease.holder())) {
                throw new StaleLeaseException("'" + LeaseNames.printable(g.name()) + "' generation " + g.generation()
                        + " is held by " + h.holder + ", not by " + lease.holder()
                        + ": only the holder may renew, upgrade or release it");
            }
            found[i] = h;
        }
        if (missing != null) {
            if (missing instanceof LeaseBrokenException || missing instanceof StaleLeaseException) {
                endRemnants(lease, reads, found, now, missing instanceof LeaseBrokenException);
            }
            throw missing;
        }
        long deadline = found[0].deadlineAt(now, maxLease);
        if (deadline <= now) {
            throw expired(lease, deadline, now);
        }
        return found;
    }

    /**
     * A lease broken (or taken again) on one name still holds its other names: ends it there too, so that they are
     * free at once (best effort: otherwise they are free at its deadline).
     */
    private void endRemnants(Lease lease, Map<String, EtcdStore.Read> reads, NameRecord.Holder[] found, long now,
            boolean broken) {
        List<Cmp> compares = new ArrayList<>();
        List<Op> ops = new ArrayList<>();
        List<LeaseGrant> grants = lease.grants();
        for (int i = 0; i < grants.size(); i++) {
            NameRecord.Holder h = found[i];
            if (h == null || h.kind == LeaseKind.FULL && !broken) {
                continue;
            }
            NameRecord rec = reads.get(grants.get(i).name()).record();
            rec.holders.remove(h);
            rec.ended(h, broken ? Ending.BROKEN : Ending.RETAKEN, now, NONE, null, config.historyPerName());
            compares.add(store.unchanged(rec));
            ops.add(store.put(rec));
        }
        if (ops.isEmpty()) {
            return;
        }
        try {
            store.commit(compares, ops, "end of a broken lease's other names");
        } catch (LeaseServiceUnavailableException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7007 ending the other names of a broken lease failed (they "
                    + "are free at its deadline): {0}", e.getMessage());
        }
    }

    private LeaseException gone(Lease lease, LeaseGrant g, NameRecord rec, long now) {
        NameRecord.Entry e = rec.endingOf(g.generation());
        String what = "'" + LeaseNames.printable(g.name()) + "' generation " + g.generation();
        if (e == null) {
            if (lease.deadline() != null && Micros.of(lease.deadline()) <= now) {
                return expired(lease, Micros.of(lease.deadline()), now);
            }
            return new StaleLeaseException(what + " is not a current grant of the etcd lease service (prefix "
                    + config.prefix() + "): it was released or replaced long ago, or never granted there");
        }
        Instant at = Micros.toInstant(e.at());
        return switch (e.ending()) {
            case EXPIRED -> expired(lease, e.at(), now);
            case BROKEN -> new LeaseBrokenException(g.name(), lease.describe() + " was broken at " + at
                    + " by an older requester: nothing may be written under it; roll back and start over");
            case RELINQUISHED -> new StaleLeaseException(what + " was already released at " + at
                    + ": a lease is released once");
            case RETAKEN -> new StaleLeaseException(what + " was taken again by the same identity at " + at
                    + ": use the newer lease");
            default -> new StaleLeaseException(what + " is not a current grant of this service");
        };
    }

    private static LeaseExpiredException expired(Lease lease, long deadline, long now) {
        Instant d = Micros.toInstant(deadline);
        return new LeaseExpiredException(d, lease.describe() + " expired at " + d
                + " (service time now " + Micros.toInstant(now) + "): the next holder treats it as expired; "
                + "nothing may be written or released under it; renew earlier (about every third of the lease time)");
    }

    /** One read-decide-write cycle on a lease's names: {@code change} edits the records, or returns a result early. */
    private interface Change<T> {
        T apply(NameRecord.Holder[] holders, Map<String, EtcdStore.Read> reads, long now) throws LeaseException;
    }

    /**
     * Reads the lease's names and applies {@code change} to them in one transaction, again until nothing changed them
     * between the read and the commit. The first round decides on the records this service wrote last, if it
     * remembers them all (see {@link #written}), and skips the read: any doubt (a name written since, an error, an
     * early answer) is settled by reading.
     */
    private <T> T change(Lease lease, String what, Change<T> change,
            java.util.function.Function<Long, T> result) throws LeaseException {
        if (lease == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease is null");
        }
        Map<String, EtcdStore.Read> remembered = remembered(lease);
        for (int round = 0; round < MAX_ROUNDS; round++) {
            ensureOpen();
            boolean fromMemory = remembered != null;
            Map<String, EtcdStore.Read> reads = fromMemory ? remembered : store.read(lease.names(), initialFloor);
            remembered = null;
            see(reads);
            Map<String, Boolean> queueEmpty = new HashMap<>();
            for (EtcdStore.Read r : reads.values()) {
                Written w = written.get(r.record().name);
                queueEmpty.put(r.record().name, fromMemory ? w != null && w.queueEmpty() : r.waiters().isEmpty());
            }
            // As after a read, the clock is read after the snapshot: the remembered records are as etcd had them at
            // their revision, before this instant, and the commit fails if they are not current.
            long now = time.nowMicros();
            T early;
            try {
                NameRecord.Holder[] holders = find(lease, reads, now);
                early = change.apply(holders, reads, now);
            } catch (LeaseException e) {
                if (fromMemory) {
                    continue;
                }
                throw e;
            }
            if (early != null) {
                if (fromMemory) {
                    continue;
                }
                return early;
            }
            List<Cmp> compares = new ArrayList<>();
            List<Op> ops = new ArrayList<>();
            Map<String, byte[]> values = new LinkedHashMap<>();
            for (EtcdStore.Read r : reads.values()) {
                byte[] value = r.record().encode();
                values.put(r.record().name, value);
                compares.add(store.unchanged(r.record()));
                ops.add(store.put(r.record().name, value));
            }
            long revision = store.commit(compares, ops, what);
            if (revision >= 0) {
                for (Map.Entry<String, byte[]> v : values.entrySet()) {
                    remember(v.getKey(), v.getValue(), revision, queueEmpty.get(v.getKey()));
                }
                return result.apply(now);
            }
            for (EtcdStore.Read r : reads.values()) {
                stale(r.record().name, r.record().modRevision);
            }
        }
        throw new LeaseServiceUnavailableException(null, "the names of " + lease.describe() + " changed under every one "
                + "of " + MAX_ROUNDS + " attempts to " + what + " it: retry");
    }

    @Override
    public Lease upgrade(Lease lease, Instant deadline) throws LeaseException {
        long[] newDeadline = new long[1];
        return change(lease, "upgrade", (holders, reads, now) -> {
            NameRecord.Holder first = holders[0];
            boolean full = true;
            for (NameRecord.Holder h : holders) {
                full &= h.kind == LeaseKind.FULL;
            }
            if (full && deadline == null) {
                return new Lease(first.holder, first.mode, LeaseKind.FULL, lease.grantedAt(),
                        Micros.toInstant(first.deadlineAt(now, maxLease)), lease.grants());
            }
            newDeadline[0] = deadline == null ? first.deadline : newDeadline(first, deadline, now);
            for (NameRecord.Holder h : holders) {
                h.kind = LeaseKind.FULL;
                h.deadline = newDeadline[0];
            }
            return null;
        }, now -> new Lease(lease.holder(), lease.mode(), LeaseKind.FULL, lease.grantedAt(),
                Micros.toInstant(newDeadline[0]), lease.grants()));
    }

    private long newDeadline(NameRecord.Holder h, Instant deadline, long now) throws InvalidLeaseRequestException {
        long requested = Micros.of(deadline);
        if (requested <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the new deadline " + deadline
                    + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
        }
        return Math.max(h.deadlineAt(now, maxLease), Math.min(requested, Micros.plus(now, maxLease)));
    }

    @Override
    public Lease renew(Lease lease, Instant deadline, String metadata) throws LeaseException {
        if (deadline == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "renew needs a deadline");
        }
        checkMetadata(metadata);
        long[] newDeadline = new long[1];
        LeaseKind[] kind = new LeaseKind[1];
        return change(lease, "renew", (holders, reads, now) -> {
            newDeadline[0] = newDeadline(holders[0], deadline, now);
            kind[0] = holders[0].kind;
            List<LeaseGrant> grants = lease.grants();
            for (int i = 0; i < holders.length; i++) {
                NameRecord.Holder h = holders[i];
                h.deadline = newDeadline[0];
                NameRecord rec = reads.get(grants.get(i).name()).record();
                if (metadata != null) {
                    rec.record(new NameRecord.Entry(h.id, h.generation, h.holder, null, now, NONE, metadata),
                            config.historyPerName());
                }
            }
            return null;
        }, now -> new Lease(lease.holder(), lease.mode(), kind[0], lease.grantedAt(), Micros.toInstant(newDeadline[0]),
                lease.grants()));
    }

    @Override
    public Lease holdInDoubt(Lease lease, Instant until) throws LeaseException {
        if (until == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "holdInDoubt needs an end");
        }
        long[] deadline = new long[1];
        return change(lease, "hold in doubt", (holders, reads, now) -> {
            for (NameRecord.Holder h : holders) {
                if (h.kind != LeaseKind.FULL) {
                    throw new InvalidLeaseRequestException(Reason.NOT_FULL, lease.describe() + " is tentative: only a "
                            + "full lease (one a prepared transaction may write under) is held in doubt");
                }
            }
            long end = Micros.of(until);
            if (end <= now) {
                throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the hold's end " + until
                        + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
            }
            end = Math.min(end, Micros.plus(now, Micros.of(MAX_IN_DOUBT_HOLD)));
            for (NameRecord.Holder h : holders) {
                h.inDoubtUntil = end;
            }
            deadline[0] = holders[0].deadlineAt(now, maxLease);
            return null;
        }, now -> new Lease(lease.holder(), lease.mode(), LeaseKind.FULL, lease.grantedAt(),
                Micros.toInstant(deadline[0]), lease.grants()));
    }

    @Override
    public Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException {
        Instant ended = end(lease, watermark, metadata);
        settle(lease.names());
        return ended;
    }

    private Instant end(Lease lease, Instant watermark, String metadata) throws LeaseException {
        checkMetadata(metadata);
        return change(lease, "release", (holders, reads, now) -> {
            NameRecord.Holder first = holders[0];
            long wm = NONE;
            if (watermark != null) {
                if (first.kind == LeaseKind.TENTATIVE) {
                    throw new InvalidLeaseRequestException(Reason.WATERMARK_ON_TENTATIVE, lease.describe()
                            + " is tentative, so nothing was written under it and it publishes no watermark: "
                            + "release it with a null watermark, or upgrade before writing");
                }
                wm = Micros.of(watermark);
                long deadline = first.deadlineAt(now, maxLease);
                if (wm < first.floor || wm >= deadline) {
                    throw new InvalidLeaseRequestException(Reason.WATERMARK_OUT_OF_RANGE, "the watermark " + watermark
                            + " is outside [floor " + Micros.toInstant(first.floor) + ", deadline "
                            + Micros.toInstant(deadline) + ") of " + lease.describe()
                            + ": publish the highest timestamp written under the lease, or null if none");
                }
            }
            List<LeaseGrant> grants = lease.grants();
            for (int i = 0; i < holders.length; i++) {
                NameRecord rec = reads.get(grants.get(i).name()).record();
                rec.holders.remove(holders[i]);
                if (wm != NONE) {
                    rec.raiseFloor(wm);
                }
                rec.ended(holders[i], Ending.RELINQUISHED, now, wm, metadata, config.historyPerName());
            }
            return null;
        }, Micros::toInstant);
    }

    /**
     * Remembers {@code value} as this service's last write of {@code name}, at {@code revision}, when
     * {@code queueEmpty} no request was queued for it; unless the watch already reported a later change.
     */
    private void remember(String name, byte[] value, long revision, boolean queueEmpty) {
        if (written.size() >= WRITTEN_LIMIT && !written.containsKey(name)) {
            // Names this service no longer uses leave their records here; a name forgotten is still in {@link #seen},
            // so its next acquisition reads it first.
            written.clear();
        }
        see(name);
        written.compute(name, (k, w) -> w != null && w.revision() > revision ? w
                : new Written(value, revision, queueEmpty));
    }

    /**
     * Marks the names etcd has records of as seen ({@link #seen}), a page at a time on the dispatcher, once the watch
     * is asked for (a name written after it starts is reported by it), up to {@link EtcdConfig#listNames} (none if
     * 0): this service's first
     * acquisition of a name another service wrote then reads it (a read, no write) rather than guessing it absent, a
     * guess that would fail its transaction, a Raft proposal and a disk sync in etcd all the same. Only a cost is at
     * stake: a name missed (beyond the limit, a page that could not be read, one written as the service started) is
     * guessed absent as before, and a wrong guess is safe.
     */
    private void scanNames(String after, int scanned) {
        if (closed) {
            scan.complete(scanned);
            return;
        }
        List<String> page;
        try {
            page = store.recordNames(after, Math.min(SCAN_PAGE, config.listNames() - scanned));
        } catch (LeaseServiceUnavailableException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7011 listing the names under prefix {0} stopped after {1}: "
                    + "{2}; names not listed are guessed absent until seen", config.prefix(), scanned, e.getMessage());
            scan.complete(scanned);
            return;
        }
        for (String name : page) {
            see(name);
        }
        int total = scanned + page.size();
        if (page.size() == SCAN_PAGE && total < config.listNames()) {
            String last = page.get(page.size() - 1);
            later(() -> scanNames(last, total));
        } else {
            scan.complete(total);
        }
    }

    /** Completes with how many names the listing at the start found, when it ends (for tests). */
    CompletableFuture<Integer> namesListed() {
        return scan;
    }

    /** Remembers that {@code name} changed after {@code revision}, without knowing how: the next operation reads it. */
    private void stale(String name, long revision) {
        see(name);
        written.compute(name, (k, w) -> w != null && w.revision() > revision ? w
                : new Written(null, revision + 1, false));
    }

    private void see(String name) {
        int bit = bit(name);
        long mask = 1L << bit;
        if ((seen.get(bit >>> 6) & mask) == 0) {
            seen.getAndUpdate(bit >>> 6, v -> v | mask);
        }
    }

    private void see(Map<String, EtcdStore.Read> reads) {
        for (EtcdStore.Read r : reads.values()) {
            if (r.record().modRevision != 0 || !r.waiters().isEmpty()) {
                see(r.record().name);
            }
        }
    }

    private boolean seen(String name) {
        int bit = bit(name);
        return (seen.get(bit >>> 6) & (1L << bit)) != 0;
    }

    private static int bit(String name) {
        int h = name.hashCode() * 0x9E3779B9;
        return (h ^ (h >>> 16)) & (SEEN_BITS - 1);
    }

    /** How many requests other than {@code id} are queued in {@code r}. */
    private static int othersQueued(EtcdStore.Read r, String id) {
        int n = 0;
        for (WaiterRecord w : r.waiters()) {
            if (!w.id().equals(id)) {
                n++;
            }
        }
        return n;
    }

    /**
     * The records of {@code lease}'s names as this service last wrote them, or null unless it remembers all and each
     * has one holder (where several share a name, their grants and releases rewrite it: reading first is cheaper than
     * a commit that fails).
     */
    private Map<String, EtcdStore.Read> remembered(Lease lease) {
        Map<String, EtcdStore.Read> reads = new LinkedHashMap<>();
        for (String n : lease.names()) {
            Written w = written.get(n);
            if (w == null || w.value() == null) {
                return null;
            }
            NameRecord rec = NameRecord.decode(n, w.value(), w.revision());
            if (rec.holders.size() != 1) {
                return null;
            }
            reads.put(n, new EtcdStore.Read(rec, List.of()));
        }
        return reads;
    }

    private void releaseQuietly(Lease lease) {
        if (lease == null) {
            return;
        }
        try {
            end(lease, null, null);
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7002 releasing an unwanted grant failed: {0}", e.getMessage());
        }
    }

    private void checkMetadata(String metadata) throws InvalidLeaseRequestException {
        if (metadata != null && metadata.length() > config.maxMetadataChars()) {
            throw new InvalidLeaseRequestException(Reason.METADATA_TOO_LONG, "the metadata is " + metadata.length()
                    + " characters; the limit is " + config.maxMetadataChars()
                    + ": record where the updates are (a log name, a bucket range), not the updates");
        }
    }

    @Override
    public boolean check(String name, long generation) {
        if (name == null || closed) {
            return false;
        }
        try {
            Map<String, EtcdStore.Read> reads = store.read(List.of(name), initialFloor);
            long now = time.nowMicros();
            NameRecord.Holder h = reads.get(name).record().holderOf(generation);
            return h != null && h.kind == LeaseKind.FULL && h.deadlineAt(now, maxLease) > now;
        } catch (LeaseServiceUnavailableException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-7008 check of ''{0}'' answered false: {1}", name,
                    e.getMessage());
            return false;
        }
    }

    // ---------------------------------------------------------------------------------------------------- admin

    /**
     * {@inheritDoc}
     *
     * @throws IllegalStateException etcd did not answer (the message says which endpoints)
     */
    @Override
    public List<NameStatus> inspect(String prefix, int limit) {
        String p = prefix == null ? "" : prefix;
        List<KeyValue>[] scan;
        try {
            scan = store.scan(p);
        } catch (LeaseServiceUnavailableException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
        long now = time.nowMicros();
        Map<String, List<WaiterRecord>> queues = new HashMap<>();
        for (KeyValue kv : scan[1]) {
            String name = store.nameOf(kv.getKey());
            WaiterRecord w = WaiterRecord.decode(kv.getValue().getBytes(), kv.getCreateRevision());
            if (name != null && w.waitUntil() > now) {
                queues.computeIfAbsent(name, k -> new ArrayList<>()).add(w);
            }
        }
        Map<String, NameStatus> out = new LinkedHashMap<>();
        for (KeyValue kv : scan[0]) {
            String name = store.nameOf(kv.getKey());
            if (name == null) {
                continue;
            }
            NameRecord rec = NameRecord.decode(name, kv.getValue().getBytes(), kv.getModRevision());
            List<HolderStatus> holders = new ArrayList<>();
            long floor = rec.floor;
            long writableFrom = rec.writableFrom;
            for (NameRecord.Holder h : rec.holders) {
                long deadline = h.deadlineAt(now, maxLease);
                if (deadline > now) {
                    holders.add(new HolderStatus(h.holder, h.mode, h.kind, h.generation, h.id,
                            Micros.toInstant(h.grantedAt), Micros.toInstant(deadline),
                            h.inDoubtUntil != NONE && h.inDoubtUntil > now ? Micros.toInstant(h.inDoubtUntil) : null));
                } else if (h.kind == LeaseKind.FULL) {
                    floor = Math.max(floor, deadline);
                    writableFrom = Math.max(writableFrom, Micros.plus(deadline, grace));
                }
            }
            out.put(name, status(rec, floor, writableFrom, holders, queues.remove(name), now));
        }
        for (Map.Entry<String, List<WaiterRecord>> q : queues.entrySet()) {
            NameRecord fresh = NameRecord.fresh(q.getKey(), initialFloor);
            out.put(q.getKey(), status(fresh, fresh.floor, NONE, List.of(), q.getValue(), now));
        }
        List<NameStatus> list = new ArrayList<>(out.values());
        list.sort(Comparator.comparing(NameStatus::name));
        return list.size() > limit ? List.copyOf(list.subList(0, Math.max(0, limit))) : list;
    }

    /** The order a name's waiting requests are served in: oldest first, equal ages in the order they queued. */
    static final Comparator<WaiterRecord> QUEUE_ORDER = Comparator.comparingLong(WaiterRecord::age)
            .thenComparingLong(WaiterRecord::createRevision);

    /**
     * True if {@code w} is served before a request of age {@code age} queued at revision {@code revision}
     * ({@code Long.MAX_VALUE} for one not queued yet, which comes after every queued request of its age).
     */
    static boolean ahead(WaiterRecord w, long age, long revision) {
        return w.age() < age || w.age() == age && w.createRevision() < revision;
    }

    private static NameStatus status(NameRecord rec, long floor, long writableFrom, List<HolderStatus> holders,
            List<WaiterRecord> queue, long now) {
        List<WaiterStatus> waiters = new ArrayList<>();
        if (queue != null) {
            queue.sort(QUEUE_ORDER);
            for (WaiterRecord w : queue) {
                waiters.add(w.toApi());
            }
        }
        List<MetadataEntry> history = new ArrayList<>(rec.history.size());
        for (NameRecord.Entry e : rec.history) {
            history.add(e.toApi());
        }
        Instant w = writableFrom > now ? Micros.toInstant(writableFrom) : Micros.toInstant(now);
        return new NameStatus(rec.name, rec.generation, Micros.toInstant(floor), w, holders, waiters, history);
    }

    // ---------------------------------------------------------------------------------------------------- life

    private void ensureOpen() throws LeaseServiceUnavailableException {
        if (closed) {
            throw new LeaseServiceUnavailableException(null, "the etcd lease service " + serviceId + " is closed");
        }
    }

    private LeaseServiceUnavailableException unavailableUntilOpen(long now) {
        return new LeaseServiceUnavailableException(Micros.toInstant(availableFrom), "the etcd lease service "
                + serviceId + " grants from " + Micros.toInstant(availableFrom) + " (its quiet period; service time now "
                + Micros.toInstant(now) + "): retry then, or wait longer");
    }

    private LeaseServiceUnavailableException failure(RuntimeException e) {
        return new LeaseServiceUnavailableException(null, "the etcd lease service " + serviceId + " failed: " + e, e);
    }

    private static String describe(String[] names) {
        return names.length == 1 ? "'" + LeaseNames.printable(names[0]) + "'" : names.length + " names";
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (openTimer != null) {
            openTimer.cancel();
        }
        LeaseServiceUnavailableException failure = new LeaseServiceUnavailableException(null,
                "the etcd lease service " + serviceId + " was closed while the request waited");
        for (Pending p : new ArrayList<>(allWaiting)) {
            forget(p);
            p.future.completeExceptionally(failure);
        }
        dispatcher.shutdown();
        store.close();
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-7009 etcd lease service {0} closed", serviceId);
    }
}
