package org.leasehold.server;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
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
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.remote.ProtoCodec;
import org.leasehold.remote.Protocol;
import org.leasehold.remote.proto.AcquireRequest;
import org.leasehold.remote.proto.AdvanceTestClockRequest;
import org.leasehold.remote.proto.AwaitTestClockRequest;
import org.leasehold.remote.proto.CheckReply;
import org.leasehold.remote.proto.CheckRequest;
import org.leasehold.remote.proto.EchoReply;
import org.leasehold.remote.proto.EchoRequest;
import org.leasehold.remote.proto.InfoReply;
import org.leasehold.remote.proto.InfoRequest;
import org.leasehold.remote.proto.InspectReply;
import org.leasehold.remote.proto.InspectRequest;
import org.leasehold.remote.proto.LeaseRef;
import org.leasehold.remote.proto.LeaseReply;
import org.leasehold.remote.proto.LeaseholdGrpc;
import org.leasehold.remote.proto.ReleaseReply;
import org.leasehold.remote.proto.ReleaseRequest;
import org.leasehold.remote.proto.RenewRequest;
import org.leasehold.remote.proto.ResetForTestRequest;
import org.leasehold.remote.proto.UpgradeRequest;
import org.leasehold.remote.proto.WithdrawReply;
import org.leasehold.remote.proto.WithdrawRequest;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.time.Micros;

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
    private final AtomicInteger waiting = new AtomicInteger();
    private final Map<String, CompletableFuture<Lease>> waitingById = new ConcurrentHashMap<>();

    LeaseholdService(EngineHolder holder, AccessControl acl, ServerMetrics metrics, int maxWaiters,
            int maxWaitersPerConnection) {
        this.holder = holder;
        this.acl = acl;
        this.metrics = metrics;
        this.maxWaiters = maxWaiters;
        this.maxWaitersPerConnection = maxWaitersPerConnection;
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

    private void done(String op, String outcome, long startNanos) {
        metrics.ops.labelValues(op, outcome).inc();
        metrics.latency.labelValues(op).observe((System.nanoTime() - startNanos) / 1e9);
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

    private static void badRequest(StreamObserver<?> out, String op, RuntimeException e) {
        out.onError(Status.INVALID_ARGUMENT.withDescription("the " + op + " request cannot be decoded: " + e.getMessage())
                .asRuntimeException());
    }

    // ------------------------------------------------------------------------------------------------ acquire

    @Override
    public void acquire(AcquireRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        LeaseRequest request;
        try {
            request = ProtoCodec.acquire(req);
        } catch (RuntimeException e) {
            metrics.ops.labelValues("acquire", "invalid").inc();
            badRequest(out, "Acquire", e);
            return;
        }
        String deniedName = acl.firstDenied(principal, Permission.LEASE, request.names());
        if (deniedName != null) {
            reply(out, denied(principal, Permission.LEASE, deniedName), "acquire", start);
            return;
        }
        boolean mayWait = req.getWaitMicros() > 0;
        CallGate.Connection conn = CallGate.CONNECTION.get();
        if (mayWait) {
            if (conn != null && conn.waiting.incrementAndGet() > maxWaitersPerConnection) {
                conn.waiting.decrementAndGet();
                reply(out, new LeaseBusyException(first(request), null, "this connection already has "
                        + maxWaitersPerConnection + " waiting acquisitions (the server's --max-waiters-per-connection): "
                        + "wait for some to finish, or try without waiting"), "acquire", start);
                return;
            }
            if (waiting.incrementAndGet() > maxWaiters) {
                waiting.decrementAndGet();
                if (conn != null) {
                    conn.waiting.decrementAndGet();
                }
                reply(out, new LeaseBusyException(first(request), null, "the server already has " + maxWaiters
                        + " waiting acquisitions (its --max-waiters): retry later, or try without waiting"),
                        "acquire", start);
                return;
            }
        }
        CompletableFuture<Lease> f = holder.engine().acquireAsync(request);
        if (f.isDone()) {
            if (mayWait) {
                unwait(conn);
            }
            answer(out, f, "acquire", start);
            return;
        }
        // Waiting: answered when the engine decides; a cancelled call withdraws the request.
        metrics.waiting.inc();
        String key = principal + "/" + Long.toHexString(req.getRequestId());
        waitingById.put(key, f);
        ServerCallStreamObserver<LeaseReply> call = (ServerCallStreamObserver<LeaseReply>) out;
        call.setOnCancelHandler(() -> f.cancel(false));
        f.whenComplete((lease, failure) -> {
            waitingById.remove(key, f);
            unwait(conn);
            metrics.waiting.dec();
            String outcome = failure == null ? "granted" : outcome(unwrap(failure));
            metrics.waits.labelValues(outcome).observe((System.nanoTime() - start) / 1e9);
            if (call.isCancelled()) {
                if (lease != null) {
                    releaseUnwanted(lease, "its call was cancelled");
                }
                done("acquire", "withdrawn", start);
                return;
            }
            answer(out, f, "acquire", start);
        });
    }

    private void unwait(CallGate.Connection conn) {
        waiting.decrementAndGet();
        if (conn != null) {
            conn.waiting.decrementAndGet();
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

    /** Sends the outcome of a completed engine future. */
    private void answer(StreamObserver<LeaseReply> out, CompletableFuture<Lease> f, String op, long start) {
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
            try {
                out.onNext(LeaseReply.newBuilder().setLease(ProtoCodec.lease(lease)).build());
                out.onCompleted();
                done(op, "granted", start);
            } catch (RuntimeException e) {
                releaseUnwanted(lease, "its answer could not be sent (" + e.getMessage() + ")");
                done(op, "withdrawn", start);
            }
            return;
        }
        if (failure instanceof CancellationException) {
            reply(out, new LeaseBusyException(null, null, "the request was withdrawn by the client before it was "
                    + "granted"), op, start);
        } else if (failure instanceof LeaseException le) {
            reply(out, le, op, start);
        } else {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-2901 lease engine failure on " + op, failure);
            metrics.ops.labelValues(op, "error").inc();
            out.onError(Status.INTERNAL.withDescription("the lease engine failed: " + failure).asRuntimeException());
        }
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
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2103 released {0}: {1}", lease.describe(), why);
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2104 releasing {0} ({1}) failed: {2}", lease.describe(), why,
                    e.getMessage());
        }
    }

    @Override
    public void withdraw(WithdrawRequest req, StreamObserver<WithdrawReply> out) {
        long start = System.nanoTime();
        CompletableFuture<Lease> f = waitingById.get(principal() + "/" + Long.toHexString(req.getRequestId()));
        boolean withdrawn = f != null && f.cancel(false);
        out.onNext(WithdrawReply.newBuilder().setWithdrawn(withdrawn).build());
        out.onCompleted();
        done("withdraw", withdrawn ? "withdrawn" : "not_waiting", start);
    }

    // ------------------------------------------------------------------------------------------------ held leases

    /** Decodes a reference and checks the caller may lease its names; null (after answering) if not. */
    private Lease leaseOf(LeaseRef ref, StreamObserver<?> out, String op, long start, ErrorReply errors) {
        Lease lease;
        try {
            lease = ProtoCodec.lease(ref);
        } catch (RuntimeException e) {
            metrics.ops.labelValues(op, "invalid").inc();
            badRequest(out, op, e);
            return null;
        }
        String principal = principal();
        String deniedName = acl.firstDenied(principal, Permission.LEASE, lease.names());
        if (deniedName != null) {
            LeaseException e = denied(principal, Permission.LEASE, deniedName);
            errors.send(e);
            done(op, outcome(e), start);
            return null;
        }
        return lease;
    }

    private interface ErrorReply {
        void send(LeaseException e);
    }

    private static ErrorReply leaseErrors(StreamObserver<LeaseReply> out) {
        return e -> {
            out.onNext(LeaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
            out.onCompleted();
        };
    }

    @Override
    public void upgrade(UpgradeRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        Lease lease = leaseOf(req.getLease(), out, "upgrade", start, leaseErrors(out));
        if (lease == null) {
            return;
        }
        try {
            Lease up = holder.engine().upgrade(lease, req.hasDeadlineMicros() ? Micros.toInstant(req.getDeadlineMicros())
                    : null);
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
        Lease lease = leaseOf(req.getLease(), out, "renew", start, leaseErrors(out));
        if (lease == null) {
            return;
        }
        try {
            Lease renewed = holder.engine().renew(lease, Micros.toInstant(req.getDeadlineMicros()),
                    req.hasMetadata() ? req.getMetadata() : null);
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
        ErrorReply errors = e -> {
            out.onNext(ReleaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
            out.onCompleted();
        };
        Lease lease = leaseOf(req.getLease(), out, "release", start, errors);
        if (lease == null) {
            return;
        }
        try {
            Instant ended = holder.engine().release(lease,
                    req.hasWatermarkMicros() ? Micros.toInstant(req.getWatermarkMicros()) : null,
                    req.hasMetadata() ? req.getMetadata() : null);
            out.onNext(ReleaseReply.newBuilder().setEndedAtMicros(Micros.of(ended)).build());
            out.onCompleted();
            done("release", "ok", start);
        } catch (LeaseException e) {
            errors.send(e);
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
        boolean all = acl.mayInspectAll(principal, req.getPrefix());
        if (!all && !acl.mayInspectSome(principal)) {
            out.onNext(InspectReply.newBuilder().setError(ProtoCodec.error(denied(principal, Permission.INSPECT,
                    req.getPrefix()))).build());
            out.onCompleted();
            done("inspect", "denied", start);
            return;
        }
        int limit = Math.max(0, req.getLimit());
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

    private InfoReply info() {
        EmbeddedLeaseService engine = holder.engine();
        EngineConfig c = engine.config();
        return InfoReply.newBuilder().setServiceId(engine.serviceId()).setNowMicros(holder.time().nowMicros())
                .setAvailableFromMicros(Micros.of(engine.availableFrom()))
                .setStartedAtMicros(Micros.of(engine.availableFrom()) - Micros.of(c.effectiveQuietPeriod()))
                .setMaxLeaseMicros(Micros.of(c.maxLeaseDuration())).setGraceMicros(Micros.of(c.grace()))
                .setTestClock(holder.testClock()).setProtocolVersion(Protocol.VERSION).setPrincipal(principal()).build();
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
        holder.manual().advance(Duration.ofNanos(Math.multiplyExact(req.getMicros(), 1_000L)));
        out.onNext(info());
        out.onCompleted();
    }

    @Override
    public void awaitTestClock(AwaitTestClockRequest req, StreamObserver<InfoReply> out) {
        if (refuseUnlessTestClock(out, "AwaitTestClock")) {
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
        try {
            c = holder.config().withMaxLeaseDuration(Duration.ofNanos(req.getMaxLeaseMicros() * 1_000L))
                    .withGrace(Duration.ofNanos(req.getGraceMicros() * 1_000L))
                    .withQuietPeriod(Duration.ofNanos(req.getQuietPeriodMicros() * 1_000L))
                    .withHistoryPerName(req.getHistoryPerName()).withMaxWaitersPerName(req.getMaxWaitersPerName())
                    .validate();
        } catch (IllegalArgumentException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        holder.reset(c, req.hasStartMicros() ? Micros.toInstant(req.getStartMicros()) : null);
        waitingById.clear();
        out.onNext(info());
        out.onCompleted();
    }

    /** Waiting acquisitions now (for tests and health). */
    int waitingNow() {
        return waiting.get();
    }
}
