package org.leasehold.remote;

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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.google.protobuf.ByteString;

import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.SessionListener;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.remote.LeaseParts.Part;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.CheckReply;
import org.leasehold.wire.proto.CheckRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.InspectReply;
import org.leasehold.wire.proto.InspectRequest;
import org.leasehold.wire.proto.KeysRequest;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.TimeRequest;
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
 *
 * <p>Its parts: {@link Routing} (which server serves a name) and {@link Migration} (the window of two server sets),
 * {@link ServerClocks} (clock offsets and service time), {@link SessionCalls} (one server's calls on its session
 * stream), {@link MultiServerAcquire} (requests whose names span servers), {@link LeaseParts} (a lease's per-server
 * parts) and {@link UnwantedGrants} (releases owed after failures).
 */
public final class RemoteLeaseService implements LeaseService {
    private static final System.Logger LOG = System.getLogger(RemoteLeaseService.class.getName());

    private final RemoteClientConfig config;
    private final TimeSource local;
    private final boolean ownsTime;
    private final Migration migration;
    private final Routing routing;
    private final ServerClocks clocks;
    private final UnwantedGrants unwanted;
    private final SessionCalls calls;
    private final LeaseParts leaseParts;
    private final String serviceId;
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
        List<String> currentAddresses = List.copyOf(config.servers());
        List<String> previousAddresses = List.copyOf(config.previousServers());
        Map<String, Endpoint> byAddress = new LinkedHashMap<>();
        List<Endpoint> cur = new ArrayList<>();
        for (String a : currentAddresses) {
            cur.add(byAddress.computeIfAbsent(a, x -> new Endpoint(x, config, local)));
        }
        List<Endpoint> prev = new ArrayList<>();
        for (String a : previousAddresses) {
            prev.add(byAddress.computeIfAbsent(a, x -> new Endpoint(x, config, local)));
        }
        long migrationStart = config.migrationStartedAt() != null ? Micros.of(config.migrationStartedAt())
                : local.nowMicros();
        this.migration = new Migration(local, List.copyOf(prev), previousAddresses, currentAddresses, migrationStart,
                this::migrationOver);
        this.routing = new Routing(cur, currentAddresses, prev, previousAddresses, migration);
        this.clocks = new ServerClocks(routing);
        this.unwanted = new UnwantedGrants(config.callTimeout());
        this.calls = new SessionCalls(config.callTimeout(), local, unwanted, !routing.singleServer());
        this.leaseParts = new LeaseParts(routing, local, () -> closed);
        List<String> sorted = new ArrayList<>(currentAddresses);
        Collections.sort(sorted);
        this.serviceId = "leasehold-remote:" + String.join(",", sorted);
        clocks.sampleAll();
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3002 remote lease service connected: {0}", config);
    }

    /** The migration window has just closed: leases taken on both sets keep their parts only until they end. */
    private void migrationOver() {
        leaseParts.sweepLeftovers();
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
        return clocks.first();
    }

    /** The measured offset of the server at {@code address}. */
    public ClockOffset clockOffset(String address) {
        return clocks.of(address);
    }

    /**
     * The measured offset of every server this client uses (the current set, then the old one during a migration),
     * by address, as last measured; a server not measured yet reports an error bound of a century.
     */
    public Map<String, ClockOffset> clockOffsets() {
        return clocks.all();
    }

    /**
     * Measures the offset of the server at {@code address} now (a few samples, one call each), instead of waiting
     * for the next periodic measurement.
     *
     * @throws LeaseException the server did not answer (unavailable, permission denied, ...)
     */
    public ClockOffset measureClockOffset(String address) throws LeaseException {
        return clocks.measure(address);
    }

    /** True while names are leased on both the old and the new server set. */
    public boolean migrating() {
        return migration.open();
    }

    /** The server (address) that holds {@code name} now: the old set's during a migration. */
    public String serverFor(String name) {
        return routing.primary(name).address;
    }

    /**
     * Leases taken on both server sets of a migration that this client still keeps the parts of: until each is
     * released, or over once the migration has ended. For diagnostics.
     */
    public int migrationLeasesKept() {
        return leaseParts.size();
    }

    // ------------------------------------------------------------------------------------------------ service

    @Override
    public String serviceId() {
        return serviceId;
    }

    @Override
    public Instant now() {
        return clocks.now();
    }

    @Override
    public Instant availableFrom() {
        long max = Long.MIN_VALUE;
        for (Endpoint e : routing.serving()) {
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
        if (routing.singleServer()) {
            return calls.acquire(routing.first(), request, List.of(names), callerWaits);
        }
        return MultiServerAcquire.start(request, names, callerWaits, routing, local, calls, unwanted,
                leaseParts, migration);
    }

    @Override
    public Lease upgrade(Lease lease, Instant deadline) throws LeaseException {
        List<Part> parts = leaseParts.of(lease);
        List<Part> done = new ArrayList<>(parts.size());
        for (Part p : parts) {
            UpgradeRequest.Builder b = UpgradeRequest.newBuilder().setLease(ProtoCodec.ref(p.lease()));
            if (deadline != null) {
                b.setDeadlineMicros(ProtoCodec.micros(deadline));
            }
            Lease answered = calls.callForLease(p.endpoint(), p.lease().grants().get(0).name(), "upgrade",
                    SessionRequest.newBuilder().setUpgrade(b));
            done.add(new Part(p.endpoint(), signedLease(p.endpoint(), answered)));
        }
        return leaseParts.merge(lease, parts, done);
    }

    /**
     * The lease a renewal or upgrade answered with (its witnesses read on the connection it came on);
     * refused if the server stopped signing after this client pinned its keys ({@code SignedClock.unsigned}): the
     * lease stays held until its deadline, and the holder learns it now.
     */
    private Lease signedLease(Endpoint e, Lease l) throws LeaseException {
        LeaseException unsigned = e.signed.unsigned(l);
        if (unsigned != null) {
            throw unsigned;
        }
        return l;
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
        List<Part> parts = leaseParts.of(lease);
        List<Part> done = new ArrayList<>(parts.size());
        for (Part p : parts) {
            RenewRequest.Builder b = RenewRequest.newBuilder().setLease(ProtoCodec.ref(p.lease()))
                    .setDeadlineMicros(ProtoCodec.micros(deadline));
            if (metadata != null) {
                b.setMetadata(metadata);
            }
            if (holdUntil != null) {
                b.setHoldInDoubtUntilMicros(ProtoCodec.micros(holdUntil));
            }
            Lease answered = calls.callForLease(p.endpoint(), p.lease().grants().get(0).name(), "renewal",
                    SessionRequest.newBuilder().setRenew(b));
            done.add(new Part(p.endpoint(), signedLease(p.endpoint(), answered)));
        }
        return leaseParts.merge(lease, parts, done);
    }

    @Override
    public Instant release(Lease lease, Instant watermark, String metadata) throws LeaseException {
        List<Part> parts = leaseParts.of(lease);
        Instant ended = null;
        LeaseException first = null;
        for (Part p : parts) {
            ReleaseRequest.Builder b = ReleaseRequest.newBuilder().setLease(ProtoCodec.ref(p.lease()));
            if (watermark != null) {
                b.setWatermarkMicros(ProtoCodec.micros(watermark));
            }
            if (metadata != null) {
                b.setMetadata(metadata);
            }
            try {
                SessionReply r;
                try {
                    r = calls.call(p.endpoint(), p.lease().grants().get(0).name(), "release",
                            SessionRequest.newBuilder().setRelease(b), SessionReply.ResultCase.ENDED_AT_MICROS);
                } finally {
                    calls.released(p.endpoint(), p.lease());
                }
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
            leaseParts.released(lease);
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
        Endpoint e = routing.primary(name);
        long t0 = local.nowMicros();
        calls.call(e, name, "echo", SessionRequest.newBuilder().setEcho(EchoRequest.getDefaultInstance()),
                SessionReply.ResultCase.ECHO);
        return Duration.ofNanos((local.nowMicros() - t0) * 1_000L);
    }

    /**
     * A signed time of the server {@code name} belongs to, over {@code nonce} (Roughtime-style), asked on the session
     * of the lease calls (either transport) and verified against that server's pinned keys: its time and radius, to
     * attach to a frame's witnesses ({@code FrameWitness.withTime}) so that the store compares the frame's timestamp
     * with the service's time at the write.
     *
     * @param nonce 0 to 64 random bytes (16 suffice)
     * @throws LeaseServiceUnavailableException the server signs nothing, did not answer, or its answer does not verify
     */
    public SignedTimeProof signedTime(String name, byte[] nonce) throws LeaseException {
        if (name == null || nonce == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "a signed time request needs a name (it picks "
                    + "the server) and a nonce");
        }
        Endpoint e = routing.primary(name);
        SessionReply r = calls.call(e, name, "time request", SessionRequest.newBuilder().setTime(
                TimeRequest.newBuilder().setNonce(ByteString.copyFrom(nonce))), SessionReply.ResultCase.SIGNED_TIME);
        return e.signed.verify(nonce, r.getSignedTime(), e::fetchKeys);
    }

    /**
     * The public keys of the server {@code name} belongs to, asked on the session of the lease calls (the current
     * key first); empty when it signs nothing. What a verifier needs when the server does not publish its keys into
     * the bag store ({@code --publish-keys}).
     */
    public List<PublishedKey> publicKeys(String name) throws LeaseException {
        if (name == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "publicKeys needs a name (it picks the server)");
        }
        Endpoint e = routing.primary(name);
        SessionReply r = calls.call(e, name, "keys request", SessionRequest.newBuilder().setKeys(
                KeysRequest.getDefaultInstance()), SessionReply.ResultCase.KEYS);
        return List.copyOf(e.signed.update(r.getKeys()).keys());
    }

    @Override
    public boolean check(String name, long generation) {
        if (name == null) {
            return false;
        }
        Endpoint e = routing.primary(name);
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
        for (Endpoint e : routing.serving()) {
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
                    k = new LeaseKeeper(this, local, clocks::keeperMargin);
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
        for (Endpoint e : routing.all()) {
            e.close();
        }
        if (ownsTime && local instanceof SystemTimeSource s) {
            s.close();
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3007 remote lease service {0} closed", serviceId);
    }
}
