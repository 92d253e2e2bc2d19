package org.leasehold.server;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.leasehold.audit.BatchSigner;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.server.LeaseAccess.Held;
import org.leasehold.time.Micros;
import org.leasehold.wire.Batches;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.ProofRequest;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.TimeRequest;
import org.leasehold.wire.proto.UpgradeRequest;
import org.leasehold.wire.proto.WaitsElsewhereRequest;

/**
 * The session stream of both transports: one client's lease requests handled in order, its waiting acquisitions kept
 * within the server's limits, and its answers sent in batches. Nothing here blocks: a waiting acquisition is the
 * engine's future, answered when it completes; an ended session withdraws its waiting requests, and a lease granted to
 * a session nobody can receive any more is released at once.
 */
final class LeaseSessions {
    private static final System.Logger LOG = System.getLogger(LeaseSessions.class.getName());
    /**
     * Most waits at other servers one session may have counted here at once: a client has one per holder that waits
     * with a lease here, so more is a client that never says the waits ended; the rest are ignored.
     */
    static final int MAX_WAITS_ELSEWHERE = 4_096;

    private final LeaseAccess access;
    private final LeaseCalls calls;
    private final Signatures signatures;
    private final ServerMetrics metrics;
    private final int maxWaiters;
    private final int maxWaitersPerConnection;
    /**
     * Waiting acquisitions on the whole server: each is one entry of its session's {@code waitingById} (counted when it
     * is put there, uncounted when it is removed), plus, for an instant, a place reserved before the engine is asked.
     * {@code --max-waiters} limits it and {@code leasehold_waiting_acquisitions} reads it.
     */
    private final AtomicInteger waiting = new AtomicInteger();

    LeaseSessions(LeaseAccess access, LeaseCalls calls, int maxWaiters, int maxWaitersPerConnection) {
        this.access = access;
        this.calls = calls;
        this.signatures = new Signatures(calls.holder());
        this.metrics = calls.metrics();
        this.maxWaiters = maxWaiters;
        this.maxWaitersPerConnection = maxWaitersPerConnection;
        metrics.waitingFrom(waiting::get);
    }

    /** Waiting acquisitions now (for tests and health). */
    int waitingNow() {
        return waiting.get();
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
        default void handle(SessionRequests batch) {
            handle(batch, false);
        }

        /**
         * Handles a batch of requests in order. With {@code more}, the transport already holds the next batch and hands
         * it over at once: the answers wait for the end of that one, so that one write carries both batches' answers.
         */
        void handle(SessionRequests batch, boolean more);

        /** Sends the answers a batch handled with {@code more} left waiting, when no batch follows it after all. */
        void flush();

        /** The stream ended (closed, cancelled or lost): every waiting request is withdrawn. */
        void end();

        /** Ends the answers after the client ended its requests. */
        void complete();
    }

    /** Opens a session for {@code principal} on {@code conn} (null if the transport has none), answering to {@code out}. */
    SessionHandle open(String principal, CallGate.Connection conn, Outlet out) {
        Session session = new Session(out, principal, conn);
        return new SessionHandle() {
            @Override
            public void handle(SessionRequests batch, boolean more) {
                // The answers to a batch go out together when it has been handled (grants made meanwhile for this
                // session's waiting requests, by other sessions' releases, join them), or with the next batch's when
                // that one is already here.
                session.batching = true;
                boolean handled = false;
                try {
                    for (SessionRequest r : batch.getRequestsList()) {
                        LeaseSessions.this.handle(session, r);
                    }
                    handled = true;
                } finally {
                    if (!more || !handled) {
                        session.batching = false;
                        session.flush();
                    }
                }
            }

            @Override
            public void flush() {
                session.batching = false;
                session.flush();
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

    private void handle(Session session, SessionRequest r) {
        switch (r.getRequestCase()) {
            case RELEASE, RENEW, UPGRADE, ECHO, TIME, KEYS -> {
                if (session.waitingById.containsKey(r.getRequestId())) {
                    session.error(r.getRequestId(), r.getRequestCase().name().toLowerCase(java.util.Locale.ROOT),
                            RequestChecks.duplicateId(r.getRequestId()), System.nanoTime());
                    return;
                }
            }
            default -> {
                // Acquire checks its id itself; a Withdraw names the request it withdraws.
            }
        }
        switch (r.getRequestCase()) {
            case ACQUIRE -> session.acquire(r.getAcquire(), r.getWantsSeals());
            case WITHDRAW -> session.withdraw(r.getWithdraw().getRequestId());
            case RELEASE -> session.release(r.getRequestId(), r.getRelease());
            case RENEW -> session.renew(r.getRequestId(), r.getRenew(), r.getWantsSeals());
            case UPGRADE -> session.upgrade(r.getRequestId(), r.getUpgrade(), r.getWantsSeals());
            case ECHO -> session.send(SessionReply.newBuilder().setRequestId(r.getRequestId())
                    .setEcho(r.getEcho().getPayload()).build());
            case TIME -> session.signTime(r.getRequestId(), r.getTime());
            case KEYS -> session.send(SessionReply.newBuilder().setRequestId(r.getRequestId())
                    .setKeys(signatures.keys()).build());
            case HURRY -> signatures.hurry();
            case PROOF -> session.proofs(r.getRequestId(), r.getProof());
            case WAITS_ELSEWHERE -> session.waitsElsewhere(r.getWaitsElsewhere());
            default -> session.send(SessionReply.newBuilder().setRequestId(r.getRequestId())
                    .setError(ProtoCodec.error(RequestChecks.unknownRequest(r))).build());
        }
    }

    /** An operation on a held lease, as answered on the session stream. */
    private interface HeldCall {
        SessionReply.Builder apply(Held held) throws LeaseException;
    }

    /** An operation on a held lease that answers with the lease. */
    private interface HeldLeaseCall {
        Lease apply(Held held) throws LeaseException;
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
        /** True while a flush of proofs waits for the end of the signer's batch ({@link #sendSeals}). */
        private final AtomicBoolean sealsFlushQueued = new AtomicBoolean();
        /** {@link #flushSeals}, made once. */
        private final Runnable sealsFlushTask = this::flushSeals;
        private volatile boolean ended;
        /**
         * What ends each wait at another server this session said a holder has (a {@code WaitsElsewhereRequest}),
         * by holder; run at its end or the session's. Guarded by this.
         */
        private final Map<HolderId, ArrayDeque<Runnable>> elsewhere = new HashMap<>();
        /** How many runnables {@link #elsewhere} holds (guarded by this). */
        private int waitsElsewhere;

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
                calls.releaseUnwanted(grant, why);
            }
        }

        synchronized void complete() {
            try {
                call.complete();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2106 session already gone: {0}", gone.getMessage());
            }
        }

        /** The stream ended (closed, cancelled or lost): withdraw every waiting request, end its waits elsewhere. */
        void end() {
            List<Runnable> waitsOver = new ArrayList<>();
            synchronized (this) {
                if (ended) {
                    return;
                }
                ended = true;
                elsewhere.values().forEach(waitsOver::addAll);
                elsewhere.clear();
                waitsElsewhere = 0;
            }
            waitsOver.forEach(Runnable::run);
            for (CompletableFuture<Lease> f : waitingById.values()) {
                f.cancel(false);
            }
            calls.runDueTestTimers();
            // Answers still queued cannot be delivered: release their grants.
            flush();
        }

        private void error(long id, LeaseException e, long start) {
            error(id, "acquire", e, start);
        }

        void error(long id, String op, LeaseException e, long start) {
            send(SessionReply.newBuilder().setRequestId(id).setError(ProtoCodec.error(e)).build());
            calls.done(op, LeaseCalls.outcome(e), start);
        }

        /**
         * The holder of the lease {@code req} names waits at another server (or no longer does): counted as waiting
         * here for wound-wait until then. Nothing on an etcd backend (its fronts see every wait in etcd); a lease not
         * held, or not this principal's, is ignored (one-way: nobody to answer).
         */
        void waitsElsewhere(WaitsElsewhereRequest req) {
            EmbeddedLeaseService engine = calls.holder().embedded();
            if (engine == null) {
                return;
            }
            try {
                Held held = access.held(principal, req.getHeld(), "count as waiting the holder of");
                HolderId holder = held.lease().holder();
                if (req.getWaiting()) {
                    synchronized (this) {
                        if (waitsElsewhere >= MAX_WAITS_ELSEWHERE) {
                            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2113 a holder said to wait at another server "
                                    + "was not counted as waiting here: the session has " + MAX_WAITS_ELSEWHERE
                                    + " such waits already");
                            return;
                        }
                    }
                    Runnable over = engine.waitingElsewhere(held.lease());
                    synchronized (this) {
                        if (!ended) {
                            waitsElsewhere++;
                            elsewhere.computeIfAbsent(holder, k -> new ArrayDeque<>(1)).add(over);
                            return;
                        }
                    }
                    over.run();
                } else {
                    Runnable over;
                    synchronized (this) {
                        ArrayDeque<Runnable> q = elsewhere.get(holder);
                        over = q == null ? null : q.poll();
                        if (over != null) {
                            waitsElsewhere--;
                        }
                        if (q != null && q.isEmpty()) {
                            elsewhere.remove(holder);
                        }
                    }
                    if (over != null) {
                        over.run();
                    }
                }
            } catch (LeaseException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2112 a holder said to wait at another server was not "
                        + "counted as waiting here: {0}", e.getMessage());
            }
        }

        void release(long id, ReleaseRequest req) {
            onHeld(id, req.getLease(), "release", held -> SessionReply.newBuilder()
                    .setEndedAtMicros(Micros.of(calls.release(principal, held, req))));
        }

        void renew(long id, RenewRequest req, boolean seals) {
            onHeldLease(id, req.getLease(), "renew", seals, held -> calls.renew(held, req));
        }

        void upgrade(long id, UpgradeRequest req, boolean seals) {
            onHeldLease(id, req.getLease(), "upgrade", seals, held -> calls.upgrade(held, req));
        }

        /** Runs an operation on a held lease that answers with the lease, then sends its witnesses' proofs. */
        private void onHeldLease(long id, LeaseRef ref, String op, boolean seals, HeldLeaseCall call) {
            long start = System.nanoTime();
            try {
                Lease lease = call.apply(access.held(principal, ref, op));
                sendLease(id, lease, null, seals);
                calls.done(op, "ok", start);
            } catch (LeaseException e) {
                error(id, op, e, start);
            }
        }

        /**
         * Sends a lease answer and, when its witnesses' batch was not yet signed, their proofs after it (a
         * {@code WitnessSeals} push tagged with the same request id; queued after the answer, so it follows it on the
         * stream), if the request asked for them ({@code wantsSeals}). False if the session has ended.
         */
        private boolean sendLease(long id, Lease lease, Lease grant, boolean seals) {
            org.leasehold.wire.proto.Lease wire = ProtoCodec.lease(lease, seals);
            if (!send(SessionReply.newBuilder().setRequestId(id).setLease(wire).build(), grant)) {
                return false;
            }
            if (seals) {
                Signatures.seals(lease, wire, s -> sendSeals(SessionReply.newBuilder().setRequestId(id).setSeals(s)
                        .build()));
            }
            return true;
        }

        /**
         * Queues a push of proofs and sends it when the signer has handed out its whole batch, so that the proofs of
         * one batch leave in one message rather than one message (and one write) each; at once when not called on the
         * signing thread ({@link BatchSigner#afterBatch}).
         */
        private void flushSeals() {
            sealsFlushQueued.set(false);
            if (!batching) {
                call.flushLater(flushTask);
            }
        }

        private void sendSeals(SessionReply reply) {
            if (ended) {
                return;
            }
            outbox.add(new Outgoing(reply, null));
            // The flag is cleared before the flush, so a push queued after the flush has taken the queue schedules one.
            if (sealsFlushQueued.compareAndSet(false, true)) {
                BatchSigner.afterBatch(sealsFlushTask);
            }
        }

        /**
         * Answers a proof request with a {@code WitnessSeals} push tagged {@code id}, once the witnesses' batch is
         * signed (hurried: the client waits): for each witness, its frame witness, or why there is none.
         */
        void proofs(long id, ProofRequest req) {
            long start = System.nanoTime();
            if (req.getWitnessesCount() == 0 || req.getWitnessesCount() > Signatures.MAX_PROOFS_PER_REQUEST) {
                error(id, "proof", new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.OUT_OF_RANGE,
                        "a proof request names 1 to " + Signatures.MAX_PROOFS_PER_REQUEST + " witnesses, got "
                        + req.getWitnessesCount() + ": ask in several requests"), start);
                return;
            }
            int found = signatures.proofs(principal, calls.owners(), req, s -> sendSeals(SessionReply.newBuilder()
                    .setRequestId(id).setSeals(s).build()));
            calls.done("proof", found == req.getWitnessesCount() ? "ok" : "unknown", start);
        }

        /** Answers a time request once its batch is signed. */
        void signTime(long id, TimeRequest req) {
            long start = System.nanoTime();
            signatures.signTime(req).thenAccept(reply -> {
                send(SessionReply.newBuilder().setRequestId(id).setSignedTime(reply).build());
                calls.done("time", reply.hasError() ? "unavailable" : "ok", start);
            });
        }

        /** Runs an operation on a held lease and answers with its result or its error. */
        private void onHeld(long id, LeaseRef ref, String op, HeldCall call) {
            long start = System.nanoTime();
            try {
                send(call.apply(access.held(principal, ref, op)).setRequestId(id).build());
                calls.done(op, "ok", start);
            } catch (LeaseException e) {
                error(id, op, e, start);
            }
        }

        void acquire(AcquireRequest req, boolean seals) {
            long start = System.nanoTime();
            long id = req.getRequestId();
            if (waitingById.containsKey(id)) {
                // Only this thread adds to the map, so a free id stays free until this request is registered.
                error(id, RequestChecks.duplicateId(id), start);
                return;
            }
            LeaseRequest request;
            try {
                // The witnesses name the authenticated principal (none when the server authenticates nobody).
                request = RequestChecks.acquire(req)
                        .withPrincipal(CallGate.ANONYMOUS.equals(principal) ? null : principal);
            } catch (InvalidLeaseRequestException e) {
                error(id, e, start);
                return;
            }
            String deniedName = access.firstDenied(principal, Permission.LEASE, request.names());
            if (deniedName != null) {
                error(id, access.denied(principal, Permission.LEASE, deniedName), start);
                return;
            }
            boolean mayWait = req.getWaitMicros() > 0;
            if (mayWait && !reserve(id, request, start)) {
                return;
            }
            CompletableFuture<Lease> f = calls.holder().engine().acquireAsync(request);
            calls.runDueTestTimers();
            if (f.isDone()) {
                if (mayWait) {
                    unreserve();
                }
                answer(id, f, start, seals);
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
                metrics.waits.labelValues(failure == null ? "granted" : LeaseCalls.outcome(LeaseCalls.unwrap(failure)))
                        .observe((System.nanoTime() - start) / 1e9);
                answer(id, f, start, seals);
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
        private void answer(long id, CompletableFuture<Lease> f, long start, boolean seals) {
            Lease lease = null;
            Throwable failure = null;
            try {
                lease = f.join();
            } catch (CancellationException e) {
                failure = e;
            } catch (CompletionException e) {
                failure = LeaseCalls.unwrap(e);
            }
            if (lease != null) {
                // Recorded before the answer goes out: nobody can name this grant before its owner is known.
                calls.owners().granted(principal, lease, calls.holder().time().nowMicros());
                if (sendLease(id, lease, lease, seals)) {
                    calls.done("acquire", "granted", start);
                } else {
                    calls.releaseUnwanted(lease, "its session ended before the grant could be sent");
                    calls.done("acquire", "withdrawn", start);
                }
                return;
            }
            if (failure instanceof CancellationException) {
                error(id, new LeaseBusyException(null, null, "the request was withdrawn by the client before it "
                        + "was granted"), start);
            } else if (failure instanceof LeaseException le) {
                error(id, access.shownTo(principal, le), start);
            } else {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-2901 lease engine failure on acquire", failure);
                error(id, new LeaseServiceUnavailableException(null, "the lease engine failed: " + failure), start);
            }
        }

        void withdraw(long id) {
            long start = System.nanoTime();
            CompletableFuture<Lease> f = waitingById.get(id);
            boolean withdrawn = f != null && f.cancel(false);
            calls.runDueTestTimers();
            send(SessionReply.newBuilder().setRequestId(id).setWithdrawn(withdrawn).build());
            calls.done("withdraw", withdrawn ? "withdrawn" : "not_waiting", start);
        }
    }

    private static String first(LeaseRequest r) {
        return r.names().isEmpty() ? null : r.names().get(0);
    }
}
