package org.leasehold.engine;

import java.io.IOException;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.ReentrantLock;

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
    private static final long MARK_INTERVAL = MARK_INTERVAL_SECONDS * 1_000_000L;
    private static final long MARK_AHEAD = MARK_AHEAD_SECONDS * 1_000_000L;
    /** Offsets of first generations are below this: half of a millisecond's 2^20 generations. */
    static final long OFFSET_RANGE = 1L << 19;

    private final EngineConfig config;
    private final TimeSource time;
    private final Shard[] shards;
    private final int shardMask;
    private final String serviceId;
    private final long idHigh;
    private final long startedAt;
    private final long availableFrom;
    private final Instant availableFromInstant;
    private final long generationBase;
    private final long initialFloor;
    /** The time base B: the start, or the horizon an earlier incarnation recorded if that is later. */
    private final long timeBase;
    private final GenerationOffsets offsets;
    private final TimeMark mark;
    private final TimeMark.Recorded previousMark;
    /** No grant, renewal or upgrade at or after this (micros): the horizon of the last durable time mark. */
    private volatile long horizon;
    private long recordedBound = Long.MIN_VALUE;
    private volatile String markFailure;
    private volatile TimeSource.Timer markTimer;
    private final long maxLease;
    private final long grace;
    private final long clockError;
    private final long idleRetention;
    private final TimeSource.Timer sweeper;
    private volatile boolean closed;
    /** No grant, renewal or upgrade at or after this instant (micros) unless it is moved; see {@link #fenceAt}. */
    private volatile long fence = Long.MAX_VALUE;
    private volatile String fenceReason = "";

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
        this.config = config.validate();
        this.time = time;
        this.mark = mark;
        SecureRandom random = new SecureRandom();
        this.idHigh = random.nextLong();
        this.offsets = new GenerationOffsets(random.nextLong(), random.nextLong());
        this.serviceId = config.serviceId() != null ? config.serviceId()
                : "embedded-" + Long.toHexString(idHigh & 0xffff_ffffL);
        this.shards = new Shard[config.shards()];
        for (int i = 0; i < shards.length; i++) {
            shards[i] = new Shard(i);
        }
        this.shardMask = shards.length - 1;
        this.maxLease = Micros.of(config.maxLeaseDuration());
        this.grace = Micros.of(config.grace());
        this.clockError = Micros.of(config.clockErrorBound());
        this.idleRetention = Micros.of(config.idleRetention());
        long quiet = Micros.of(config.effectiveQuietPeriod());
        this.startedAt = time.nowMicros();
        this.previousMark = mark == null ? null : mark.previous();
        this.timeBase = previousMark == null ? startedAt : Math.max(startedAt, previousMark.horizon());
        this.availableFrom = Micros.plus(timeBase, quiet);
        this.availableFromInstant = Micros.toInstant(availableFrom);
        this.generationBase = Math.max(0, Math.floorDiv(timeBase, 1_000L)) << 20;
        // Every lease an earlier incarnation granted had a deadline (so a watermark) below its last grant plus the
        // maximum lease; that was before this start, or before the horizon it recorded. With a quiet period shorter
        // than that, the operator chose to trust that no earlier incarnation was granting. The recorded bound is
        // above every floor and deadline it granted: new floors start there (never later than the first grant).
        long floor = Micros.plus(timeBase, Math.min(quiet, maxLease));
        if (previousMark != null) {
            floor = Math.max(floor, Math.min(previousMark.bound(), availableFrom));
        }
        this.initialFloor = floor;
        this.sweeper = time.schedule(Micros.plus(startedAt, idleRetention), this::sweep);
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1001 lease service {0} started: quiet period until {1} "
                + "(max lease {2}, grace {3}, {4} shards)", serviceId, availableFromInstant, config.maxLeaseDuration(),
                config.grace(), shards.length);
        if (previousMark != null && previousMark.writtenAt() > startedAt) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-1010 lease service {0}: the clock ({1}) is {2} behind the "
                    + "time mark its last incarnation recorded at {3} (horizon {4}): it grants nothing until {5}, and "
                    + "its generations and floors start above the mark. Check the clock (NTP) of this machine",
                    serviceId, Micros.toInstant(startedAt), Duration.ofNanos((previousMark.writtenAt() - startedAt) * 1_000L),
                    Micros.toInstant(previousMark.writtenAt()), Micros.toInstant(previousMark.horizon()),
                    availableFromInstant);
        }
        if (mark == null) {
            this.horizon = Long.MAX_VALUE;
        } else {
            this.horizon = Long.MIN_VALUE;
            recordMark();
        }
    }

    /**
     * Records the time mark (on the mark's executor) and schedules the next record; a failed record keeps the horizon
     * of the last durable one, so the engine stops granting when the clock reaches it.
     */
    private void recordMark() {
        if (closed) {
            return;
        }
        long now = time.nowMicros();
        long h = Micros.plus(Math.max(now, timeBase), MARK_AHEAD);
        long last = horizon;
        if (last != Long.MIN_VALUE && last > h) {
            h = last;
        }
        long bound = Math.max(Micros.plus(h, maxLease), recordedBound);
        if (previousMark != null) {
            bound = Math.max(bound, previousMark.bound());
        }
        try {
            mark.record(new TimeMark.Recorded(h, bound, now));
            recordedBound = bound;
            horizon = h;
            if (markFailure != null) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1013 lease service {0} records its time mark again "
                        + "(horizon {1})", serviceId, Micros.toInstant(h));
            }
            markFailure = null;
        } catch (IOException | RuntimeException e) {
            markFailure = e.toString();
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-1011 lease service {0} could not record its time mark: {1}; "
                    + "it grants, renews and upgrades nothing from {2} until a record succeeds (retried every {3} s)",
                    serviceId, e.toString(), last == Long.MIN_VALUE ? "now" : Micros.toInstant(last),
                    MARK_INTERVAL_SECONDS);
        }
        if (!closed) {
            markTimer = time.schedule(Micros.plus(now, MARK_INTERVAL), () -> {
                try {
                    mark.executor().execute(this::recordMark);
                } catch (RejectedExecutionException e) {
                    // The mark was closed with the engine.
                }
            });
        }
    }

    /**
     * How far the clock is behind the time mark the last incarnation recorded (zero without a mark, or once the clock
     * has caught up): a clock that stepped back across a restart.
     */
    public Duration clockBehind() {
        if (previousMark == null) {
            return Duration.ZERO;
        }
        long behind = previousMark.writtenAt() - time.nowMicros();
        return behind <= 0 ? Duration.ZERO : Duration.ofNanos(behind * 1_000L);
    }

    /**
     * The horizon of the last durable time mark: nothing is granted, renewed or upgraded at or after it (null without
     * a mark, and {@link Instant#MIN} before the first record succeeds).
     */
    public Instant markHorizon() {
        long h = horizon;
        return mark == null ? null : h == Long.MIN_VALUE ? Instant.MIN : Micros.toInstant(h);
    }

    /** Why the last record of the time mark failed, or null if it succeeded (or there is no mark). */
    public String markFailure() {
        return markFailure;
    }

    /** True if the engine would grant now: past its quiet period, before its fence and its time mark's horizon. */
    public boolean granting() {
        long now = time.nowMicros();
        return !closed && now >= availableFrom && now < fence && now < horizon;
    }

    /**
     * Fences the engine: from {@code until} on it grants, renews and upgrades nothing, until this is called again
     * with a later instant. The owner of an embedded engine moves the fence forward each time it confirms that it
     * still owns its log; an owner that stops confirming (paused, cut off) stops granting by itself.
     */
    public void fenceAt(Instant until, String reason) {
        fenceReason = reason;
        fence = Micros.of(until);
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
        int[] idx = shardsOf(earlier);
        if (earlier.kind() != LeaseKind.FULL) {
            throw new IllegalArgumentException("only a full lease can be reinstated, not " + earlier.describe()
                    + ": a tentative lease was never written under");
        }
        List<LeaseGrant> grants = new ArrayList<>(earlier.grants());
        grants.sort(Comparator.comparing(LeaseGrant::name));
        String[] names = new String[grants.size()];
        long floor = Long.MIN_VALUE;
        for (int i = 0; i < names.length; i++) {
            names[i] = grants.get(i).name();
            LeaseNames.check(names[i]);
            floor = Math.max(floor, Micros.of(grants.get(i).floor()));
        }
        lockAll(idx);
        try {
            ensureOpen();
            long now = time.nowMicros();
            ensureUnfenced(now); // owned, and below the time mark's horizon: the new deadline is within its bound
            NameState[] states = new NameState[names.length];
            for (int i = 0; i < names.length; i++) {
                states[i] = stateOf(names[i], now);
                clean(states[i], now);
                for (Holding other : states[i].holders) {
                    if (conflicts(other, earlier.mode())) {
                        throw new LeaseBusyException(names[i], Micros.toInstant(other.deadline), "'"
                                + LeaseNames.printable(names[i]) + "' is held by " + other.holder + " until "
                                + Micros.toInstant(other.deadline) + ", so the earlier lease " + earlier.describe()
                                + " cannot be reinstated");
                    }
                }
            }
            long deadline = Micros.plus(now, maxLease);
            Holding h = new Holding(earlier.holder(), earlier.mode(), LeaseKind.FULL, Micros.of(earlier.grantedAt()), now,
                    deadline, floor, names);
            for (int i = 0; i < names.length; i++) {
                NameState st = states[i];
                LeaseGrant g = grants.get(i);
                h.generations[i] = g.generation();
                h.ids[i] = g.correlationId();
                st.generation = Math.max(st.generation, g.generation());
                st.holders.add(h);
                st.lastTouched = now;
            }
            Lease lease = new Lease(earlier.holder(), earlier.mode(), LeaseKind.FULL, Micros.toInstant(now),
                    Micros.toInstant(deadline), grants);
            h.lease = lease;
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1005 lease service {0} reinstated {1} of an earlier "
                    + "incarnation, now until {2}", serviceId, lease.describe(), lease.deadline());
            return lease;
        } finally {
            unlockAll(idx);
        }
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
        return availableFromInstant;
    }

    // ---------------------------------------------------------------------------------------------------- acquire

    @Override
    public Lease acquire(LeaseRequest request) throws LeaseException, InterruptedException {
        Lease fast = tryUncontended(request);
        if (fast != null) {
            return fast;
        }
        Waiter w = prepare(request);
        Lease granted = attempt(w);
        if (granted != null) {
            return granted;
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
                return CompletableFuture.completedFuture(fast);
            }
            w = prepare(request);
            Lease granted = attempt(w);
            if (granted != null) {
                return CompletableFuture.completedFuture(granted);
            }
        } catch (LeaseException e) {
            return CompletableFuture.failedFuture(e);
        }
        return w.future;
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
                        && (r.leaseTime().isNegative() || r.leaseTime().isZero()))) {
            return null;
        }
        String name = r.names().get(0);
        LeaseNames.check(name);
        Shard s = shardOf(name);
        s.lock.lock();
        try {
            long now = time.nowMicros();
            if (closed || now < availableFrom || now >= fence || now >= horizon) {
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
            NameState st = stateOf(name, now);
            clean(st, now);
            if (!st.holders.isEmpty() || !st.waiters.isEmpty()) {
                return null;
            }
            long age = r.startedAt() != null ? Micros.of(r.startedAt()) : now;
            Holding h = new Holding(r.holder(), r.mode(), r.kind(), age, now, deadline, st.floor, new String[] {name});
            Instant grantedAt = Micros.toInstant(now);
            Lease lease = new Lease(r.holder(), r.mode(), r.kind(), grantedAt, Micros.toInstant(deadline),
                    List.of(addHolder(st, s, h, 0, now, grantedAt)));
            h.lease = lease;
            return lease;
        } finally {
            s.lock.unlock();
        }
    }

    /** Makes {@code h} a holder of {@code st} (its name number {@code i}) and returns that name's grant. */
    private LeaseGrant addHolder(NameState st, Shard s, Holding h, int i, long now, Instant grantedAt) {
        long gen = ++st.generation;
        CorrelationId id = new CorrelationId(idHigh, (++s.idCounter << 8) | s.index);
        h.generations[i] = gen;
        h.ids[i] = id;
        st.holders.add(h);
        st.lastTouched = now;
        return new LeaseGrant(st.name, gen, id, st.floorInstant(), st.writableFromInstant(now, grantedAt),
                st.predecessor());
    }

    private Waiter prepare(LeaseRequest request) throws LeaseException {
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
        long requestedDeadline = Long.MIN_VALUE;
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
        return new Waiter(request.holder(), names, shardsOf(names), mode, request.kind(), request.startedAt(),
                requestedDeadline, leaseTime, Micros.of(request.maxWait()));
    }

    /** Sets the request's times from the service time {@code now}, read under its shards' locks. */
    private void stamp(Waiter w, long now) throws InvalidLeaseRequestException {
        if (w.requestedDeadline != Long.MIN_VALUE && w.requestedDeadline <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the requested deadline "
                    + Micros.toInstant(w.requestedDeadline) + " is not after the service's time " + Micros.toInstant(now)
                    + ": ask for a deadline in the future (at most " + config.maxLeaseDuration() + " ahead)");
        }
        w.since = now;
        w.age = w.startedAt != null ? Micros.of(w.startedAt) : now;
        long waitUntil = Micros.plus(now, w.maxWait);
        if (w.requestedDeadline != Long.MIN_VALUE) {
            waitUntil = Math.min(waitUntil, w.requestedDeadline);
        }
        w.waitUntil = waitUntil;
    }

    /**
     * Grants {@code w} now if it can, or queues it if {@code mayWait}, or throws why it cannot. Returns the lease, or
     * null when queued.
     */
    private Lease attempt(Waiter w) throws LeaseException {
        List<String> toDispatch = null;
        Lease lease;
        lockAll(w.shards);
        try {
            long now = time.nowMicros();
            ensureOpen();
            ensureUnfenced(now);
            stamp(w, now);
            boolean mayWait = w.waitUntil > now;
            if (now < availableFrom) {
                if (!mayWait || w.waitUntil < availableFrom) {
                    throw unavailable(now);
                }
                enqueue(w, states(w, now), now);
                return null;
            }
            NameState[] states = states(w, now);
            Verdict v = evaluate(w, states, now, false);
            if (v.error != null) {
                throw v.error;
            }
            if (!v.grantable) {
                if (!mayWait) {
                    throw busy(w, v, now, false);
                }
                enqueue(w, states, now);
                return null;
            }
            toDispatch = applyEndings(v, states, now);
            lease = grant(w, states, now);
        } finally {
            unlockAll(w.shards);
        }
        if (toDispatch != null) {
            dispatch(toDispatch);
        }
        return lease;
    }

    private void enqueue(Waiter w, NameState[] states, long now) throws LeaseException {
        for (NameState st : states) {
            if (st.waiters.size() >= config.maxWaitersPerName()) {
                throw new LeaseBusyException(st.name, null, "the queue for '" + LeaseNames.printable(st.name)
                        + "' is full (" + st.waiters.size() + " waiting requests, the configured maximum): "
                        + "retry later, or raise maxWaitersPerName");
            }
        }
        w.future = new CompletableFuture<>();
        for (NameState st : states) {
            st.waiters.addLast(w);
            st.lastTouched = now;
        }
        scheduleWakes(w, states, now);
        w.future.whenComplete((lease, failure) -> {
            if (failure instanceof CancellationException) {
                withdraw(w, null);
            }
        });
        w.timeout = time.schedule(w.waitUntil, () -> withdraw(w, "timeout"));
    }

    /** Wakes the queue of each name where {@code w} is first when a blocker's deadline (or the quiet period) ends. */
    private void scheduleWakes(Waiter w, NameState[] states, long now) {
        for (NameState st : states) {
            if (firstLive(st) != w) {
                continue;
            }
            long at = Long.MAX_VALUE;
            if (now < availableFrom) {
                at = availableFrom;
            } else {
                for (Holding h : st.holders) {
                    if (conflicts(h, w.mode) && h.deadline < at) {
                        at = h.deadline;
                    }
                }
            }
            if (at != Long.MAX_VALUE) {
                scheduleWake(st, at);
            }
        }
    }

    private void scheduleWake(NameState st, long at) {
        if (st.wakeTimer != null && st.wakeAt <= at) {
            return;
        }
        if (st.wakeTimer != null) {
            st.wakeTimer.cancel();
        }
        st.wakeAt = at;
        String name = st.name;
        st.wakeTimer = time.schedule(at, () -> onWake(name, at));
    }

    private void onWake(String name, long at) {
        Shard s = shardOf(name);
        s.lock.lock();
        try {
            NameState st = s.names.get(name);
            if (st == null || st.wakeAt != at) {
                return;
            }
            st.wakeTimer = null;
            st.wakeAt = Long.MAX_VALUE;
        } finally {
            s.lock.unlock();
        }
        dispatch(List.of(name));
    }

    /**
     * Takes a queued request out: on timeout (with a reason) or on cancellation (reason null). A request that is
     * grantable at the moment its wait ends is granted rather than refused.
     */
    private void withdraw(Waiter w, String reason) {
        if (!w.finish()) {
            return;
        }
        TimeSource.Timer t = w.timeout;
        if (t != null && reason == null) {
            t.cancel();
        }
        LeaseException failure = null;
        Lease granted = null;
        List<String> others = null;
        lockAll(w.shards);
        try {
            long now = time.nowMicros();
            if (reason != null && !closed) {
                if (now >= fence || now >= horizon) {
                    failure = fenced(now);
                } else if (now < availableFrom) {
                    failure = unavailable(now);
                } else {
                    NameState[] states = states(w, now);
                    Verdict v = evaluate(w, states, now, true);
                    if (v.grantable && deadlineFor(w, now) > now) {
                        removeFromQueues(w, states);
                        others = applyEndings(v, states, now);
                        granted = grant(w, states, now);
                    } else {
                        failure = v.error != null ? v.error : busy(w, v, now, true);
                    }
                }
            }
            for (String name : w.names) {
                NameState st = shardOf(name).names.get(name);
                if (st != null) {
                    st.waiters.remove(w);
                }
            }
        } finally {
            unlockAll(w.shards);
        }
        if (granted != null) {
            if (!w.future.complete(granted)) {
                releaseQuietly(granted);
            }
        } else if (failure != null) {
            w.future.completeExceptionally(failure);
        }
        List<String> names = new ArrayList<>(Arrays.asList(w.names));
        if (others != null) {
            names.addAll(others);
        }
        dispatch(names);
    }

    // ---------------------------------------------------------------------------------------------------- dispatch

    /** Grants queued requests that became grantable on {@code names}, in FIFO order per name. */
    private void dispatch(Collection<String> names) {
        ArrayDeque<String> work = new ArrayDeque<>(names);
        while (!work.isEmpty()) {
            dispatchName(work.poll(), work);
        }
    }

    private void dispatchName(String name, ArrayDeque<String> work) {
        while (!closed) {
            Shard s = shardOf(name);
            Waiter head;
            s.lock.lock();
            try {
                NameState st = s.names.get(name);
                if (st == null) {
                    return;
                }
                head = firstLive(st);
                if (head == null) {
                    return;
                }
            } finally {
                s.lock.unlock();
            }
            Outcome o = tryQueued(head);
            if (o == null) {
                return;
            }
            if (o.lease != null) {
                if (!head.future.complete(o.lease)) {
                    releaseQuietly(o.lease);
                }
            } else if (o.error != null) {
                head.future.completeExceptionally(o.error);
            }
            for (String n : head.names) {
                if (!n.equals(name)) {
                    work.add(n);
                }
            }
            if (o.others != null) {
                work.addAll(o.others);
            }
        }
    }

    /** Outcome of a queued request's turn: granted, failed, or (null) still blocked. */
    private record Outcome(Lease lease, LeaseException error, List<String> others) {
    }

    private Outcome tryQueued(Waiter w) {
        lockAll(w.shards);
        try {
            if (w.isDone()) {
                return new Outcome(null, null, null);
            }
            long now = time.nowMicros();
            if (now < availableFrom || closed || now >= fence || now >= horizon) {
                return null;
            }
            NameState[] states = states(w, now);
            Verdict v = evaluate(w, states, now, true);
            if (v.error != null) {
                if (!w.finish()) {
                    return new Outcome(null, null, null);
                }
                removeFromQueues(w, states);
                return new Outcome(null, v.error, null);
            }
            if (!v.grantable) {
                if (v.wakeAt != Long.MAX_VALUE) {
                    scheduleWake(v.blockedOn, v.wakeAt);
                }
                return null;
            }
            if (!w.finish()) {
                return new Outcome(null, null, null);
            }
            TimeSource.Timer t = w.timeout;
            if (t != null) {
                t.cancel();
            }
            removeFromQueues(w, states);
            List<String> others = applyEndings(v, states, now);
            long deadline = deadlineFor(w, now);
            if (deadline <= now) {
                return new Outcome(null, new LeaseBusyException(w.names[0], null, "the names became free only at "
                        + Micros.toInstant(now) + ", when the requested deadline had passed: ask again"), others);
            }
            return new Outcome(grant(w, states, now), null, others);
        } finally {
            unlockAll(w.shards);
        }
    }

    private static void removeFromQueues(Waiter w, NameState[] states) {
        for (NameState st : states) {
            st.waiters.remove(w);
        }
    }

    private static Waiter firstLive(NameState st) {
        Waiter w;
        while ((w = st.waiters.peekFirst()) != null && w.isDone()) {
            st.waiters.pollFirst();
        }
        return w;
    }

    // ---------------------------------------------------------------------------------------------------- decide

    /** The decision for one request: grantable (after breaking and re-taking some holdings) or blocked, and why. */
    private static final class Verdict {
        boolean grantable = true;
        LeaseException error;
        NameState blockedOn;
        boolean blockedByQueue;
        long heldUntil = Long.MIN_VALUE;
        long wakeAt = Long.MAX_VALUE;
        List<Holding> wound;
        List<Holding> retake;

        void block(NameState st, boolean byQueue) {
            grantable = false;
            blockedOn = st;
            blockedByQueue = byQueue;
        }
    }

    private Verdict evaluate(Waiter w, NameState[] states, long now, boolean queued) {
        Verdict v = new Verdict();
        for (NameState st : states) {
            clean(st, now);
            boolean retakes = false;
            for (Holding h : st.holders) {
                if (h.holder.equals(w.holder)) {
                    retakes = true;
                    break;
                }
            }
            if (queued ? firstLive(st) != w : (!retakes && firstLive(st) != null)) {
                v.block(st, true);
                return v;
            }
            if (!admit(w, st, now, v)) {
                return v;
            }
        }
        return v;
    }

    /** Decides one name; false (with {@code v} saying why) if it blocks or fails the request. */
    private boolean admit(Waiter w, NameState st, long now, Verdict v) {
        int sameModeHolders = 0;
        List<Holding> blockers = null;
        List<Holding> semaphoreHolders = null;
        for (Holding h : st.holders) {
            if (h.holder.equals(w.holder)) {
                if (v.retake == null) {
                    v.retake = new ArrayList<>(2);
                }
                if (!v.retake.contains(h)) {
                    v.retake.add(h);
                }
                continue;
            }
            if (w.mode.type() == LeaseMode.Type.SEMAPHORE && h.mode.type() == LeaseMode.Type.SEMAPHORE) {
                if (h.mode.permits() != w.mode.permits()) {
                    v.grantable = false;
                    v.error = new InvalidLeaseRequestException(Reason.PERMITS_MISMATCH, "'" + LeaseNames.printable(st.name)
                            + "' is held as a semaphore of " + h.mode.permits() + " permits; this request says "
                            + w.mode.permits() + ": every holder of a semaphore must agree on its permits");
                    return false;
                }
                sameModeHolders++;
                if (semaphoreHolders == null) {
                    semaphoreHolders = new ArrayList<>();
                }
                semaphoreHolders.add(h);
            } else if (conflicts(h, w.mode)) {
                if (blockers == null) {
                    blockers = new ArrayList<>(2);
                }
                blockers.add(h);
            }
        }
        if (semaphoreHolders != null && sameModeHolders >= w.mode.permits()) {
            // Free enough permits by wounding the youngest tentative holders younger than the requester, if any.
            int needed = sameModeHolders - w.mode.permits() + 1;
            semaphoreHolders.sort(Comparator.comparingLong((Holding h) -> h.age).reversed());
            List<Holding> victims = new ArrayList<>();
            for (Holding h : semaphoreHolders) {
                if (victims.size() < needed && h.kind == LeaseKind.TENTATIVE && h.youngerThan(w.age, w.holder)) {
                    victims.add(h);
                }
            }
            if (victims.size() < needed) {
                blockBy(v, st, semaphoreHolders);
                return false;
            }
            if (blockers == null) {
                blockers = new ArrayList<>();
            }
            blockers.addAll(victims);
        }
        if (blockers == null) {
            return true;
        }
        for (Holding h : blockers) {
            if (h.kind != LeaseKind.TENTATIVE || !h.youngerThan(w.age, w.holder)) {
                blockBy(v, st, blockers);
                return false;
            }
        }
        if (v.wound == null) {
            v.wound = new ArrayList<>(blockers.size());
        }
        for (Holding h : blockers) {
            if (!v.wound.contains(h)) {
                v.wound.add(h);
            }
        }
        return true;
    }

    private static void blockBy(Verdict v, NameState st, List<Holding> blockers) {
        v.block(st, false);
        for (Holding h : blockers) {
            v.heldUntil = Math.max(v.heldUntil, h.deadline);
            v.wakeAt = Math.min(v.wakeAt, h.deadline);
        }
    }

    private static boolean conflicts(Holding h, LeaseMode requested) {
        LeaseMode.Type a = h.mode.type();
        LeaseMode.Type b = requested.type();
        if (a != b || a == LeaseMode.Type.EXCLUSIVE) {
            return true;
        }
        return false;
    }

    /** Breaks wounded tentative holdings and ends re-taken ones; returns their other names, to dispatch. */
    private List<String> applyEndings(Verdict v, NameState[] states, long now) {
        List<String> others = null;
        if (v.wound != null) {
            for (Holding h : v.wound) {
                if (h.end(Holding.BROKEN, now)) {
                    others = otherNames(h, states, others);
                }
            }
        }
        if (v.retake != null) {
            for (Holding h : v.retake) {
                if (h.kind == LeaseKind.FULL) {
                    // The previous incarnation published no watermark. It wrote only timestamps it chose before now
                    // (it is gone), so at most now plus the clock error, and always below its deadline.
                    h.impliedWatermark = Math.max(h.floor, Math.min(h.deadline - 1, now + clockError));
                }
                if (h.end(Holding.RETAKEN, now)) {
                    others = otherNames(h, states, others);
                }
            }
        }
        if (v.wound != null || v.retake != null) {
            for (NameState st : states) {
                clean(st, now);
            }
        }
        return others;
    }

    private static List<String> otherNames(Holding h, NameState[] states, List<String> acc) {
        outer:
        for (String n : h.names) {
            for (NameState st : states) {
                if (st.name.equals(n)) {
                    continue outer;
                }
            }
            if (acc == null) {
                acc = new ArrayList<>();
            }
            acc.add(n);
        }
        return acc;
    }

    private long deadlineFor(Waiter w, long now) {
        long max = Micros.plus(now, maxLease);
        if (w.requestedDeadline != Long.MIN_VALUE) {
            return Math.min(w.requestedDeadline, max);
        }
        return Math.min(Micros.plus(now, w.leaseTime), max);
    }

    /** Grants {@code w} on {@code states} (already decided grantable and cleaned). */
    private Lease grant(Waiter w, NameState[] states, long now) {
        long deadline = deadlineFor(w, now);
        long floor = Long.MIN_VALUE;
        for (NameState st : states) {
            floor = Math.max(floor, st.floor);
        }
        Holding h = new Holding(w.holder, w.mode, w.kind, w.age, now, deadline, floor, w.names);
        Instant grantedAt = Micros.toInstant(now);
        LeaseGrant[] grants = new LeaseGrant[states.length];
        for (int i = 0; i < states.length; i++) {
            grants[i] = addHolder(states[i], shards[shardIndex(states[i].name)], h, i, now, grantedAt);
        }
        List<LeaseGrant> list = grants.length == 1 ? List.of(grants[0]) : List.of(grants);
        Lease lease = new Lease(w.holder, w.mode, w.kind, grantedAt, Micros.toInstant(deadline), list);
        h.lease = lease;
        return lease;
    }

    /** Removes holdings that ended (expired, broken, re-taken) from a name, folding what they leave behind. */
    private void clean(NameState st, long now) {
        List<Holding> holders = st.holders;
        for (int i = holders.size() - 1; i >= 0; i--) {
            Holding h = holders.get(i);
            int status = h.status();
            if (status == Holding.ACTIVE && h.deadline > now) {
                continue;
            }
            holders.remove(i);
            int idx = h.indexOf(st.name);
            switch (status) {
                case Holding.ACTIVE -> {
                    if (h.kind == LeaseKind.FULL) {
                        // Unrelinquished: anything it wrote is below its deadline, and may still land until its
                        // buckets are sealed, so the next holder writes above the deadline, after the grace.
                        st.raiseFloor(h.deadline);
                        st.raiseWritableFrom(Micros.plus(h.deadline, grace));
                    }
                    ended(st, h, idx, Ending.EXPIRED, h.deadline, Long.MIN_VALUE, null);
                }
                case Holding.BROKEN -> ended(st, h, idx, Ending.BROKEN, h.endedAt, Long.MIN_VALUE, null);
                case Holding.RETAKEN -> {
                    long wm = h.impliedWatermark;
                    if (wm != Long.MIN_VALUE) {
                        st.raiseFloor(wm);
                    }
                    ended(st, h, idx, Ending.RETAKEN, h.endedAt, wm, null);
                }
                default -> LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-1901 internal: released holding of {0} "
                        + "still listed", st.name);
            }
        }
    }

    private void ended(NameState st, Holding h, int idx, Ending ending, long at, long watermark, String metadata) {
        st.ended(h.ids[idx], h.generations[idx], h.holder, ending, at, watermark, metadata, config.historyPerName());
    }

    // ---------------------------------------------------------------------------------------------------- holders

    /** Finds the live holding of {@code lease}, or throws what became of it. Callers hold all its shards' locks. */
    private Holding find(Lease lease, long now) throws LeaseException {
        Holding found = null;
        for (LeaseGrant g : lease.grants()) {
            NameState st = shardOf(g.name()).names.get(g.name());
            Holding h = null;
            if (st != null) {
                for (Holding x : st.holders) {
                    if (x.generations[x.indexOf(g.name())] == g.generation()) {
                        h = x;
                        break;
                    }
                }
            }
            if (h == null) {
                throw gone(lease, g, st);
            }
            if (!h.holder.equals(lease.holder())) {
                throw new StaleLeaseException("'" + LeaseNames.printable(g.name()) + "' generation " + g.generation()
                        + " is held by " + h.holder + ", not by " + lease.holder()
                        + ": only the holder may renew, upgrade or release it");
            }
            if (found == null) {
                found = h;
            } else if (found != h) {
                throw new StaleLeaseException("the lease value mixes grants of different leases (" + lease.describe()
                        + "): pass the value the service returned");
            }
        }
        if (found == null) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        int status = found.status();
        if (status == Holding.BROKEN) {
            throw new LeaseBrokenException(found.names[0], lease.describe() + " was broken at "
                    + Micros.toInstant(found.endedAt) + " by an older requester: nothing may be written under it; "
                    + "roll back and start over");
        }
        if (status == Holding.RETAKEN) {
            throw new StaleLeaseException(lease.describe() + " was taken again by the same identity at "
                    + Micros.toInstant(found.endedAt) + ": use the newer lease");
        }
        if (found.deadline <= now) {
            throw expired(lease, found.deadline, now);
        }
        return found;
    }

    private LeaseException gone(Lease lease, LeaseGrant g, NameState st) {
        MetadataEntry e = st == null ? null : st.endingOf(g.generation());
        String what = "'" + LeaseNames.printable(g.name()) + "' generation " + g.generation();
        if (e == null) {
            long now = time.nowMicros();
            if (lease.deadline() != null && Micros.of(lease.deadline()) <= now) {
                // The name's bounded history no longer says how this grant ended, but its deadline has passed: to the
                // caller it is expired (the contract's answer after the deadline), whatever else became of it.
                return expired(lease, Micros.of(lease.deadline()), now);
            }
            return new StaleLeaseException(what + " is not a current grant of this service (" + serviceId
                    + "): it was released or replaced long ago, or never granted here");
        }
        return switch (e.ending()) {
            case EXPIRED -> expired(lease, Micros.of(e.at()), time.nowMicros());
            case BROKEN -> new LeaseBrokenException(g.name(), lease.describe() + " was broken at " + e.at()
                    + " by an older requester: nothing may be written under it; roll back and start over");
            case RELINQUISHED -> new StaleLeaseException(what + " was already released at " + e.at()
                    + ": a lease is released once");
            case RETAKEN -> new StaleLeaseException(what + " was taken again by the same identity at " + e.at()
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

    @Override
    public Lease upgrade(Lease lease, Instant deadline) throws LeaseException {
        int[] ls = shardsOf(lease);
        lockAll(ls);
        try {
            long now = time.nowMicros();
            ensureOpen();
            ensureUnfenced(now);
            Holding h = find(lease, now);
            if (h.kind == LeaseKind.FULL && deadline == null) {
                return h.lease;
            }
            long newDeadline = deadline == null ? h.deadline : newDeadline(h, deadline, now);
            h.kind = LeaseKind.FULL;
            h.deadline = newDeadline;
            Lease up = new Lease(h.holder, h.mode, LeaseKind.FULL, h.lease.grantedAt(), Micros.toInstant(newDeadline),
                    h.lease.grants());
            h.lease = up;
            return up;
        } finally {
            unlockAll(ls);
        }
    }

    @Override
    public Lease renew(Lease lease, Instant deadline, String metadata) throws LeaseException {
        if (deadline == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "renew needs a deadline");
        }
        checkMetadata(metadata);
        int[] ls = shardsOf(lease);
        lockAll(ls);
        try {
            long now = time.nowMicros();
            ensureOpen();
            ensureUnfenced(now);
            Holding h = find(lease, now);
            long newDeadline = newDeadline(h, deadline, now);
            h.deadline = newDeadline;
            if (metadata != null) {
                for (int i = 0; i < h.names.length; i++) {
                    NameState st = shardOf(h.names[i]).names.get(h.names[i]);
                    st.record(h.ids[i], h.generations[i], h.holder, null, now, Long.MIN_VALUE, metadata,
                            config.historyPerName());
                }
            }
            Lease renewed = new Lease(h.holder, h.mode, h.kind, h.lease.grantedAt(), Micros.toInstant(newDeadline),
                    h.lease.grants());
            h.lease = renewed;
            return renewed;
        } finally {
            unlockAll(ls);
        }
    }

    @Override
    public Lease holdInDoubt(Lease lease, Instant until) throws LeaseException {
        if (until == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "holding a lease in doubt needs an end");
        }
        int[] ls = shardsOf(lease);
        lockAll(ls);
        try {
            long now = time.nowMicros();
            ensureOpen();
            ensureUnfenced(now);
            Holding h = find(lease, now);
            if (h.kind != LeaseKind.FULL) {
                throw new InvalidLeaseRequestException(Reason.NOT_FULL, lease.describe() + " is tentative: only a full "
                        + "lease (one that may be written under) is held in doubt; upgrade it first");
            }
            long end = Micros.of(until);
            if (end <= now) {
                throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the end of the hold " + until
                        + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
            }
            boolean scheduled = h.heldUntil > now;
            h.heldUntil = Math.min(end, Micros.plus(now, Micros.of(MAX_IN_DOUBT_HOLD)));
            if (!scheduled) {
                scheduleKeep(h, ls);
            }
            return h.lease;
        } finally {
            unlockAll(ls);
        }
    }

    /** Renews a held-in-doubt lease when half its time is left, as its holder would. */
    private void scheduleKeep(Holding h, int[] ls) {
        time.schedule(Math.max(h.grantedAt, h.deadline - maxLease / 2), () -> keepInDoubt(h, ls));
    }

    private void keepInDoubt(Holding h, int[] ls) {
        lockAll(ls);
        try {
            long now = time.nowMicros();
            if (closed || h.status() != Holding.ACTIVE || h.deadline <= now || h.heldUntil <= now) {
                return; // released, ended, or the hold is over: the lease ends at its deadline
            }
            if (now >= fence || now >= horizon) {
                // Renewing nothing now, as for a holder: try again soon, and the lease ends at its deadline if the
                // engine does not grant again before.
                time.schedule(Micros.plus(now, Math.max(1_000L, maxLease / 10)), () -> keepInDoubt(h, ls));
                return;
            }
            long d = Math.min(Micros.plus(now, maxLease), h.heldUntil);
            if (d > h.deadline) {
                h.deadline = d;
                h.lease = new Lease(h.holder, h.mode, h.kind, h.lease.grantedAt(), Micros.toInstant(d),
                        h.lease.grants());
            }
            if (h.heldUntil > h.deadline) {
                scheduleKeep(h, ls);
            }
        } finally {
            unlockAll(ls);
        }
    }

    private long newDeadline(Holding h, Instant deadline, long now) throws InvalidLeaseRequestException {
        long requested = Micros.of(deadline);
        if (requested <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the new deadline " + deadline
                    + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
        }
        return Math.max(h.deadline, Math.min(requested, Micros.plus(now, maxLease)));
    }

    @Override
    public Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException {
        checkMetadata(metadata);
        int[] ls = shardsOf(lease);
        boolean waiters = false;
        Instant ended;
        lockAll(ls);
        try {
            long now = time.nowMicros();
            ensureOpen();
            Holding h = find(lease, now);
            ended = Micros.toInstant(now);
            long wm = Long.MIN_VALUE;
            if (watermark != null) {
                if (h.kind == LeaseKind.TENTATIVE) {
                    throw new InvalidLeaseRequestException(Reason.WATERMARK_ON_TENTATIVE, lease.describe()
                            + " is tentative, so nothing was written under it and it publishes no watermark: "
                            + "release it with a null watermark, or upgrade before writing");
                }
                wm = Micros.of(watermark);
                if (wm < h.floor || wm >= h.deadline) {
                    throw new InvalidLeaseRequestException(Reason.WATERMARK_OUT_OF_RANGE, "the watermark " + watermark
                            + " is outside [floor " + Micros.toInstant(h.floor) + ", deadline "
                            + Micros.toInstant(h.deadline) + ") of " + lease.describe()
                            + ": publish the highest timestamp written under the lease, or null if none");
                }
            }
            if (!h.end(Holding.RELEASED, now)) {
                throw new IllegalStateException("holding ended concurrently under its locks");
            }
            for (int i = 0; i < h.names.length; i++) {
                NameState st = shardOf(h.names[i]).names.get(h.names[i]);
                st.holders.remove(h);
                if (wm != Long.MIN_VALUE) {
                    st.raiseFloor(wm);
                }
                ended(st, h, i, Ending.RELINQUISHED, now, wm, metadata);
                st.lastTouched = now;
                waiters |= !st.waiters.isEmpty();
            }
        } finally {
            unlockAll(ls);
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
        Shard s = shardOf(name);
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
        for (Shard s : shards) {
            s.lock.lock();
            try {
                long now = time.nowMicros();
                for (NameState st : s.names.values()) {
                    if (st.name.startsWith(p)) {
                        clean(st, now);
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

    private NameStatus status(NameState st, long now) {
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

    /** Forgets idle names, keeping their floor and generation as a per-shard bound; reschedules itself. */
    private void sweep() {
        if (closed) {
            return;
        }
        int forgotten = 0;
        for (Shard s : shards) {
            s.lock.lock();
            try {
                long now = time.nowMicros();
                Iterator<NameState> it = s.names.values().iterator();
                while (it.hasNext()) {
                    NameState st = it.next();
                    clean(st, now);
                    if (st.idle() && st.wakeTimer == null && st.lastTouched + idleRetention <= now
                            && st.writableFrom <= now && st.floor < now) {
                        s.forgottenFloor = Math.max(s.forgottenFloor, st.floor);
                        s.forgottenGeneration = Math.max(s.forgottenGeneration, st.generation);
                        it.remove();
                        forgotten++;
                    }
                }
            } finally {
                s.lock.unlock();
            }
        }
        if (forgotten > 0) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-1003 forgot {0} idle names", forgotten);
        }
        if (!closed) {
            time.schedule(Micros.plus(time.nowMicros(), Math.max(1_000_000L, idleRetention / 2)), this::sweep);
        }
    }

    /** The number of names the engine currently remembers (for tests and metrics). */
    public int rememberedNames() {
        int n = 0;
        for (Shard s : shards) {
            s.lock.lock();
            try {
                n += s.names.size();
            } finally {
                s.lock.unlock();
            }
        }
        return n;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        sweeper.cancel();
        TimeSource.Timer m = markTimer;
        if (m != null) {
            m.cancel();
        }
        List<Waiter> waiting = new ArrayList<>();
        for (Shard s : shards) {
            s.lock.lock();
            try {
                for (NameState st : s.names.values()) {
                    waiting.addAll(st.waiters);
                    st.waiters.clear();
                    if (st.wakeTimer != null) {
                        st.wakeTimer.cancel();
                        st.wakeTimer = null;
                    }
                }
            } finally {
                s.lock.unlock();
            }
        }
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

    // ---------------------------------------------------------------------------------------------------- helpers

    private void ensureOpen() throws LeaseServiceUnavailableException {
        if (closed) {
            throw new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " is closed");
        }
    }

    private void ensureUnfenced(long now) throws LeaseServiceUnavailableException {
        if (now >= fence || now >= horizon) {
            throw fenced(now);
        }
    }

    private LeaseServiceUnavailableException fenced(long now) {
        if (now < fence) {
            long h = horizon;
            return new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " grants, renews and "
                    + "upgrades nothing " + (h == Long.MIN_VALUE ? "yet" : "since " + Micros.toInstant(h))
                    + ": it could not record its time mark, which must stay ahead of everything it grants ("
                    + (markFailure == null ? "the record is late" : markFailure) + "); retry shortly, and see the log "
                    + "of the service");
        }
        return new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " grants, renews and "
                + "upgrades nothing since " + Micros.toInstant(fence) + ": " + fenceReason);
    }

    private LeaseServiceUnavailableException unavailable(long now) {
        String behind = timeBase > startedAt ? " (counted from " + Micros.toInstant(timeBase) + ", the time mark its "
                + "last incarnation recorded, which is ahead of its clock)" : "";
        return new LeaseServiceUnavailableException(availableFromInstant, "the lease service " + serviceId
                + " started at " + Micros.toInstant(startedAt) + " and grants nothing until " + availableFromInstant
                + " (its quiet period" + behind + ", so that every lease an earlier incarnation granted is over); it is "
                + "now " + Micros.toInstant(now) + ": retry then, or wait longer");
    }

    private LeaseBusyException busy(Waiter w, Verdict v, long now, boolean waited) {
        NameState st = v.blockedOn;
        String name = st == null ? w.names[0] : st.name;
        StringBuilder sb = new StringBuilder();
        sb.append('\'').append(LeaseNames.printable(name)).append("' is ");
        if (v.blockedByQueue || st == null) {
            sb.append("promised to ").append(st == null ? 0 : st.waiters.size()).append(" earlier waiting request(s)");
        } else {
            sb.append("held (");
            int shown = 0;
            for (Holding h : st.holders) {
                if (shown++ == 3) {
                    sb.append(", ...");
                    break;
                }
                if (shown > 1) {
                    sb.append(", ");
                }
                sb.append(h.kind.name().toLowerCase(java.util.Locale.ROOT)).append(' ').append(h.mode).append(" by ")
                        .append(h.holder).append(" until ").append(Micros.toInstant(h.deadline));
            }
            sb.append(')');
        }
        if (waited) {
            sb.append("; waited ").append(Duration.ofNanos((now - w.since) * 1_000L).toMillis()).append(" ms");
        } else {
            sb.append("; not waiting (zero wait)");
        }
        sb.append(": retry later, or wait longer");
        return new LeaseBusyException(name, v.heldUntil == Long.MIN_VALUE ? null : Micros.toInstant(v.heldUntil),
                sb.toString());
    }

    private NameState[] states(Waiter w, long now) {
        NameState[] states = new NameState[w.names.length];
        for (int i = 0; i < states.length; i++) {
            states[i] = stateOf(w.names[i], now);
        }
        return states;
    }

    private NameState stateOf(String name, long now) {
        Shard s = shardOf(name);
        NameState st = s.names.get(name);
        if (st == null) {
            long gen = Math.max(generationBase, s.forgottenGeneration) + offsets.offset(name);
            long floor = Math.max(initialFloor, s.forgottenFloor);
            st = new NameState(name, gen, floor, now);
            s.names.put(name, st);
        }
        return st;
    }

    /**
     * The shard of a name: the high bits of the name's hash times the golden ratio. Not the low bits HashMap indexes
     * by: with those, every name of a shard would share its bucket bits in the shard's map, filling 1/shards of the
     * buckets with long (treeified) chains.
     */
    private int shardIndex(String name) {
        return shardIndex(name, shardMask);
    }

    static int shardIndex(String name, int shardMask) {
        return Integer.rotateLeft(name.hashCode() * 0x9E3779B9, 16) & shardMask;
    }

    private Shard shardOf(String name) {
        return shards[shardIndex(name)];
    }

    private int[] shardsOf(String[] names) {
        if (names.length == 1) {
            return new int[] {shardIndex(names[0])};
        }
        int[] idx = new int[names.length];
        for (int i = 0; i < names.length; i++) {
            idx[i] = shardIndex(names[i]);
        }
        Arrays.sort(idx);
        int n = 0;
        for (int i = 0; i < idx.length; i++) {
            if (i == 0 || idx[i] != idx[i - 1]) {
                idx[n++] = idx[i];
            }
        }
        return n == idx.length ? idx : Arrays.copyOf(idx, n);
    }

    private int[] shardsOf(Lease lease) throws InvalidLeaseRequestException {
        if (lease == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease is null");
        }
        List<LeaseGrant> grants = lease.grants();
        if (grants.isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        if (grants.size() == 1) {
            String only = grants.get(0).name();
            if (only == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
            return new int[] {shardIndex(only)};
        }
        String[] names = new String[grants.size()];
        for (int i = 0; i < names.length; i++) {
            names[i] = grants.get(i).name();
            if (names[i] == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
        }
        return shardsOf(names);
    }

    private void lockAll(int[] idx) {
        for (int i : idx) {
            shards[i].lock.lock();
        }
    }

    private void unlockAll(int[] idx) {
        for (int i = idx.length - 1; i >= 0; i--) {
            shards[idx[i]].lock.unlock();
        }
    }

    /** One lock stripe: its names and the bounds it keeps for names it forgot. */
    private static final class Shard {
        final ReentrantLock lock = new ReentrantLock();
        final HashMap<String, NameState> names = new HashMap<>();
        final int index;
        long idCounter;
        long forgottenFloor = Long.MIN_VALUE;
        long forgottenGeneration;

        Shard(int index) {
            this.index = index;
        }
    }
}
