package org.leasehold.server;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.time.Micros;
import org.leasehold.wire.Batches;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.AdvanceTestClockRequest;
import org.leasehold.wire.proto.AwaitTestClockRequest;
import org.leasehold.wire.proto.CheckReply;
import org.leasehold.wire.proto.CheckRequest;
import org.leasehold.wire.proto.EchoReply;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.InspectReply;
import org.leasehold.wire.proto.InspectRequest;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.LeaseReply;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.ResetForTestRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.UpgradeRequest;

/**
 * The lease operations over gRPC: decodes each call, checks the caller's permissions, runs it on the engine and
 * answers. Handlers never block: a waiting acquisition is the engine's future, answered when it completes; a
 * cancelled call (client withdrawal or lost connection) withdraws it, and a lease granted to a call nobody can receive
 * any more is released at once.
 */
final class LeaseholdService extends LeaseholdGrpc.LeaseholdImplBase {
    private static final System.Logger LOG = System.getLogger(LeaseholdService.class.getName());

    private final EngineHolder holder;
    private final AccessControl acl;
    private final ServerMetrics metrics;
    private final int maxWaiters;
    private final int maxWaitersPerConnection;
    /**
     * Waiting acquisitions on the whole server: each is one entry of its session's {@code waitingById} (counted when it
     * is put there, uncounted when it is removed), plus, for an instant, a place reserved before the engine is asked.
     * {@code --max-waiters} limits it and {@code leasehold_waiting_acquisitions} reads it.
     */
    private final AtomicInteger waiting = new AtomicInteger();
    /** Which principal each grant belongs to. */
    private final GrantOwners owners = new GrantOwners();
    /** The socket transport's port, told in {@link InfoReply}; 0 when there is none. */
    private volatile int socketPort;
    /** The largest request accepted, told in {@link InfoReply}. */
    private volatile int maxMessageBytes;

    LeaseholdService(EngineHolder holder, AccessControl acl, ServerMetrics metrics, int maxWaiters,
            int maxWaitersPerConnection) {
        this.holder = holder;
        this.acl = acl;
        this.metrics = metrics;
        this.maxWaiters = maxWaiters;
        this.maxWaitersPerConnection = maxWaitersPerConnection;
        metrics.waitingFrom(waiting::get);
    }

    private static String principal() {
        String p = CallGate.PRINCIPAL.get();
        return p == null ? CallGate.ANONYMOUS : p;
    }

    private LeasePermissionDeniedException denied(String principal, Permission what, String name) {
        return new LeasePermissionDeniedException(principal, name, what.word(), "principal '" + principal
                + "' may not " + what.word() + " '" + LeaseNames.printable(name) + "': no rule of the access control list "
                + acl.source() + " gives it '" + what.word() + "' on that name; ask the operator to add one");
    }

    /** The refusal of {@code op} on a grant that belongs to another principal ({@code owner}). */
    private static LeasePermissionDeniedException notYours(String principal, String op, LeaseGrant g, String owner) {
        String name = LeaseNames.printable(g.name());
        return new LeasePermissionDeniedException(principal, g.name(), op.equals("release") ? "admin" : "lease",
                "principal '" + principal + "' may not " + op + " '" + name + "' generation " + g.generation()
                + ": that lease was granted to principal '" + owner + "', and only the principal a lease was granted "
                + "to may renew, upgrade or release it, whatever holder identity the request names"
                + (op.equals("release") ? " (or a principal with 'admin' permission on every name of the lease may "
                + "release it; ask the operator)" : ""));
    }

    /**
     * A busy answer as {@code principal} may see it: the holders of the name only if it may inspect the name;
     * otherwise "held by another holder" with the latest deadline.
     */
    private LeaseException shownTo(String principal, LeaseException e) {
        if (!(e instanceof LeaseBusyException b) || b.name() == null || e.getMessage() == null
                || acl.allowed(principal, Permission.INSPECT, b.name())) {
            return e;
        }
        String name = LeaseNames.printable(b.name());
        String m = e.getMessage();
        if (!m.startsWith("'" + name + "' is held (")) {
            return e;
        }
        int tail = Math.max(m.lastIndexOf("; waited "), m.lastIndexOf("; not waiting"));
        return new LeaseBusyException(b.name(), b.heldUntil(), "'" + name + "' is held by another holder"
                + (b.heldUntil() != null ? " until " + b.heldUntil() : "") + " (the holders are told only to principals "
                + "who may inspect the name)" + (tail >= 0 ? m.substring(tail) : ": retry later, or wait longer"));
    }

    private static InvalidLeaseRequestException duplicateId(long id) {
        return new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.DUPLICATE_REQUEST_ID, "request id "
                + Long.toUnsignedString(id) + " is already taken by a waiting acquisition of this session: nothing was "
                + "done; give every request of a session an id of its own (ids may be reused once answered)");
    }

    private void done(String op, String outcome, long startNanos) {
        metrics.answered(op, outcome, (System.nanoTime() - startNanos) / 1e9);
    }

    static String outcome(Throwable e) {
        if (e instanceof LeaseBusyException) {
            return "busy";
        } else if (e instanceof InvalidLeaseRequestException) {
            return "invalid";
        } else if (e instanceof LeaseServiceUnavailableException) {
            return "unavailable";
        } else if (e instanceof LeasePermissionDeniedException) {
            return "denied";
        } else if (e instanceof LeaseBrokenException) {
            return "broken";
        } else if (e instanceof LeaseExpiredException) {
            return "expired";
        } else if (e instanceof StaleLeaseException) {
            return "stale";
        } else if (e instanceof CancellationException) {
            return "withdrawn";
        }
        return "error";
    }

    // ------------------------------------------------------------------------------------------------ acquire

    @Override
    public StreamObserver<SessionRequests> session(StreamObserver<SessionReplies> responses) {
        ServerCallStreamObserver<SessionReplies> call = (ServerCallStreamObserver<SessionReplies>) responses;
        // gRPC's observer never blocks (it buffers under flow control), so answers go out on whichever thread made them.
        SessionHandle session = openSession(principal(), CallGate.CONNECTION.get(), new Outlet() {
            @Override
            public void send(SessionReplies replies) {
                call.onNext(replies);
            }

            @Override
            public void complete() {
                call.onCompleted();
            }

            @Override
            public void flushLater(Runnable flush) {
                flush.run();
            }
        });
        call.setOnCancelHandler(session::end);
        return new StreamObserver<>() {
            @Override
            public void onNext(SessionRequests batch) {
                session.handle(batch);
            }

            @Override
            public void onError(Throwable t) {
                session.end();
            }

            @Override
            public void onCompleted() {
                session.end();
                session.complete();
            }
        };
    }

    /** Where a session's answers go: the gRPC stream, or a socket ({@link SocketTransport}). */
    interface Outlet {
        /** Sends a batch of answers (called under the session's lock); throws if the session's transport is gone. */
        void send(SessionReplies replies);

        /** Ends the answers (the client closed its side). */
        void complete();

        /**
         * Runs {@code flush} for answers made outside a batch of this session's requests (grants to its waiting
         * requests, made on another session's thread): at once, or on a thread of the transport's where a flush that
         * blocks on this session's connection holds up nobody else.
         */
        void flushLater(Runnable flush);
    }

    /** A session as its transport drives it. */
    interface SessionHandle {
        /** Handles a batch of requests in order; their answers go out together at its end. */
        void handle(SessionRequests batch);

        /** The stream ended (closed, cancelled or lost): every waiting request is withdrawn. */
        void end();

        /** Ends the answers after the client ended its requests. */
        void complete();
    }

    /** Opens a session for {@code principal} on {@code conn} (null if the transport has none), answering to {@code out}. */
    SessionHandle openSession(String principal, CallGate.Connection conn, Outlet out) {
        Session session = new Session(out, principal, conn);
        return new SessionHandle() {
            @Override
            public void handle(SessionRequests batch) {
                // The answers to a batch go out together when it has been handled (grants made meanwhile for this
                // session's waiting requests, by other sessions' releases, join them).
                session.batching = true;
                try {
                    for (SessionRequest r : batch.getRequestsList()) {
                        LeaseholdService.handle(session, r);
                    }
                } finally {
                    session.batching = false;
                    session.flush();
                }
            }

            @Override
            public void end() {
                session.end();
            }

            @Override
            public void complete() {
                session.complete();
            }
        };
    }

    private static void handle(Session session, SessionRequest r) {
        switch (r.getRequestCase()) {
            case RELEASE, RENEW, UPGRADE, ECHO -> {
                if (session.waitingById.containsKey(r.getRequestId())) {
                    session.error(r.getRequestId(), r.getRequestCase().name().toLowerCase(java.util.Locale.ROOT),
                            duplicateId(r.getRequestId()), System.nanoTime());
                    return;
                }
            }
            default -> {
                // Acquire checks its id itself; a Withdraw names the request it withdraws.
            }
        }
        switch (r.getRequestCase()) {
            case ACQUIRE -> session.acquire(r.getAcquire());
            case WITHDRAW -> session.withdraw(r.getWithdraw().getRequestId());
            case RELEASE -> session.release(r.getRequestId(), r.getRelease());
            case RENEW -> session.renew(r.getRequestId(), r.getRenew());
            case UPGRADE -> session.upgrade(r.getRequestId(), r.getUpgrade());
            case ECHO -> session.send(SessionReply.newBuilder().setRequestId(r.getRequestId())
                    .setEcho(r.getEcho().getPayload()).build());
            default -> session.send(SessionReply.newBuilder().setRequestId(r.getRequestId()).setError(ProtoCodec.error(
                    new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                            "the session message carries no request this server knows (field "
                                    + r.getRequestCase() + "): use a client of protocol version "
                                    + Protocol.VERSION))).build());
        }
    }

    /** An operation on a held lease, as answered on the session stream. */
    private interface HeldCall {
        SessionReply.Builder apply(Held held) throws LeaseException;
    }

    /**
     * A held lease's reference as decoded and allowed: the lease, and the principal it was granted to when that is
     * another one whose lease an admin releases (else null).
     */
    private record Held(Lease lease, String otherOwner) {
    }

    /** An answer waiting to go out; a grant's lease is released if the answer cannot be delivered. */
    private record Outgoing(SessionReply reply, Lease grant) {
    }

    /** One client's session stream: its waiting requests, answered in completion order, in batches. */
    private final class Session {
        private final Outlet call;
        private final String principal;
        private final CallGate.Connection conn;
        /** The waiting acquisitions of this session by request id; each entry counts in {@link #waiting}. */
        final Map<Long, CompletableFuture<Lease>> waitingById = new ConcurrentHashMap<>();
        private final Queue<Outgoing> outbox = new ConcurrentLinkedQueue<>();
        /** {@link #flush}, made once: answers outside a batch hand it to the transport. */
        private final Runnable flushTask = this::flush;
        /** True while the transport thread handles a batch of requests: answers wait for its end, to go out together. */
        volatile boolean batching;
        private volatile boolean ended;

        Session(Outlet call, String principal, CallGate.Connection conn) {
            this.call = call;
            this.principal = principal;
            this.conn = conn;
        }

        boolean send(SessionReply reply) {
            return send(reply, null);
        }

        /**
         * Queues one answer and, unless a batch of requests is being handled (its end sends everything), sends what is
         * queued. False if the session has already ended (the answer cannot be delivered).
         */
        boolean send(SessionReply reply, Lease grant) {
            if (ended) {
                return false;
            }
            outbox.add(new Outgoing(reply, grant));
            // Read after adding: the transport thread clears the flag before its final flush, so it sees this answer.
            if (!batching) {
                call.flushLater(flushTask);
            }
            return true;
        }

        /** Sends every queued answer, at most {@link Protocol#BATCH_BYTES} a message; the observer is not thread-safe. */
        synchronized void flush() {
            Batches.drain(outbox, o -> o.reply.getSerializedSize(), this::emit);
        }

        private void emit(List<Outgoing> batch) {
            if (ended) {
                for (Outgoing o : batch) {
                    undeliverable(o.grant, "its session ended before the grant could be sent");
                }
                return;
            }
            SessionReplies.Builder replies = SessionReplies.newBuilder();
            for (Outgoing o : batch) {
                replies.addReplies(o.reply);
            }
            try {
                call.send(replies.build());
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2111 answers to a gone session dropped: {0}",
                        gone.getMessage());
                for (Outgoing o : batch) {
                    undeliverable(o.grant, "its session was gone when the grant was sent");
                }
            }
        }

        private void undeliverable(Lease grant, String why) {
            if (grant != null) {
                releaseUnwanted(grant, why);
            }
        }

        synchronized void complete() {
            try {
                call.complete();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2106 session already gone: {0}", gone.getMessage());
            }
        }

        /** The stream ended (closed, cancelled or lost): withdraw every waiting request. */
        void end() {
            synchronized (this) {
                if (ended) {
                    return;
                }
                ended = true;
            }
            for (CompletableFuture<Lease> f : waitingById.values()) {
                f.cancel(false);
            }
            runDueTestTimers();
            // Answers still queued cannot be delivered: release their grants.
            flush();
        }

        private void error(long id, LeaseException e, long start) {
            error(id, "acquire", e, start);
        }

        void error(long id, String op, LeaseException e, long start) {
            send(SessionReply.newBuilder().setRequestId(id).setError(ProtoCodec.error(e)).build());
            done(op, outcome(e), start);
        }

        void release(long id, ReleaseRequest req) {
            onHeld(id, req.getLease(), "release", held -> SessionReply.newBuilder()
                    .setEndedAtMicros(Micros.of(releaseHeld(principal, held, req))));
        }

        void renew(long id, RenewRequest req) {
            onHeld(id, req.getLease(), "renew",
                    held -> SessionReply.newBuilder().setLease(ProtoCodec.lease(renewHeld(held, req))));
        }

        void upgrade(long id, UpgradeRequest req) {
            onHeld(id, req.getLease(), "upgrade",
                    held -> SessionReply.newBuilder().setLease(ProtoCodec.lease(upgradeHeld(held, req))));
        }

        /** Runs an operation on a held lease and answers with its result or its error. */
        private void onHeld(long id, LeaseRef ref, String op, HeldCall call) {
            long start = System.nanoTime();
            try {
                send(call.apply(held(principal, ref, op)).setRequestId(id).build());
                done(op, "ok", start);
            } catch (LeaseException e) {
                error(id, op, e, start);
            }
        }

        void acquire(AcquireRequest req) {
            long start = System.nanoTime();
            long id = req.getRequestId();
            if (waitingById.containsKey(id)) {
                // Only this thread adds to the map, so a free id stays free until this request is registered.
                error(id, duplicateId(id), start);
                return;
            }
            LeaseRequest request;
            try {
                request = ProtoCodec.acquire(req);
            } catch (InvalidLeaseRequestException e) {
                error(id, e, start);
                return;
            } catch (RuntimeException e) {
                error(id, new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                        "the Acquire request cannot be decoded: " + e.getMessage()), start);
                return;
            }
            String deniedName = acl.firstDenied(principal, Permission.LEASE, request.names());
            if (deniedName != null) {
                error(id, denied(principal, Permission.LEASE, deniedName), start);
                return;
            }
            boolean mayWait = req.getWaitMicros() > 0;
            if (mayWait && !reserve(id, request, start)) {
                return;
            }
            CompletableFuture<Lease> f = holder.engine().acquireAsync(request);
            runDueTestTimers();
            if (f.isDone()) {
                if (mayWait) {
                    unreserve();
                }
                answer(id, f, start);
                return;
            }
            if (!mayWait) {
                // Not decided at once although it may not wait: it is open all the same, and counted as waiting.
                waiting.incrementAndGet();
                if (conn != null) {
                    conn.waiting.incrementAndGet();
                }
            }
            // The reservation now belongs to the entry: it is given back exactly when the entry is removed.
            waitingById.put(id, f);
            f.whenComplete((lease, failure) -> {
                if (waitingById.remove(id, f)) {
                    unreserve();
                }
                metrics.waits.labelValues(failure == null ? "granted" : outcome(unwrap(failure)))
                        .observe((System.nanoTime() - start) / 1e9);
                answer(id, f, start);
            });
            if (ended) {
                f.cancel(false);
            }
        }

        /** Reserves a waiting place within the connection's and the server's limits; false (after answering) if full. */
        private boolean reserve(long id, LeaseRequest request, long start) {
            if (conn != null && conn.waiting.incrementAndGet() > maxWaitersPerConnection) {
                conn.waiting.decrementAndGet();
                error(id, new LeaseBusyException(first(request), null, "this connection already has "
                        + maxWaitersPerConnection + " waiting acquisitions (the server's "
                        + "--max-waiters-per-connection): wait for some to finish, or try without waiting"), start);
                return false;
            }
            if (waiting.incrementAndGet() > maxWaiters) {
                waiting.decrementAndGet();
                if (conn != null) {
                    conn.waiting.decrementAndGet();
                }
                error(id, new LeaseBusyException(first(request), null, "the server already has " + maxWaiters
                        + " waiting acquisitions (its --max-waiters): retry later, or try without waiting"), start);
                return false;
            }
            return true;
        }

        private void unreserve() {
            waiting.decrementAndGet();
            if (conn != null) {
                conn.waiting.decrementAndGet();
            }
        }

        /** Sends the outcome of a completed engine future; a grant nobody can receive is released. */
        private void answer(long id, CompletableFuture<Lease> f, long start) {
            Lease lease = null;
            Throwable failure = null;
            try {
                lease = f.join();
            } catch (CancellationException e) {
                failure = e;
            } catch (CompletionException e) {
                failure = unwrap(e);
            }
            if (lease != null) {
                // Recorded before the answer goes out: nobody can name this grant before its owner is known.
                owners.granted(principal, lease, holder.time().nowMicros());
                if (send(SessionReply.newBuilder().setRequestId(id).setLease(ProtoCodec.lease(lease)).build(), lease)) {
                    done("acquire", "granted", start);
                } else {
                    releaseUnwanted(lease, "its session ended before the grant could be sent");
                    done("acquire", "withdrawn", start);
                }
                return;
            }
            if (failure instanceof CancellationException) {
                error(id, new LeaseBusyException(null, null, "the request was withdrawn by the client before it "
                        + "was granted"), start);
            } else if (failure instanceof LeaseException le) {
                error(id, shownTo(principal, le), start);
            } else {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-2901 lease engine failure on acquire", failure);
                error(id, new LeaseServiceUnavailableException(null, "the lease engine failed: " + failure), start);
            }
        }

        void withdraw(long id) {
            long start = System.nanoTime();
            CompletableFuture<Lease> f = waitingById.get(id);
            boolean withdrawn = f != null && f.cancel(false);
            runDueTestTimers();
            send(SessionReply.newBuilder().setRequestId(id).setWithdrawn(withdrawn).build());
            done("withdraw", withdrawn ? "withdrawn" : "not_waiting", start);
        }
    }

    /**
     * On a test clock, runs timers that became due meanwhile. A manual clock never runs a timer inside schedule(),
     * so a timer scheduled by this call just after another thread advanced the clock past it would otherwise wait
     * for the next advance; on the system clock nothing is needed.
     */
    private void runDueTestTimers() {
        if (holder.testClock()) {
            holder.manual().runDue();
        }
    }

    private static String first(LeaseRequest r) {
        return r.names().isEmpty() ? null : r.names().get(0);
    }

    private static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private void reply(StreamObserver<LeaseReply> out, LeaseException e, String op, long start) {
        try {
            out.onNext(LeaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
            out.onCompleted();
        } catch (RuntimeException gone) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}", gone.getMessage());
        }
        done(op, outcome(e), start);
    }

    private void releaseUnwanted(Lease lease, String why) {
        try {
            holder.engine().release(lease, null, null);
            owners.ended(lease);
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2103 released {0}: {1}", lease.describe(), why);
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2104 releasing {0} ({1}) failed: {2}", lease.describe(), why,
                    e.getMessage());
        }
    }

    // ------------------------------------------------------------------------------------------------ held leases

    /**
     * Decodes a held lease's reference and checks that {@code principal} may {@code op} it: the ACL gives it
     * {@code lease} on every name, and the lease was granted to it; or, for a release only, the ACL gives it
     * {@code admin} on every name (then it may release another principal's lease).
     */
    private Held held(String principal, LeaseRef ref, String op) throws LeaseException {
        Lease lease;
        try {
            lease = ProtoCodec.lease(ref, Character.toUpperCase(op.charAt(0)) + op.substring(1));
        } catch (RuntimeException e) {
            throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                    "the " + op + " request cannot be decoded: " + e.getMessage());
        }
        boolean admin = op.equals("release") && !lease.names().isEmpty()
                && acl.firstDenied(principal, Permission.ADMIN, lease.names()) == null;
        if (!admin) {
            String deniedName = acl.firstDenied(principal, Permission.LEASE, lease.names());
            if (deniedName != null) {
                throw denied(principal, Permission.LEASE, deniedName);
            }
        }
        for (LeaseGrant g : lease.grants()) {
            String owner = owners.principalOf(g.name(), g.generation());
            if (owner != null && !owner.equals(principal)) {
                if (!admin) {
                    throw notYours(principal, op, g, owner);
                }
                return new Held(lease, owner);
            }
        }
        return new Held(lease, null);
    }

    private Lease upgradeHeld(Held held, UpgradeRequest req) throws LeaseException {
        Lease up = holder.engine().upgrade(held.lease(), ProtoCodec.upgradeDeadline(req));
        owners.moved(up);
        return up;
    }

    private Lease renewHeld(Held held, RenewRequest req) throws LeaseException {
        Instant holdUntil = ProtoCodec.renewHoldInDoubtUntil(req);
        Lease renewed = holder.engine().renew(held.lease(), ProtoCodec.renewDeadline(req),
                req.hasMetadata() ? req.getMetadata() : null);
        owners.moved(renewed);
        if (holdUntil != null) {
            renewed = holder.engine().holdInDoubt(renewed, holdUntil);
            // The engine renews it from now on without a call through here: its owner is kept until the hold's end.
            owners.moved(new Lease(renewed.holder(), renewed.mode(), renewed.kind(), renewed.grantedAt(), holdUntil,
                    renewed.grants()));
        }
        return renewed;
    }

    private Instant releaseHeld(String principal, Held held, ReleaseRequest req) throws LeaseException {
        Instant watermark = ProtoCodec.releaseWatermark(req);
        Instant ended;
        try {
            ended = holder.engine().release(held.lease(), watermark, req.hasMetadata() ? req.getMetadata() : null);
        } finally {
            runDueTestTimers();
        }
        owners.ended(held.lease());
        if (held.otherOwner() != null) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-2110 principal ''{0}'' (admin) released {1}, granted to "
                    + "principal ''{2}''", principal, held.lease().describe(), held.otherOwner());
        }
        return ended;
    }

    @Override
    public void upgrade(UpgradeRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        try {
            Lease up = upgradeHeld(held(principal(), req.getLease(), "upgrade"), req);
            out.onNext(LeaseReply.newBuilder().setLease(ProtoCodec.lease(up)).build());
            out.onCompleted();
            done("upgrade", "ok", start);
        } catch (LeaseException e) {
            reply(out, e, "upgrade", start);
        }
    }

    @Override
    public void renew(RenewRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        try {
            Lease renewed = renewHeld(held(principal(), req.getLease(), "renew"), req);
            out.onNext(LeaseReply.newBuilder().setLease(ProtoCodec.lease(renewed)).build());
            out.onCompleted();
            done("renew", "ok", start);
        } catch (LeaseException e) {
            reply(out, e, "renew", start);
        }
    }

    @Override
    public void release(ReleaseRequest req, StreamObserver<ReleaseReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        try {
            Instant ended = releaseHeld(principal, held(principal, req.getLease(), "release"), req);
            out.onNext(ReleaseReply.newBuilder().setEndedAtMicros(Micros.of(ended)).build());
            out.onCompleted();
            done("release", "ok", start);
        } catch (LeaseException e) {
            try {
                out.onNext(ReleaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
                out.onCompleted();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}",
                        gone.getMessage());
            }
            done("release", outcome(e), start);
        }
    }

    @Override
    public void check(CheckRequest req, StreamObserver<CheckReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        if (!acl.allowed(principal, Permission.CHECK, req.getName())) {
            out.onNext(CheckReply.newBuilder().setError(ProtoCodec.error(denied(principal, Permission.CHECK,
                    req.getName()))).build());
            out.onCompleted();
            done("check", "denied", start);
            return;
        }
        boolean current = holder.engine().check(req.getName(), req.getGeneration());
        out.onNext(CheckReply.newBuilder().setCurrent(current).build());
        out.onCompleted();
        done("check", current ? "current" : "not_current", start);
    }

    @Override
    public void inspect(InspectRequest req, StreamObserver<InspectReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        if (req.getLimit() < 0) {
            out.onNext(InspectReply.newBuilder().setError(ProtoCodec.error(new InvalidLeaseRequestException(
                    InvalidLeaseRequestException.Reason.OUT_OF_RANGE, "the Inspect request's limit is " + req.getLimit()
                    + ", outside its range [0, " + Integer.MAX_VALUE + "]: nothing was done; send a value within "
                    + "the range"))).build());
            out.onCompleted();
            done("inspect", "invalid", start);
            return;
        }
        boolean all = acl.mayInspectAll(principal, req.getPrefix());
        if (!all && !acl.mayInspectSomeUnder(principal, req.getPrefix())) {
            out.onNext(InspectReply.newBuilder().setError(ProtoCodec.error(denied(principal, Permission.INSPECT,
                    req.getPrefix()))).build());
            out.onCompleted();
            done("inspect", "denied", start);
            return;
        }
        int limit = req.getLimit();
        List<NameStatus> view = holder.engine().inspect(req.getPrefix(), all ? limit : Integer.MAX_VALUE);
        InspectReply.Builder b = InspectReply.newBuilder();
        int n = 0;
        for (NameStatus s : view) {
            if (n == limit) {
                break;
            }
            if (all || acl.allowed(principal, Permission.INSPECT, s.name())) {
                b.addNames(ProtoCodec.status(s));
                n++;
            }
        }
        out.onNext(b.build());
        out.onCompleted();
        done("inspect", "ok", start);
    }

    // ------------------------------------------------------------------------------------------------ info, echo

    void socketPort(int port) {
        socketPort = Math.max(0, port);
    }

    void maxMessageBytes(int bytes) {
        maxMessageBytes = bytes;
    }

    private InfoReply info() {
        EmbeddedLeaseService engine = holder.engine();
        EngineConfig c = engine.config();
        return InfoReply.newBuilder().setServiceId(engine.serviceId()).setNowMicros(holder.time().nowMicros())
                .setAvailableFromMicros(Micros.of(engine.availableFrom()))
                .setStartedAtMicros(Micros.of(engine.availableFrom()) - Micros.of(c.effectiveQuietPeriod()))
                .setMaxLeaseMicros(Micros.of(c.maxLeaseDuration())).setGraceMicros(Micros.of(c.grace()))
                .setTestClock(holder.testClock()).setProtocolVersion(Protocol.VERSION).setPrincipal(principal())
                .setSocketPort(socketPort).setMaxMessageBytes(maxMessageBytes).build();
    }

    @Override
    public void info(InfoRequest req, StreamObserver<InfoReply> out) {
        out.onNext(info());
        out.onCompleted();
    }

    @Override
    public void echo(EchoRequest req, StreamObserver<EchoReply> out) {
        out.onNext(EchoReply.newBuilder().setPayload(req.getPayload()).build());
        out.onCompleted();
    }

    // ------------------------------------------------------------------------------------------------ test only

    private boolean refuseUnlessTestClock(StreamObserver<?> out, String op) {
        if (holder.testClock()) {
            return false;
        }
        metrics.refused.labelValues("test_only").inc();
        out.onError(Status.FAILED_PRECONDITION.withDescription(op + " is for tests only: this lease server runs on the "
                + "system clock. Only a server started with --test-clock=<instant> (never in production) accepts it")
                .asRuntimeException());
        return true;
    }

    @Override
    public void advanceTestClock(AdvanceTestClockRequest req, StreamObserver<InfoReply> out) {
        if (refuseUnlessTestClock(out, "AdvanceTestClock")) {
            return;
        }
        if (req.getMicros() < 0) {
            out.onError(Status.INVALID_ARGUMENT.withDescription("the test clock moves forward only; asked to move "
                    + req.getMicros() + " µs").asRuntimeException());
            return;
        }
        Duration step;
        try {
            step = ProtoCodec.durationField(InvalidLeaseRequestException.Reason.OUT_OF_RANGE, "AdvanceTestClock",
                    "micros", req.getMicros());
        } catch (InvalidLeaseRequestException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        holder.manual().advance(step);
        out.onNext(info());
        out.onCompleted();
    }

    @Override
    public void awaitTestClock(AwaitTestClockRequest req, StreamObserver<InfoReply> out) {
        if (refuseUnlessTestClock(out, "AwaitTestClock")) {
            return;
        }
        try {
            ProtoCodec.instantField("AwaitTestClock", "at_micros", req.getAtMicros());
        } catch (InvalidLeaseRequestException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        holder.time().schedule(req.getAtMicros(), () -> {
            try {
                out.onNext(info());
                out.onCompleted();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2105 AwaitTestClock caller gone: {0}", gone.getMessage());
            }
        });
        holder.manual().runDue();
    }

    @Override
    public void resetForTest(ResetForTestRequest req, StreamObserver<InfoReply> out) {
        if (refuseUnlessTestClock(out, "ResetForTest")) {
            return;
        }
        EngineConfig c;
        Instant startAt;
        try {
            String type = "ResetForTest";
            InvalidLeaseRequestException.Reason r = InvalidLeaseRequestException.Reason.OUT_OF_RANGE;
            c = holder.config().withMaxLeaseDuration(ProtoCodec.durationField(r, type, "max_lease_micros",
                            req.getMaxLeaseMicros()))
                    .withGrace(ProtoCodec.durationField(r, type, "grace_micros", req.getGraceMicros()))
                    .withQuietPeriod(ProtoCodec.durationField(r, type, "quiet_period_micros", req.getQuietPeriodMicros()))
                    .withHistoryPerName(req.getHistoryPerName()).withMaxWaitersPerName(req.getMaxWaitersPerName())
                    .validate();
            startAt = req.hasStartMicros() ? ProtoCodec.instantField(type, "start_micros", req.getStartMicros()) : null;
        } catch (IllegalArgumentException | InvalidLeaseRequestException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        holder.reset(c, startAt);
        owners.clear();
        out.onNext(info());
        out.onCompleted();
    }

    /** Waiting acquisitions now (for tests and health). */
    int waitingNow() {
        return waiting.get();
    }
}
