package org.leasehold.remote;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import io.grpc.stub.StreamObserver;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.SessionListener;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.CheckReply;
import org.leasehold.wire.proto.CheckRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InspectReply;
import org.leasehold.wire.proto.InspectRequest;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.UpgradeRequest;

/**
 * The remote mode: a {@link LeaseService} served by one or more Leasehold lease servers, with the same semantics as
 * the embedded engine (it passes the same contract tests).
 *
 * <ul>
 *   <li><b>Connections.</b> One HTTP/2 connection per server by default ({@link RemoteClientConfig#connections()}
 *       sets more), shared by every thread: every lease call travels in batches on the connection's one session
 *       stream. With several connections, a name's calls always take the same one. With
 *       {@link RemoteClientConfig.Transport#SOCKET} the lease calls take the server's socket transport instead
 *       ({@link SocketSession}: the calling thread writes its request and reads its answer itself); admin views,
 *       fencing checks and clock samples stay on gRPC.
 *   <li><b>Sharding (L11).</b> Each name lives on one server of the set, chosen by rendezvous hashing
 *       ({@link Rendezvous}). A request whose names span servers is taken server by server in canonical order (sorted
 *       addresses, names sorted within each), all or nothing: a part that fails releases the parts already held.
 *       Its lease reports the latest grant time and the earliest deadline of its parts.
 *   <li><b>Migration.</b> With {@link RemoteClientConfig#previousServers()}, every name is leased on its old server
 *       and on its new one (old first: the old set stays authoritative for generations and fencing) until the old
 *       set's longest lease is over (its maximum lease plus grace plus the clock error bound, counted from the
 *       migration's start); floors and {@code writableFrom} are the highest of both. Then only the new set is used.
 *   <li><b>Waiting.</b> A waiting acquisition waits on the server, which answers when it is decided; cancelling the
 *       future (or interrupting the thread) sends a withdrawal, and a lease granted meanwhile is released at once.
 *   <li><b>Time.</b> All instants are in service time. {@link #now()} is the first server's time estimated from the
 *       local clock and a measured offset ({@link #clockOffset()}); against a server on a test clock it asks the
 *       server each time.
 *   <li><b>Failures.</b> An unreachable server is reported as {@link LeaseServiceUnavailableException} (with no
 *       {@code availableAt}); a restarted server answers with its quiet period's end. Leases are not tied to
 *       connections: a lease whose holder lost its connection is over at its deadline, not before.
 * </ul>
 */
public final class RemoteLeaseService implements LeaseService {
    private static final System.Logger LOG = System.getLogger(RemoteLeaseService.class.getName());

    private final RemoteClientConfig config;
    private final TimeSource local;
    private final boolean ownsTime;
    private final List<Endpoint> current;
    private final List<String> currentAddresses;
    private final List<Endpoint> previous;
    private final List<String> previousAddresses;
    private final long migrationStart;
    private volatile long migrationEnd = Long.MAX_VALUE;
    private volatile boolean migrating;
    /** Set once, by the call that found the migration window over. */
    private final AtomicBoolean migrationOver = new AtomicBoolean();
    private final Map<LeaseKey, Parts> migrationParts = new ConcurrentHashMap<>();
    private final String serviceId;
    private final long requestIdBase = new SecureRandom().nextLong() & 0xffff_ffff_0000_0000L;
    private final AtomicLong requestCounter = new AtomicLong();
    private volatile LeaseKeeper keeper;
    private volatile boolean closed;

    /** Connects with {@code config} on the real clock. */
    public RemoteLeaseService(RemoteClientConfig config) {
        this(config, new SystemTimeSource("leasehold-client-timer"), true);
    }

    /** Connects with {@code config}; local time and timers come from {@code local}. */
    public RemoteLeaseService(RemoteClientConfig config, TimeSource local) {
        this(config, local, false);
    }

    private RemoteLeaseService(RemoteClientConfig config, TimeSource local, boolean ownsTime) {
        this.config = config.validate();
        this.local = local;
        this.ownsTime = ownsTime;
        this.currentAddresses = List.copyOf(config.servers());
        this.previousAddresses = List.copyOf(config.previousServers());
        Map<String, Endpoint> byAddress = new LinkedHashMap<>();
        List<Endpoint> cur = new ArrayList<>();
        for (String a : currentAddresses) {
            cur.add(byAddress.computeIfAbsent(a, x -> new Endpoint(x, config, local)));
        }
        List<Endpoint> prev = new ArrayList<>();
        for (String a : previousAddresses) {
            prev.add(byAddress.computeIfAbsent(a, x -> new Endpoint(x, config, local)));
        }
        this.current = List.copyOf(cur);
        this.previous = List.copyOf(prev);
        this.migrating = !prev.isEmpty();
        this.migrationStart = config.migrationStartedAt() != null ? Micros.of(config.migrationStartedAt())
                : local.nowMicros();
        List<String> sorted = new ArrayList<>(currentAddresses);
        Collections.sort(sorted);
        this.serviceId = "leasehold-remote:" + String.join(",", sorted);
        for (Endpoint e : byAddress.values()) {
            try {
                e.syncNow();
            } catch (LeaseException ex) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-3001 lease server {0} did not answer the first "
                        + "clock sample ({1}); "
                        + "calls will retry it", e.address, ex.getMessage());
            }
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3002 remote lease service connected: {0}", config);
    }

    /** Connects from string properties (see {@link RemoteClientConfig#fromProperties}). */
    public static RemoteLeaseService connect(Map<String, String> properties) {
        return new RemoteLeaseService(RemoteClientConfig.fromProperties(properties));
    }

    public RemoteClientConfig config() {
        return config;
    }

    /** The measured offset of the first server's clock, and its error bound. */
    public ClockOffset clockOffset() {
        return current.get(0).clockOffset();
    }

    /** The measured offset of the server at {@code address}. */
    public ClockOffset clockOffset(String address) {
        return endpoint(address).clockOffset();
    }

    private Endpoint endpoint(String address) {
        for (Endpoint e : endpoints()) {
            if (e.address.equals(address)) {
                return e;
            }
        }
        throw new IllegalArgumentException("no server " + address + " in " + currentAddresses + " " + previousAddresses);
    }

    /**
     * The measured offset of every server this client uses (the current set, then the old one during a migration),
     * by address, as last measured; a server not measured yet reports an error bound of a century.
     */
    public Map<String, ClockOffset> clockOffsets() {
        Map<String, ClockOffset> all = new LinkedHashMap<>();
        for (Endpoint e : endpoints()) {
            all.put(e.address, e.clockOffset());
        }
        return all;
    }

    /**
     * Measures the offset of the server at {@code address} now (a few samples, one call each), instead of waiting
     * for the next periodic measurement.
     *
     * @throws LeaseException the server did not answer (unavailable, permission denied, ...)
     */
    public ClockOffset measureClockOffset(String address) throws LeaseException {
        Endpoint e = endpoint(address);
        e.syncNow();
        return e.clockOffset();
    }

    /** True while names are leased on both the old and the new server set. */
    public boolean migrating() {
        return inMigration();
    }

    /** The server (address) that holds {@code name} now: the old set's during a migration. */
    public String serverFor(String name) {
        return route(name).get(0).address;
    }

    // ------------------------------------------------------------------------------------------------ routing

    private List<Endpoint> endpoints() {
        List<Endpoint> all = new ArrayList<>(current);
        for (Endpoint e : previous) {
            if (!all.contains(e)) {
                all.add(e);
            }
        }
        return all;
    }

    private boolean inMigration() {
        if (!migrating) {
            return false;
        }
        long end = migrationEnd;
        if (end == Long.MAX_VALUE) {
            end = computeMigrationEnd();
        }
        if (local.nowMicros() >= end) {
            migrating = false;
            if (migrationOver.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3003 migration over: every lease of the old servers {0} has "
                        + "ended; using only {1}", previousAddresses, currentAddresses);
                sweepLeftoverParts();
            }
            return false;
        }
        return true;
    }

    /** The old set's longest lease plus grace plus clock error, from the migration's start; MAX while unknown. */
    private synchronized long computeMigrationEnd() {
        if (migrationEnd != Long.MAX_VALUE) {
            return migrationEnd;
        }
        long longest = 0;
        for (Endpoint e : previous) {
            try {
                InfoReply r = e.info();
                long error = Math.min(e.clockOffset().errorBound().toNanos() / 1_000L, 60_000_000L);
                longest = Math.max(longest, r.getMaxLeaseMicros() + r.getGraceMicros() + Math.max(error, 500_000L));
            } catch (LeaseException ex) {
                // Unknown: stay in migration (the safe side) and ask again next time.
                return Long.MAX_VALUE;
            }
        }
        migrationEnd = migrationStart + longest;
        return migrationEnd;
    }

    /** The servers of {@code name}, primary first (the old one during a migration). */
    private List<Endpoint> route(String name) {
        Endpoint cur = current.get(Rendezvous.pick(currentAddresses, name));
        if (!inMigration()) {
            return List.of(cur);
        }
        Endpoint old = previous.get(Rendezvous.pick(previousAddresses, name));
        return old == cur ? List.of(cur) : List.of(old, cur);
    }

    /** One server's part of a lease. */
    private record Part(Endpoint endpoint, Lease lease) {
    }

    /** The parts of a lease taken on both sets during a migration, and when it ends (local micros). */
    private record Parts(List<Part> parts, long expiresLocal) {
    }

    /** Identifies a lease value across renewals: holder, names and generations. */
    private record LeaseKey(HolderId holder, List<String> names, List<Long> generations) {
        static LeaseKey of(Lease l) {
            List<String> names = new ArrayList<>(l.grants().size());
            List<Long> gens = new ArrayList<>(l.grants().size());
            for (LeaseGrant g : l.grants()) {
                names.add(g.name());
                gens.add(g.generation());
            }
            return new LeaseKey(l.holder(), names, gens);
        }
    }

    /** Splits a lease value into its servers' parts, in canonical server order. */
    private List<Part> partsOf(Lease lease) throws LeaseException {
        if (lease == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease is null");
        }
        if (lease.grants().isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        if (!migrationParts.isEmpty()) {
            Parts stored = migrationParts.get(LeaseKey.of(lease));
            if (stored != null) {
                List<Part> out = new ArrayList<>(stored.parts.size());
                for (Part p : stored.parts) {
                    out.add(new Part(p.endpoint, withKind(p.lease, lease)));
                }
                return out;
            }
        }
        if (current.size() == 1 && !migrating) {
            return List.of(new Part(current.get(0), lease));
        }
        TreeMap<String, List<LeaseGrant>> byServer = new TreeMap<>();
        Map<String, Endpoint> endpoints = new TreeMap<>();
        for (LeaseGrant g : lease.grants()) {
            if (g.name() == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
            Endpoint e = route(g.name()).get(0);
            byServer.computeIfAbsent(e.address, k -> new ArrayList<>()).add(g);
            endpoints.put(e.address, e);
        }
        List<Part> parts = new ArrayList<>(byServer.size());
        for (Map.Entry<String, List<LeaseGrant>> en : byServer.entrySet()) {
            parts.add(new Part(endpoints.get(en.getKey()), new Lease(lease.holder(), lease.mode(), lease.kind(),
                    lease.grantedAt(), lease.deadline(), en.getValue())));
        }
        return parts;
    }

    private static Lease withKind(Lease part, Lease whole) {
        if (part.kind() == whole.kind()) {
            return part;
        }
        return new Lease(part.holder(), part.mode(), whole.kind(), part.grantedAt(), part.deadline(), part.grants());
    }

    // ------------------------------------------------------------------------------------------------ service

    @Override
    public String serviceId() {
        return serviceId;
    }

    @Override
    public Instant now() {
        Endpoint e = current.get(0);
        try {
            if (e.testClock()) {
                return ProtoCodec.instant(e.fetchInfo().getNowMicros());
            }
            return e.estimatedNow();
        } catch (LeaseException ex) {
            throw new RemoteCallFailedException("cannot read the time of lease server " + e.address, ex);
        }
    }

    @Override
    public Instant availableFrom() {
        long max = Long.MIN_VALUE;
        List<Endpoint> all = inMigration() ? endpoints() : current;
        for (Endpoint e : all) {
            try {
                max = Math.max(max, e.fetchInfo().getAvailableFromMicros());
            } catch (LeaseException ex) {
                throw new RemoteCallFailedException("cannot ask lease server " + e.address + " for its quiet period", ex);
            }
        }
        return ProtoCodec.instant(max);
    }

    @Override
    public Lease acquire(LeaseRequest request) throws LeaseException, InterruptedException {
        // This thread waits for the answer: on the socket transport it reads it itself.
        CompletableFuture<Lease> f = acquireAsync(request, true);
        try {
            return f.get();
        } catch (InterruptedException e) {
            f.cancel(false);
            throw e;
        } catch (ExecutionException e) {
            throw unwrap(e.getCause());
        }
    }

    private static LeaseException unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        if (t instanceof LeaseException le) {
            return le;
        }
        if (t instanceof CancellationException) {
            return new LeaseServiceUnavailableException(null, "the request was cancelled before it was granted");
        }
        if (t instanceof RuntimeException re) {
            throw re;
        }
        throw new IllegalStateException("remote lease client failure", t);
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(LeaseRequest request) {
        return acquireAsync(request, false);
    }

    private CompletableFuture<Lease> acquireAsync(LeaseRequest request, boolean callerWaits) {
        if (request == null) {
            return CompletableFuture.failedFuture(new InvalidLeaseRequestException(Reason.NULL_ARGUMENT,
                    "the lease request is null"));
        }
        if (closed) {
            return CompletableFuture.failedFuture(closedException());
        }
        String[] names;
        try {
            names = LeaseNames.canonical(request.names(), Integer.MAX_VALUE);
        } catch (LeaseException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (current.size() == 1 && !migrating) {
            return single(current.get(0), request, List.of(names), callerWaits);
        }
        // Group by server, in canonical (sorted address) order; during a migration a name is in two groups.
        TreeMap<String, List<String>> groups = new TreeMap<>();
        Map<String, Endpoint> endpoints = new TreeMap<>();
        Map<String, Endpoint> primaryOf = new TreeMap<>();
        for (String name : names) {
            List<Endpoint> route = route(name);
            primaryOf.put(name, route.get(0));
            for (Endpoint e : route) {
                groups.computeIfAbsent(e.address, k -> new ArrayList<>()).add(name);
                endpoints.put(e.address, e);
            }
        }
        if (groups.size() == 1) {
            Endpoint only = endpoints.values().iterator().next();
            return single(only, request, List.of(names), callerWaits);
        }
        boolean dual = primaryOf.size() < names.length || groups.values().stream().mapToInt(List::size).sum() > names.length;
        List<Map.Entry<Endpoint, List<String>>> steps = new ArrayList<>();
        for (Map.Entry<String, List<String>> g : groups.entrySet()) {
            steps.add(Map.entry(endpoints.get(g.getKey()), g.getValue()));
        }
        return new MultiAcquire(request, steps, primaryOf, dual).start();
    }

    private long nextRequestId() {
        return requestIdBase | (requestCounter.incrementAndGet() & 0xffff_ffffL);
    }

    /**
     * One server's acquisition, sent on its acquisition stream: the answer arrives when the server decides.
     * Cancelling the future withdraws the request; without an answer by the wait plus the call timeout (on the local
     * clock; not against a test clock) it fails as unavailable and is withdrawn.
     */
    private CompletableFuture<Lease> single(Endpoint e, LeaseRequest request, List<String> names, boolean callerWaits) {
        long id = nextRequestId();
        AcquireRequest wire = ProtoCodec.acquire(request, names).toBuilder().setRequestId(id).build();
        long timeoutMillis;
        try {
            timeoutMillis = callTimeoutFor(e, request);
        } catch (LeaseException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        SessionChannel session;
        try {
            session = e.session(names.get(0), lease -> releaseQuietly(e, lease), this::nextRequestId);
        } catch (LeaseException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        CompletableFuture<Lease> result = session.acquire(wire, callerWaits);
        if (timeoutMillis > 0 && !result.isDone()) {
            TimeSource.Timer timer = local.schedule(Micros.plus(local.nowMicros(), timeoutMillis * 1_000L), () -> {
                if (result.completeExceptionally(new LeaseServiceUnavailableException(null, "lease server " + e.address
                        + " did not answer the acquisition within " + timeoutMillis + " ms (its wait plus the call "
                        + "timeout); it was withdrawn"))) {
                    e.nudge();
                    session.withdraw(id, false);
                }
            });
            result.whenComplete((l, f) -> timer.cancel());
        }
        result.whenComplete((lease, failure) -> {
            if (failure instanceof CancellationException) {
                withdraw(session, id);
            }
        });
        return result;
    }

    /** How long to wait for an answer: the wait plus the call timeout; unbounded against a test clock. */
    private long callTimeoutFor(Endpoint e, LeaseRequest request) throws LeaseException {
        long base = config.callTimeout().toMillis();
        if (request.maxWait().isZero() || request.maxWait().isNegative()) {
            return base;
        }
        if (e.testClock()) {
            // A test clock moves only when a test says so: the server decides when the wait is over.
            return 0;
        }
        long wait;
        try {
            wait = request.maxWait().toMillis();
        } catch (ArithmeticException tooLong) {
            return 0;
        }
        return wait > Long.MAX_VALUE / 2 ? 0 : wait + base;
    }

    /**
     * Withdraws a waiting request. From an application thread it waits (up to the call timeout) for the server's
     * answer, so that once {@code cancel} returns the request is out of the queue, as with the embedded engine; a
     * grant that crossed the withdrawal is released when it arrives. From a transport thread it does not wait.
     */
    private void withdraw(SessionChannel session, long requestId) {
        boolean transport = session.onTransportThread();
        CompletableFuture<Boolean> ack = session.withdraw(requestId, !transport);
        if (transport) {
            return;
        }
        boolean interrupted = Thread.interrupted();
        try {
            ack.get(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException ex) {
            interrupted = true;
        } catch (ExecutionException | java.util.concurrent.TimeoutException ex) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3004 withdrawing request {0} got no answer: {1}",
                    Long.toHexString(requestId), ex.toString());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private void releaseQuietly(Endpoint e, Lease lease) {
        e.async.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .release(ReleaseRequest.newBuilder().setLease(ProtoCodec.ref(lease)).build(), new StreamObserver<>() {
                    @Override
                    public void onNext(ReleaseReply value) {
                        if (value.hasError()) {
                            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3005 releasing an unwanted grant at {0}: {1}",
                                    e.address, value.getError().getMessage());
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-3006 releasing an unwanted grant of {0} at {1} "
                                + "failed ({2}); it ends at its deadline {3}", lease.describe(), e.address, t.getMessage(),
                                lease.deadline());
                    }

                    @Override
                    public void onCompleted() {
                        // Nothing more to do.
                    }
                });
    }

    /** A request whose names span servers: taken server by server in canonical order, all or nothing. */
    private final class MultiAcquire {
        private final LeaseRequest request;
        private final List<Map.Entry<Endpoint, List<String>>> steps;
        private final Map<String, Endpoint> primaryOf;
        private final boolean dual;
        private final long startLocal = local.nowMicros();
        private final List<Part> held = Collections.synchronizedList(new ArrayList<>());
        private final CompletableFuture<Lease> outer = new CompletableFuture<>();
        private final AtomicReference<CompletableFuture<Lease>> step = new AtomicReference<>();

        MultiAcquire(LeaseRequest request, List<Map.Entry<Endpoint, List<String>>> steps, Map<String, Endpoint> primaryOf,
                boolean dual) {
            this.request = request;
            this.steps = steps;
            this.primaryOf = primaryOf;
            this.dual = dual;
        }

        CompletableFuture<Lease> start() {
            outer.whenComplete((l, f) -> {
                if (f instanceof CancellationException) {
                    CompletableFuture<Lease> s = step.get();
                    if (s != null) {
                        s.cancel(false);
                    }
                    rollback();
                }
            });
            next(0);
            return outer;
        }

        private void next(int i) {
            if (outer.isDone()) {
                rollback();
                return;
            }
            if (i == steps.size()) {
                Lease combined = combine();
                if (!combined.deadline().isAfter(combined.grantedAt())) {
                    // An earlier part ran out while a later one waited: the parts never were all held at once.
                    rollback();
                    outer.completeExceptionally(new LeaseBusyException(null, null, "the parts of the request on "
                            + "different servers could not be held at once: one ended at " + combined.deadline()
                            + " before the last was granted at " + combined.grantedAt() + "; ask again (with a longer "
                            + "lease time or a shorter wait)"));
                    return;
                }
                if (dual) {
                    long remaining = Micros.of(Duration.between(combined.grantedAt(), combined.deadline()));
                    migrationParts.put(LeaseKey.of(combined), new Parts(List.copyOf(held),
                            local.nowMicros() + remaining + 60_000_000L));
                    sweepParts();
                    if (migrationOver.get()) {
                        // Taken across the window's end: the sweep after the migration may have looked already.
                        sweepLeftoverParts();
                    }
                }
                if (!outer.complete(combined)) {
                    rollback();
                }
                return;
            }
            Map.Entry<Endpoint, List<String>> s = steps.get(i);
            LeaseRequest part = request;
            if (i > 0 && !request.maxWait().isZero()) {
                long left = Micros.of(request.maxWait()) - (local.nowMicros() - startLocal);
                part = new LeaseRequest(request.holder(), request.names(), request.mode(), request.kind(),
                        request.deadline(), request.leaseTime(), Duration.ofNanos(Math.max(0, left) * 1_000L),
                        request.startedAt());
            }
            CompletableFuture<Lease> f = single(s.getKey(), part, s.getValue(), false);
            step.set(f);
            f.whenComplete((lease, failure) -> {
                if (failure != null) {
                    rollback();
                    outer.completeExceptionally(failure instanceof CancellationException
                            ? new LeaseServiceUnavailableException(null, "the request was cancelled") : failure);
                } else {
                    held.add(new Part(s.getKey(), lease));
                    next(i + 1);
                }
            });
        }

        private void rollback() {
            List<Part> toRelease;
            synchronized (held) {
                toRelease = new ArrayList<>(held);
                held.clear();
            }
            for (Part p : toRelease) {
                releaseQuietly(p.endpoint, p.lease);
            }
        }

        private Lease combine() {
            List<Part> parts;
            synchronized (held) {
                parts = new ArrayList<>(held);
            }
            Instant grantedAt = parts.get(0).lease.grantedAt();
            Instant deadline = parts.get(0).lease.deadline();
            for (Part p : parts) {
                grantedAt = p.lease.grantedAt().isAfter(grantedAt) ? p.lease.grantedAt() : grantedAt;
                deadline = p.lease.deadline().isBefore(deadline) ? p.lease.deadline() : deadline;
            }
            List<LeaseGrant> grants = new ArrayList<>();
            for (Map.Entry<String, Endpoint> en : primaryOf.entrySet()) {
                String name = en.getKey();
                LeaseGrant primary = null;
                Instant floor = null;
                Instant writableFrom = null;
                for (Part p : parts) {
                    for (LeaseGrant g : p.lease.grants()) {
                        if (!g.name().equals(name)) {
                            continue;
                        }
                        if (p.endpoint == en.getValue()) {
                            primary = g;
                        }
                        floor = floor == null || g.floor().isAfter(floor) ? g.floor() : floor;
                        writableFrom = writableFrom == null || g.writableFrom().isAfter(writableFrom)
                                ? g.writableFrom() : writableFrom;
                    }
                }
                if (primary == null) {
                    throw new IllegalStateException("no grant of " + name + " from its server " + en.getValue().address);
                }
                grants.add(new LeaseGrant(name, primary.generation(), primary.correlationId(), floor, writableFrom,
                        primary.predecessor()));
            }
            Lease first = parts.get(0).lease;
            return new Lease(first.holder(), first.mode(), first.kind(), grantedAt, deadline, grants);
        }
    }

    /**
     * After the migration: leases taken on both sets before its end keep their parts until they end (renew, upgrade
     * and release still go to both; a release forgets its own). Those never released are forgotten here once they
     * are over, and the sweep comes back when the next one will be.
     */
    private void sweepLeftoverParts() {
        if (closed) {
            return;
        }
        long now = local.nowMicros();
        migrationParts.values().removeIf(p -> p.expiresLocal < now);
        long next = Long.MAX_VALUE;
        for (Parts p : migrationParts.values()) {
            next = Math.min(next, p.expiresLocal);
        }
        if (next != Long.MAX_VALUE) {
            local.schedule(next + 1, this::sweepLeftoverParts);
        }
    }

    /**
     * Leases taken on both server sets of a migration that this client still keeps the parts of: until each is
     * released, or over once the migration has ended. For diagnostics.
     */
    public int migrationLeasesKept() {
        return migrationParts.size();
    }

    private void sweepParts() {
        if (migrationParts.size() < 1_024) {
            return;
        }
        long now = local.nowMicros();
        migrationParts.values().removeIf(p -> p.expiresLocal < now);
    }

    @Override
    public Lease upgrade(Lease lease, Instant deadline) throws LeaseException {
        List<Part> parts = partsOf(lease);
        List<Part> done = new ArrayList<>(parts.size());
        for (Part p : parts) {
            UpgradeRequest.Builder b = UpgradeRequest.newBuilder().setLease(ProtoCodec.ref(p.lease));
            if (deadline != null) {
                b.setDeadlineMicros(ProtoCodec.micros(deadline));
            }
            SessionReply r = onSession(p.endpoint, p.lease.grants().get(0).name(), "upgrade", SessionRequest.newBuilder().setUpgrade(b),
                    SessionReply.ResultCase.LEASE);
            done.add(new Part(p.endpoint, ProtoCodec.lease(r.getLease())));
        }
        return merge(lease, parts, done);
    }

    @Override
    public Lease renew(Lease lease, Instant deadline, String metadata) throws LeaseException {
        return renew(lease, deadline, metadata, null);
    }

    /**
     * Renews the lease for the longest the servers grant and asks them to hold it in doubt until {@code until}: they
     * renew it themselves meanwhile, whether or not this client does (see {@link LeaseService#holdInDoubt}).
     */
    @Override
    public Lease holdInDoubt(Lease lease, Instant until) throws LeaseException {
        if (until == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "holding a lease in doubt needs an end");
        }
        return renew(lease, now().plus(Duration.ofDays(1)), null, until);
    }

    private Lease renew(Lease lease, Instant deadline, String metadata, Instant holdUntil) throws LeaseException {
        if (deadline == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "renew needs a deadline");
        }
        List<Part> parts = partsOf(lease);
        List<Part> done = new ArrayList<>(parts.size());
        for (Part p : parts) {
            RenewRequest.Builder b = RenewRequest.newBuilder().setLease(ProtoCodec.ref(p.lease))
                    .setDeadlineMicros(ProtoCodec.micros(deadline));
            if (metadata != null) {
                b.setMetadata(metadata);
            }
            if (holdUntil != null) {
                b.setHoldInDoubtUntilMicros(ProtoCodec.micros(holdUntil));
            }
            SessionReply r = onSession(p.endpoint, p.lease.grants().get(0).name(), "renewal", SessionRequest.newBuilder().setRenew(b),
                    SessionReply.ResultCase.LEASE);
            done.add(new Part(p.endpoint, ProtoCodec.lease(r.getLease())));
        }
        return merge(lease, parts, done);
    }

    /**
     * Sends a request the server answers at once (release, renew, upgrade, echo) on the session stream of
     * {@code name}'s connection to {@code e} (where the lease was acquired) and waits up to the call timeout for the
     * answer; an error answer is thrown as the API's exception, and an answer of another kind than {@code expected} as
     * a failed call.
     */
    private SessionReply onSession(Endpoint e, String name, String what, SessionRequest.Builder request,
            SessionReply.ResultCase expected) throws LeaseException {
        long id = nextRequestId();
        SessionChannel session = e.session(name, lease -> releaseQuietly(e, lease), this::nextRequestId);
        CompletableFuture<SessionReply> f = session.call(id, request);
        long timeoutMillis = config.callTimeout().toMillis();
        SessionReply r;
        try {
            r = f.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof LeaseException le) {
                throw le;
            }
            throw new LeaseServiceUnavailableException(null, "the " + what + " at lease server " + e.address
                    + " failed: " + ex.getCause(), ex.getCause());
        } catch (java.util.concurrent.TimeoutException ex) {
            e.nudge();
            throw new LeaseServiceUnavailableException(null, "lease server " + e.address + " did not answer the " + what
                    + " within the call timeout (" + timeoutMillis + " ms); it may or may not have taken effect: retry, "
                    + "and check that the server runs and the network reaches it");
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new LeaseServiceUnavailableException(null, "interrupted while waiting for lease server " + e.address
                    + " to answer the " + what + "; it may or may not have taken effect", ex);
        }
        if (r.hasError()) {
            throw ProtoCodec.exception(r.getError(), e.address);
        }
        if (r.getResultCase() != expected) {
            throw new LeaseException("lease server " + e.address + " answered the " + what + " with " + r.getResultCase()
                    + " where " + expected + " was due; is it a server of another release? Use matching client and "
                    + "server versions");
        }
        return r;
    }

    /** The whole lease after an upgrade or renewal of its parts: the earliest deadline, the caller's grants. */
    private Lease merge(Lease original, List<Part> before, List<Part> after) {
        if (after.size() == 1 && before.size() == 1 && before.get(0).lease == original) {
            return after.get(0).lease;
        }
        Instant deadline = after.get(0).lease.deadline();
        for (Part p : after) {
            deadline = p.lease.deadline().isBefore(deadline) ? p.lease.deadline() : deadline;
        }
        Lease merged = new Lease(original.holder(), original.mode(), after.get(0).lease.kind(), original.grantedAt(),
                deadline, original.grants());
        LeaseKey key = LeaseKey.of(original);
        Parts stored = migrationParts.get(key);
        if (stored != null) {
            // A renewal moves the deadline: keep the parts at least as long past it as when they were taken.
            long remaining = Math.max(0, Micros.of(Duration.between(merged.grantedAt(), merged.deadline())));
            migrationParts.put(key, new Parts(List.copyOf(after), Math.max(stored.expiresLocal,
                    local.nowMicros() + remaining + 60_000_000L)));
        }
        return merged;
    }

    @Override
    public Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException {
        List<Part> parts = partsOf(lease);
        Instant ended = null;
        LeaseException first = null;
        for (Part p : parts) {
            ReleaseRequest.Builder b = ReleaseRequest.newBuilder().setLease(ProtoCodec.ref(p.lease));
            if (watermark != null) {
                b.setWatermarkMicros(ProtoCodec.micros(watermark));
            }
            if (metadata != null) {
                b.setMetadata(metadata);
            }
            try {
                SessionReply r = onSession(p.endpoint, p.lease.grants().get(0).name(), "release", SessionRequest.newBuilder().setRelease(b),
                        SessionReply.ResultCase.ENDED_AT_MICROS);
                Instant at = ProtoCodec.instant(r.getEndedAtMicros());
                // The lease as a whole ended when its first part did (the others follow within this call).
                ended = ended == null || at.isBefore(ended) ? at : ended;
            } catch (LeaseException e) {
                if (first == null) {
                    first = e;
                }
                if (parts.size() == 1 || e instanceof InvalidLeaseRequestException) {
                    // A refused release changes nothing; with a bad argument every part would refuse alike.
                    throw e;
                }
            }
        }
        if (first != null) {
            throw first;
        }
        if (parts.size() > 1) {
            migrationParts.remove(LeaseKey.of(lease));
        }
        return ended;
    }

    /**
     * One round trip to the server {@code name} belongs to, on the session stream every lease call of this client
     * shares: an echo it answers at once, touching no lease. For probes, and as the floor of what any call costs (the
     * peer benchmarks' echo).
     *
     * @return the round trip, on the local clock
     * @throws LeaseServiceUnavailableException if the server cannot be reached or does not answer within the call
     *         timeout
     */
    public Duration ping(String name) throws LeaseException {
        if (name == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "ping needs a name (it picks the server)");
        }
        Endpoint e = route(name).get(0);
        long t0 = local.nowMicros();
        onSession(e, name, "echo", SessionRequest.newBuilder().setEcho(EchoRequest.getDefaultInstance()),
                SessionReply.ResultCase.ECHO);
        return Duration.ofNanos((local.nowMicros() - t0) * 1_000L);
    }

    @Override
    public boolean check(String name, long generation) {
        if (name == null) {
            return false;
        }
        Endpoint e = route(name).get(0);
        try {
            CheckReply r = e.call(() -> e.blocking.withDeadlineAfter(config.callTimeout().toMillis(), TimeUnit.MILLISECONDS)
                    .check(CheckRequest.newBuilder().setName(name).setGeneration(generation).build()));
            if (r.hasError()) {
                throw ProtoCodec.exception(r.getError(), e.address);
            }
            return r.getCurrent();
        } catch (LeaseException ex) {
            throw new RemoteCallFailedException("cannot check '" + LeaseNames.printable(name) + "' generation "
                    + generation + " at lease server " + e.address, ex);
        }
    }

    @Override
    public List<NameStatus> inspect(String prefix, int limit) {
        String p = prefix == null ? "" : prefix;
        TreeMap<String, NameStatus> merged = new TreeMap<>();
        for (Endpoint e : inMigration() ? endpoints() : current) {
            try {
                InspectReply r = e.call(() -> e.blocking.withDeadlineAfter(config.callTimeout().toMillis(),
                        TimeUnit.MILLISECONDS).inspect(InspectRequest.newBuilder().setPrefix(p).setLimit(limit).build()));
                if (r.hasError()) {
                    throw ProtoCodec.exception(r.getError(), e.address);
                }
                for (org.leasehold.wire.proto.NameStatus s : r.getNamesList()) {
                    NameStatus status = ProtoCodec.status(s);
                    merged.merge(status.name(), status, RemoteLeaseService::mergeStatus);
                }
            } catch (LeaseException ex) {
                throw new RemoteCallFailedException("cannot inspect '" + LeaseNames.printable(p) + "' at lease server "
                        + e.address, ex);
            }
        }
        List<NameStatus> out = new ArrayList<>(merged.values());
        return out.size() > limit ? List.copyOf(out.subList(0, Math.max(0, limit))) : out;
    }

    /** The same name on two servers (during a migration): both views together. */
    private static NameStatus mergeStatus(NameStatus a, NameStatus b) {
        List<HolderStatus> holders = new ArrayList<>(a.holders());
        holders.addAll(b.holders());
        List<WaiterStatus> waiters = new ArrayList<>(a.waiters());
        waiters.addAll(b.waiters());
        List<MetadataEntry> history = new ArrayList<>(a.history());
        history.addAll(b.history());
        history.sort(Comparator.comparing(MetadataEntry::at));
        return new NameStatus(a.name(), Math.max(a.generation(), b.generation()),
                a.floor().isAfter(b.floor()) ? a.floor() : b.floor(),
                a.writableFrom().isAfter(b.writableFrom()) ? a.writableFrom() : b.writableFrom(), holders, waiters, history);
    }

    // ------------------------------------------------------------------------------------------------ sessions

    /**
     * Keeps {@code lease} alive, renewing it for {@code leaseTime} about every third of it, and reports jeopardy,
     * safe and expired to {@code listener} (judging expiry early by the measured clock error).
     */
    public KeptLease keep(Lease lease, Duration leaseTime, SessionListener listener) {
        LeaseKeeper k = keeper;
        if (k == null) {
            synchronized (this) {
                k = keeper;
                if (k == null) {
                    k = new LeaseKeeper(this, local, () -> {
                        Duration bound = clockOffset().errorBound();
                        return bound.compareTo(Duration.ofSeconds(1)) > 0 ? Duration.ofSeconds(1) : bound;
                    });
                    keeper = k;
                }
            }
        }
        return k.keep(lease, leaseTime, listener);
    }

    private LeaseServiceUnavailableException closedException() {
        return new LeaseServiceUnavailableException(null, "the remote lease service " + serviceId + " is closed");
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        LeaseKeeper k = keeper;
        if (k != null) {
            k.close();
        }
        for (Endpoint e : endpoints()) {
            e.close();
        }
        if (ownsTime && local instanceof SystemTimeSource s) {
            s.close();
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3007 remote lease service {0} closed", serviceId);
    }
}
