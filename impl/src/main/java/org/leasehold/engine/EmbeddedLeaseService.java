package org.leasehold.engine;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;
import org.leasehold.time.TimeSource;

/**
 * The embedded lease engine: an in-memory {@link LeaseService} for one JVM.
 *
 * <p>Names are spread over lock stripes (shards) by hash; an operation locks only the shards of its names, in
 * ascending order, so there is no global lock on the grant path and multi-name operations cannot deadlock. Time comes
 * from the injected {@link TimeSource}: expiry is judged against it on every access, and timers on it wake waiters
 * when a blocking holder's deadline passes, so nothing polls.
 *
 * <p><b>Restarts.</b> Without a {@link TimeMark} nothing is persisted: after a start the engine grants nothing for
 * its quiet period, and its time base {@code B} is its start time. With one, it records every
 * {@value #MARK_INTERVAL_SECONDS} s a horizon {@code H = max(now, B) + }{@value #MARK_AHEAD_SECONDS} s and a bound
 * {@code H + maxLease}, and grants, renews and upgrades nothing at or after the horizon of its last durable record, so
 * the record is always above the time part of every generation and above every deadline and floor it granted. The
 * next incarnation takes {@code B = max(start, H)}: it grants from {@code B + quietPeriod}, new names start with the
 * floor {@code max(B + min(quietPeriod, maxLease), min(bound, B + quietPeriod))}, and generations from {@code B}. A
 * clock that stepped back across the restart therefore delays the first grant; it never takes a generation or a floor
 * back.
 *
 * <p><b>Generations.</b> A name's first generation is {@code max(base, forgotten) + offset(name) + 1}: {@code base =
 * (B in ms) << 20}; {@code forgotten} is the highest generation its stripe forgot (0 if none); {@code offset} is in
 * [0, 2^19), a SipHash-2-4 of the name under a key drawn at random at each start, so one name's generation says
 * nothing of another's. Each grant adds 1. Per name they strictly increase: within a life by the counter; after the
 * name is forgotten because its stripe's bound is at least its last generation; across a restart because the next
 * base is above every generation of this life: a generation is at most {@code base + 2^19 + g + f}, where {@code g}
 * counts the grants of the life (fewer than 2^20 per ms of it: a grant takes far longer than a nanosecond) and
 * {@code f < 2^19} per sweep that forgot names (sweeps are at least 1 s apart), so its time part ({@code gen >> 20})
 * stays below the clock of its last grant plus 1 ms, below the horizon, and below the next {@code B}.
 *
 * <p><b>Parts.</b> This class is the coordinator: it checks arguments, takes the locks and calls its parts, each a
 * package-private class with one purpose:
 * <ul>
 * <li>{@link Stripes}: the lock stripes, each holding the states of its names;</li>
 * <li>{@link Gate}: whether the engine grants now (quiet period, fence, time mark), and the time mark's records;</li>
 * <li>{@link Admission}: whether a request may hold its names now (modes, semaphore permits, queue order);</li>
 * <li>{@link WoundWait}: the younger tentative holdings an older requester breaks, and their ending;</li>
 * <li>{@link WaitQueues}: the FIFO queues of waiting requests, and granting them as names become free;</li>
 * <li>{@link Timers}: deadlines, and the timers that wake a queue when a blocking holder's deadline passes;</li>
 * <li>{@link Fencing}: generations, floors, watermarks and writable-from, so each writer is above every earlier one;</li>
 * <li>{@link Holders}: the live holding a lease value stands for, or what became of it;</li>
 * <li>{@link InDoubt}: leases held for transactions in doubt, and reinstated after a restart;</li>
 * <li>{@link Sweep}: forgetting idle names, their floor and generation kept as their shard's bound.</li>
 * </ul>
 *
 * <p><b>Locking.</b> One rule: a shard's lock guards everything of its names ({@link NameState}: holders, waiters,
 * floors, generation, history, wake timer) and the shard's own counters and bounds; a {@link Holding} changes its
 * kind and deadline only under the locks of all its names' shards, and leaves ACTIVE once (a compare-and-set) under
 * at least one of them; a {@link Waiter}'s times are set under the locks of all its shards, and its outcome is claimed
 * once ({@link Waiter#finish}). An operation on several names locks their shards in ascending index order
 * ({@link Stripes#lockAll}) and releases them in reverse, so operations cannot deadlock; no shard lock is held while a
 * future is completed or a queue is dispatched; timers are scheduled under locks, and their callbacks run later and
 * take the locks they need. The state of the {@link Gate}
 * (closed, fence, horizon) is volatile and read without a lock; the time mark is recorded on the mark's executor.
 */
public final class EmbeddedLeaseService implements LeaseService {
    private static final System.Logger LOG = System.getLogger(EmbeddedLeaseService.class.getName());
    /**
     * The longest a lease is held in doubt ({@link #holdInDoubt}): no more than a holder could keep it by renewing,
     * and long enough for any server's restart and its transaction manager's recovery.
     */
    public static final Duration MAX_IN_DOUBT_HOLD = Duration.ofDays(1);
    /** How often the time mark is recorded. */
    public static final long MARK_INTERVAL_SECONDS = 2;
    /** How far ahead of the clock (or of the time base) each record puts the horizon. */
    public static final long MARK_AHEAD_SECONDS = 6;
    /** Offsets of first generations are below this: half of a millisecond's 2^20 generations. */
    static final long OFFSET_RANGE = 1L << 19;

    private final EngineConfig config;
    private final TimeSource time;
    private final String serviceId;
    private final long maxLease;
    private final Gate gate;
    private final Stripes stripes;
    private final Fencing fencing;
    private final Admission admission;
    private final WoundWait woundWait;
    private final Waits waits;
    private final Timers timers;
    private final WaitQueues queues;
    private final Holders holders;
    private final InDoubt inDoubt;
    private final Sweep sweep;
    private final AuditSigner signer;
    private final Witnesses witnesses;

    /**
     * Starts an engine with {@code config} on {@code time} that persists nothing; it grants from {@code now + quiet
     * period}.
     */
    public EmbeddedLeaseService(EngineConfig config, TimeSource time) {
        this(config, time, null);
    }

    /**
     * Starts an engine with {@code config} on {@code time} that records its time mark in {@code mark} (null: none).
     * It grants from {@code max(now, previous horizon) + quiet period}, and only while its last record's horizon is
     * ahead of the clock. The caller closes {@code mark} after the engine.
     */
    public EmbeddedLeaseService(EngineConfig config, TimeSource time, TimeMark mark) {
        this(config, time, mark, null);
    }

    /**
     * Starts an engine like {@link #EmbeddedLeaseService(EngineConfig, TimeSource, TimeMark)} that gives every grant,
     * renewal, upgrade and reinstatement a witness per name signed by {@code signer} (null: none), and answers time
     * requests ({@link #signedTime}). A lease is returned at once; its witnesses' proofs follow when their batch is
     * signed. The caller closes {@code signer} after the engine.
     */
    public EmbeddedLeaseService(EngineConfig config, TimeSource time, TimeMark mark, AuditSigner signer) {
        this.config = config.validate();
        this.signer = signer;
        this.witnesses = new Witnesses(signer);
        this.time = time;
        SecureRandom random = new SecureRandom();
        long idHigh = random.nextLong();
        GenerationOffsets offsets = new GenerationOffsets(random.nextLong(), random.nextLong());
        this.serviceId = config.serviceId() != null ? config.serviceId()
                : "embedded-" + Long.toHexString(idHigh & 0xffff_ffffL);
        this.maxLease = Micros.of(config.maxLeaseDuration());
        long quiet = Micros.of(config.effectiveQuietPeriod());
        this.gate = new Gate(time, serviceId, maxLease, quiet, mark);
        TimeMark.Recorded previous = gate.previousMark();
        this.stripes = new Stripes(config.shards(), Fencing.generationBase(gate.timeBase()),
                Fencing.initialFloor(gate.timeBase(), quiet, maxLease, gate.availableFrom(),
                        previous == null ? Long.MIN_VALUE : previous.bound()), offsets);
        this.waits = new Waits();
        this.fencing = new Fencing(stripes, idHigh, Micros.of(config.grace()), Micros.of(config.clockErrorBound()),
                config.historyPerName(), waits);
        this.woundWait = new WoundWait(fencing, waits);
        this.admission = new Admission(fencing, woundWait, config.maxNamesPerRequest(), maxLease,
                config.maxLeaseDuration());
        this.timers = new Timers(time, stripes, gate, maxLease, this::dispatch);
        this.queues = new WaitQueues(time, stripes, gate, admission, woundWait, fencing, waits, timers,
                config.maxWaitersPerName(), this::releaseQuietly,
                (l, principal) -> witnesses.stamp(l, principal, WitnessEvent.GRANT, Micros.of(l.grantedAt())));
        this.holders = new Holders(time, stripes, serviceId);
        this.inDoubt = new InDoubt(time, stripes, gate, fencing, holders, maxLease, serviceId);
        this.sweep = new Sweep(time, stripes, fencing, gate, Micros.of(config.idleRetention()));
        sweep.start(gate.startedAt());
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1001 lease service {0} started: quiet period until {1} "
                + "(max lease {2}, grace {3}, {4} shards)", serviceId, gate.availableFromInstant(),
                config.maxLeaseDuration(), config.grace(), stripes.count());
        gate.start();
    }

    /**
     * How far the clock is behind the time mark the last incarnation recorded (zero without a mark, or once the clock
     * has caught up): a clock that stepped back across a restart.
     */
    public Duration clockBehind() {
        return gate.clockBehind();
    }

    /**
     * The horizon of the last durable time mark: nothing is granted, renewed or upgraded at or after it (null without
     * a mark, and {@link Instant#MIN} before the first record succeeds).
     */
    public Instant markHorizon() {
        return gate.markHorizon();
    }

    /** Why the last record of the time mark failed, or null if it succeeded (or there is no mark). */
    public String markFailure() {
        return gate.markFailure();
    }

    /** True if the engine would grant now: past its quiet period, before its fence and its time mark's horizon. */
    public boolean granting() {
        return gate.granting();
    }

    /**
     * Fences the engine: from {@code until} on it grants, renews and upgrades nothing, until this is called again
     * with a later instant. The owner of an embedded engine moves the fence forward each time it confirms that it
     * still owns its log; an owner that stops confirming (paused, cut off) stops granting by itself.
     */
    public void fenceAt(Instant until, String reason) {
        gate.fenceAt(until, reason);
    }

    /**
     * Re-establishes a full lease that an earlier incarnation of this service granted and whose holder may still
     * write under it: the leases of a transaction branch that was prepared when the server stopped, which its
     * recovery must still be able to commit (the resource adapter's prepare journal holds them). The lease keeps its
     * holder, mode, generations, correlation ids and floors, so the frame its holder writes is the one the earlier
     * grant allowed; its deadline is now plus the maximum lease, and it is renewed and released like any other.
     *
     * <p>Call it before the engine serves anyone else (it takes no notice of the quiet period: it hands out no new
     * right, it restores one that nobody else can have had, since only this service grants these names). A name held
     * by a conflicting lease is refused, and nothing is reinstated.
     *
     * @throws LeaseBusyException           a name is held by a lease that conflicts with {@code earlier}
     * @throws InvalidLeaseRequestException the lease value names no lease, or a name is not acceptable
     * @throws IllegalArgumentException     the lease is tentative
     */
    public Lease reinstate(Lease earlier) throws LeaseException {
        // The earlier grant's principal is not kept (the prepare journal holds none): the witness names none.
        return witnesses.stamp(inDoubt.reinstate(earlier), null, WitnessEvent.REINSTATEMENT, time.nowMicros());
    }

    /** The signer of this engine's witnesses and time answers, or null if it signs none. */
    public AuditSigner signer() {
        return signer;
    }

    /**
     * Answers a time request Roughtime-style: this service's time and its clock error bound over {@code nonce},
     * signed in the next batch. Returns at once; the future completes when the batch is signed.
     *
     * @throws IllegalStateException if the engine signs nothing (it was started without a signer)
     */
    public CompletableFuture<SignedTimeProof> signedTime(byte[] nonce) {
        if (signer == null) {
            throw new IllegalStateException("the lease service " + serviceId + " signs nothing: start it with an "
                    + "audit signer to answer signed time requests");
        }
        return signer.signTime(nonce, time.nowMicros());
    }

    /** An engine with the default settings on {@code time}. */
    public static EmbeddedLeaseService withDefaults(TimeSource time) {
        return new EmbeddedLeaseService(EngineConfig.defaults(), time);
    }

    public EngineConfig config() {
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
        return gate.availableFromInstant();
    }

    // ---------------------------------------------------------------------------------------------------- acquire

    @Override
    public Lease acquire(LeaseRequest request) throws LeaseException, InterruptedException {
        Lease fast = tryUncontended(request);
        if (fast != null) {
            return granted(fast, request.principal());
        }
        Waiter w = admission.request(request, stripes);
        Lease granted = attempt(w);
        if (granted != null) {
            return granted(granted, w.principal);
        }
        try {
            return w.future.get();
        } catch (InterruptedException e) {
            if (!w.future.cancel(false) && !w.future.isCompletedExceptionally()) {
                releaseQuietly(w.future.getNow(null));
            }
            throw e;
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(LeaseRequest request) {
        Waiter w;
        try {
            Lease fast = tryUncontended(request);
            if (fast != null) {
                return CompletableFuture.completedFuture(granted(fast, request.principal()));
            }
            w = admission.request(request, stripes);
            Lease granted = attempt(w);
            if (granted != null) {
                return CompletableFuture.completedFuture(granted(granted, w.principal));
            }
        } catch (LeaseException e) {
            return CompletableFuture.failedFuture(e);
        }
        return w.future;
    }

    /** A new lease with its witnesses (with no lock held). */
    private Lease granted(Lease lease, String principal) {
        return witnesses.stamp(lease, principal, WitnessEvent.GRANT, Micros.of(lease.grantedAt()));
    }

    private static LeaseException unwrap(Throwable cause) {
        if (cause instanceof LeaseException le) {
            return le;
        }
        if (cause instanceof CancellationException) {
            return new LeaseBusyException(null, null, "the request was cancelled before it was granted");
        }
        throw new IllegalStateException("lease engine failure", cause);
    }

    /**
     * The common case without the general machinery: one name, exclusive or shared, nobody holding or waiting for it.
     * Returns null whenever anything else applies (including every error), and the general path decides.
     */
    private Lease tryUncontended(LeaseRequest r) throws InvalidLeaseRequestException {
        if (r == null || r.names().size() != 1 || r.mode().type() == LeaseMode.Type.SEMAPHORE
                || r.maxWait().isNegative() || (r.deadline() == null && r.leaseTime() != null
                        && (r.leaseTime().isNegative() || r.leaseTime().isZero()))
                || !Admission.fitsWitness(r.holder().process()) || !Admission.fitsWitness(r.holder().owner())
                || !Admission.fitsWitness(r.principal())) {
            return null;
        }
        String name = r.names().get(0);
        LeaseNames.check(name);
        Stripes.Shard s = stripes.shardOf(name);
        s.lock.lock();
        try {
            long now = time.nowMicros();
            if (!gate.grantsAt(now)) {
                return null;
            }
            long deadline;
            long max = Micros.plus(now, maxLease);
            if (r.deadline() != null) {
                deadline = Math.min(Micros.of(r.deadline()), max);
                if (deadline <= now) {
                    return null;
                }
            } else {
                deadline = r.leaseTime() == null ? max : Math.min(max, Micros.plus(now, Micros.of(r.leaseTime())));
            }
            NameState st = stripes.stateOf(name, now);
            fencing.clean(st, now);
            if (!st.holders.isEmpty() || !st.waiters.isEmpty()) {
                return null;
            }
            long age = r.startedAt() != null ? Micros.of(r.startedAt()) : now;
            Holding h = new Holding(r.holder(), r.mode(), r.kind(), age, now, deadline, st.floor, new String[] {name},
                    r.principal());
            Instant grantedAt = Micros.toInstant(now);
            Lease lease = new Lease(r.holder(), r.mode(), r.kind(), grantedAt, Micros.toInstant(deadline),
                    List.of(fencing.addHolder(st, s, h, 0, now, grantedAt)));
            h.lease = lease;
            return lease;
        } finally {
            s.lock.unlock();
        }
    }

    /**
     * Grants {@code w} now if it can, or queues it if it may wait, or throws why it cannot. Returns the lease, or
     * null when queued.
     */
    private Lease attempt(Waiter w) throws LeaseException {
        List<String> toDispatch = new ArrayList<>(2);
        Lease lease = null;
        stripes.lockAll(w.shards);
        try {
            long now = time.nowMicros();
            gate.ensureOpen();
            gate.ensureUnfenced(now);
            admission.stamp(w, now);
            boolean mayWait = w.waitUntil > now;
            if (gate.quietAt(now)) {
                if (!mayWait || w.waitUntil < gate.availableFrom()) {
                    throw gate.unavailable(now);
                }
                addAll(toDispatch, queues.enqueue(w, stripes.states(w, now), now));
            } else {
                NameState[] states = stripes.states(w, now);
                Admission.Verdict v = admission.evaluate(w, states, now, false);
                if (v.error != null) {
                    throw v.error;
                }
                if (!v.grantable) {
                    if (!mayWait) {
                        throw Admission.busy(w, v, now, false);
                    }
                    // Its holder waits now: where older requests wait for it, their turn (it may be broken then).
                    addAll(toDispatch, queues.enqueue(w, states, now));
                    // Queued by age, it may be first (ahead of younger waiters): its turn now, which may wound.
                    toDispatch.addAll(Arrays.asList(w.names));
                } else {
                    addAll(toDispatch, woundWait.applyEndings(v, states, now));
                    lease = fencing.grant(w, states, now, timers.deadlineFor(w, now));
                }
            }
        } finally {
            stripes.unlockAll(w.shards);
        }
        if (!toDispatch.isEmpty()) {
            dispatch(toDispatch);
        }
        return lease;
    }

    /**
     * Counts the holder of {@code held} (a live lease of this service) as waiting for a lease, as if it had a request
     * queued here, until the returned handle is run (once; more runs do nothing): it waits at another lease service
     * this one cannot see (another lease server of a fleet, whose client says so). Wound-wait then treats it as a
     * holder waiting here: an older request that waits for one of its tentative holdings breaks it now (a cycle of
     * waits through the two services is possible), where it would otherwise wait for it until a wait ran out. Asking
     * with the lease, not only the holder's identity, keeps a caller from marking holders it does not hold for.
     *
     * @throws LeaseException as {@link #upgrade} does for a lease that is not held (ended, another holder's, unknown)
     */
    public Runnable waitingElsewhere(Lease held) throws LeaseException {
        int[] ls = stripes.of(held);
        org.leasehold.lease.HolderId holder;
        stripes.lockAll(ls);
        try {
            gate.ensureOpen();
            holder = holders.find(held, time.nowMicros()).holder;
        } finally {
            stripes.unlockAll(ls);
        }
        List<String> spared = waits.started(holder);
        if (spared != null) {
            dispatch(spared);
        }
        java.util.concurrent.atomic.AtomicBoolean over = new java.util.concurrent.atomic.AtomicBoolean();
        return () -> {
            if (over.compareAndSet(false, true)) {
                waits.finished(holder);
            }
        };
    }

    /** How many holders wound-wait keeps an entry for (waiting, or spared on some name); for tests. */
    int woundWaitEntries() {
        return waits.size();
    }

    private static void addAll(List<String> to, List<String> names) {
        if (names != null) {
            to.addAll(names);
        }
    }

    /** Grants queued requests that became grantable on {@code names}; called with no lock held. */
    private void dispatch(Collection<String> names) {
        queues.dispatch(names);
    }

    // ---------------------------------------------------------------------------------------------------- holders

    @Override
    public Lease upgrade(Lease lease, Instant deadline) throws LeaseException {
        int[] ls = stripes.of(lease);
        Lease up;
        long now;
        String principal;
        stripes.lockAll(ls);
        try {
            now = time.nowMicros();
            gate.ensureOpen();
            gate.ensureUnfenced(now);
            Holding h = holders.find(lease, now);
            principal = h.principal;
            if (h.kind == LeaseKind.FULL && deadline == null) {
                up = h.lease;
            } else {
                long newDeadline = deadline == null ? h.deadline : timers.newDeadline(h, deadline, now);
                h.kind = LeaseKind.FULL;
                h.deadline = newDeadline;
                up = new Lease(h.holder, h.mode, LeaseKind.FULL, h.lease.grantedAt(), Micros.toInstant(newDeadline),
                        h.lease.grants());
                h.lease = up;
            }
        } finally {
            stripes.unlockAll(ls);
        }
        return witnesses.stamp(up, principal, WitnessEvent.UPGRADE, now);
    }

    @Override
    public Lease renew(Lease lease, Instant deadline, String metadata) throws LeaseException {
        if (deadline == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "renew needs a deadline");
        }
        checkMetadata(metadata);
        int[] ls = stripes.of(lease);
        Lease renewed;
        long now;
        String principal;
        stripes.lockAll(ls);
        try {
            now = time.nowMicros();
            gate.ensureOpen();
            gate.ensureUnfenced(now);
            Holding h = holders.find(lease, now);
            principal = h.principal;
            long newDeadline = timers.newDeadline(h, deadline, now);
            h.deadline = newDeadline;
            if (metadata != null) {
                for (int i = 0; i < h.names.length; i++) {
                    NameState st = stripes.existing(h.names[i]);
                    st.record(h.ids[i], h.generations[i], h.holder, null, now, Long.MIN_VALUE, metadata,
                            config.historyPerName());
                }
            }
            renewed = new Lease(h.holder, h.mode, h.kind, h.lease.grantedAt(), Micros.toInstant(newDeadline),
                    h.lease.grants());
            h.lease = renewed;
        } finally {
            stripes.unlockAll(ls);
        }
        return witnesses.stamp(renewed, principal, WitnessEvent.RENEWAL, now);
    }

    @Override
    public Lease holdInDoubt(Lease lease, Instant until) throws LeaseException {
        InDoubt.Held held = inDoubt.hold(lease, until);
        return witnesses.stamp(held.lease(), held.principal(), WitnessEvent.RENEWAL, time.nowMicros());
    }

    @Override
    public Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException {
        checkMetadata(metadata);
        int[] ls = stripes.of(lease);
        boolean waiters = false;
        Instant ended;
        stripes.lockAll(ls);
        try {
            long now = time.nowMicros();
            gate.ensureOpen();
            Holding h = holders.find(lease, now);
            ended = Micros.toInstant(now);
            long wm = Fencing.watermark(h, lease, watermark);
            if (!h.end(Holding.RELEASED, now)) {
                throw new IllegalStateException("holding ended concurrently under its locks");
            }
            for (int i = 0; i < h.names.length; i++) {
                NameState st = stripes.existing(h.names[i]);
                fencing.relinquished(st, h, i, wm, metadata, now);
                st.lastTouched = now;
                waiters |= !st.waiters.isEmpty();
            }
        } finally {
            stripes.unlockAll(ls);
        }
        if (waiters) {
            dispatch(lease.names());
        }
        return ended;
    }

    private void releaseQuietly(Lease lease) {
        if (lease == null) {
            return;
        }
        try {
            release(lease, null, null);
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-1002 releasing an unwanted grant failed: {0}", e.getMessage());
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
        if (name == null) {
            return false;
        }
        Stripes.Shard s = stripes.shardOf(name);
        s.lock.lock();
        try {
            NameState st = s.names.get(name);
            if (st == null) {
                return false;
            }
            long now = time.nowMicros();
            for (Holding h : st.holders) {
                if (h.generations[h.indexOf(name)] == generation) {
                    return h.kind == LeaseKind.FULL && h.isLive(now);
                }
            }
            return false;
        } finally {
            s.lock.unlock();
        }
    }

    // ---------------------------------------------------------------------------------------------------- admin

    @Override
    public List<NameStatus> inspect(String prefix, int limit) {
        String p = prefix == null ? "" : prefix;
        List<NameStatus> out = new ArrayList<>();
        for (Stripes.Shard s : stripes.all()) {
            s.lock.lock();
            try {
                long now = time.nowMicros();
                for (NameState st : s.names.values()) {
                    if (st.name.startsWith(p)) {
                        fencing.clean(st, now);
                        out.add(status(st, now));
                    }
                }
            } finally {
                s.lock.unlock();
            }
        }
        out.sort(Comparator.comparing(NameStatus::name));
        return out.size() > limit ? List.copyOf(out.subList(0, Math.max(0, limit))) : out;
    }

    private static NameStatus status(NameState st, long now) {
        List<HolderStatus> holders = new ArrayList<>();
        for (Holding h : st.holders) {
            int i = h.indexOf(st.name);
            long held = h.heldUntil;
            holders.add(new HolderStatus(h.holder, h.mode, h.kind, h.generations[i], h.ids[i],
                    Micros.toInstant(h.grantedAt), Micros.toInstant(h.deadline),
                    held > now ? Micros.toInstant(held) : null));
        }
        List<WaiterStatus> waiters = new ArrayList<>();
        for (Waiter w : st.waiters) {
            if (!w.isDone()) {
                waiters.add(new WaiterStatus(w.holder, w.mode, w.kind, List.of(w.names), Micros.toInstant(w.since),
                        Micros.toInstant(w.waitUntil)));
            }
        }
        Instant nowInstant = Micros.toInstant(now);
        return new NameStatus(st.name, st.generation, st.floorInstant(), st.writableFromInstant(now, nowInstant), holders,
                waiters, st.history());
    }

    /** The number of names the engine currently remembers (for tests and metrics). */
    public int rememberedNames() {
        return sweep.remembered();
    }

    @Override
    public void close() {
        if (!gate.close()) {
            return;
        }
        sweep.cancel();
        gate.stopMarks();
        List<Waiter> waiting = queues.drain();
        LeaseServiceUnavailableException failure = new LeaseServiceUnavailableException(null,
                "the lease service " + serviceId + " was closed while the request waited");
        for (Waiter w : waiting) {
            if (w.finish()) {
                TimeSource.Timer t = w.timeout;
                if (t != null) {
                    t.cancel();
                }
                w.future.completeExceptionally(failure);
            }
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1004 lease service {0} closed", serviceId);
    }

    /** The shard index of {@code name} among {@code shardMask + 1} shards (see {@link Stripes#index}). */
    static int shardIndex(String name, int shardMask) {
        return Stripes.index(name, shardMask);
    }
}
