package org.leasehold.server;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;

import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.NameStatus;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.time.Micros;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
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
import org.leasehold.wire.proto.KeysReply;
import org.leasehold.wire.proto.KeysRequest;
import org.leasehold.wire.proto.LeaseReply;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.ResetForTestRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.SignedTimeReply;
import org.leasehold.wire.proto.TimeRequest;
import org.leasehold.wire.proto.UpgradeRequest;

/**
 * The lease server's gRPC service ({@code leasehold.v1.Leasehold}): the session stream handed to {@link LeaseSessions},
 * and the single calls (renew, upgrade, release, check, inspect, info, echo and the test-clock calls) answered here.
 * Handlers never block, so they run on the transport's event loop.
 */
final class GrpcLeaseEndpoint extends LeaseholdGrpc.LeaseholdImplBase {
    private static final System.Logger LOG = System.getLogger(GrpcLeaseEndpoint.class.getName());

    private final EngineHolder holder;
    private final LeaseAccess access;
    private final LeaseCalls calls;
    private final Signatures signatures;
    private final LeaseSessions sessions;
    private final ServerMetrics metrics;
    /** The socket transport's port, told in {@link InfoReply}; 0 when there is none. */
    private volatile int socketPort;
    /** The largest request accepted, told in {@link InfoReply}. */
    private volatile int maxMessageBytes;

    GrpcLeaseEndpoint(LeaseAccess access, LeaseCalls calls, LeaseSessions sessions) {
        this.holder = calls.holder();
        this.access = access;
        this.calls = calls;
        this.signatures = new Signatures(calls.holder());
        this.sessions = sessions;
        this.metrics = calls.metrics();
    }

    /** The principal of the call being handled (authenticated by {@link CallGate}). */
    private static String principal() {
        String p = CallGate.PRINCIPAL.get();
        return p == null ? CallGate.ANONYMOUS : p;
    }

    @Override
    public StreamObserver<SessionRequests> session(StreamObserver<SessionReplies> responses) {
        ServerCallStreamObserver<SessionReplies> call = (ServerCallStreamObserver<SessionReplies>) responses;
        // gRPC's observer never blocks (it buffers under flow control), so answers go out on whichever thread made them.
        LeaseSessions.SessionHandle session = sessions.open(principal(), CallGate.CONNECTION.get(), new LeaseSessions.Outlet() {
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

    private void reply(StreamObserver<LeaseReply> out, LeaseException e, String op, long start) {
        try {
            out.onNext(LeaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
            out.onCompleted();
        } catch (RuntimeException gone) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}", gone.getMessage());
        }
        calls.done(op, LeaseCalls.outcome(e), start);
    }

    // ------------------------------------------------------------------------------------------------ held leases

    @Override
    public void upgrade(UpgradeRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        try {
            Lease up = calls.upgrade(access.held(principal(), req.getLease(), "upgrade"), req);
            answerSealed(out, up, "upgrade", start);
        } catch (LeaseException e) {
            reply(out, e, "upgrade", start);
        }
    }

    @Override
    public void renew(RenewRequest req, StreamObserver<LeaseReply> out) {
        long start = System.nanoTime();
        try {
            Lease renewed = calls.renew(access.held(principal(), req.getLease(), "renew"), req);
            answerSealed(out, renewed, "renew", start);
        } catch (LeaseException e) {
            reply(out, e, "renew", start);
        }
    }

    /** Answers a unary call with {@code lease} once its witnesses are signed: a unary answer carries their proofs. */
    private void answerSealed(StreamObserver<LeaseReply> out, Lease lease, String op, long start) {
        Signatures.sealed(lease).thenAccept(wire -> {
            try {
                out.onNext(LeaseReply.newBuilder().setLease(wire).build());
                out.onCompleted();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}",
                        gone.getMessage());
            }
            calls.done(op, "ok", start);
        });
    }

    @Override
    public void release(ReleaseRequest req, StreamObserver<ReleaseReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        try {
            Instant ended = calls.release(principal, access.held(principal, req.getLease(), "release"), req);
            out.onNext(ReleaseReply.newBuilder().setEndedAtMicros(Micros.of(ended)).build());
            out.onCompleted();
            calls.done("release", "ok", start);
        } catch (LeaseException e) {
            try {
                out.onNext(ReleaseReply.newBuilder().setError(ProtoCodec.error(e)).build());
                out.onCompleted();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}",
                        gone.getMessage());
            }
            calls.done("release", LeaseCalls.outcome(e), start);
        }
    }

    @Override
    public void check(CheckRequest req, StreamObserver<CheckReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        if (!access.allowed(principal, Permission.CHECK, req.getName())) {
            out.onNext(CheckReply.newBuilder().setError(ProtoCodec.error(access.denied(principal, Permission.CHECK,
                    req.getName()))).build());
            out.onCompleted();
            calls.done("check", "denied", start);
            return;
        }
        boolean current = holder.engine().check(req.getName(), req.getGeneration());
        out.onNext(CheckReply.newBuilder().setCurrent(current).build());
        out.onCompleted();
        calls.done("check", current ? "current" : "not_current", start);
    }

    @Override
    public void inspect(InspectRequest req, StreamObserver<InspectReply> out) {
        long start = System.nanoTime();
        String principal = principal();
        InvalidLeaseRequestException badLimit = RequestChecks.inspectLimit(req.getLimit());
        if (badLimit != null) {
            out.onNext(InspectReply.newBuilder().setError(ProtoCodec.error(badLimit)).build());
            out.onCompleted();
            calls.done("inspect", "invalid", start);
            return;
        }
        boolean all = access.mayInspectAll(principal, req.getPrefix());
        if (!all && !access.mayInspectSomeUnder(principal, req.getPrefix())) {
            out.onNext(InspectReply.newBuilder().setError(ProtoCodec.error(access.denied(principal, Permission.INSPECT,
                    req.getPrefix()))).build());
            out.onCompleted();
            calls.done("inspect", "denied", start);
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
            if (all || access.allowed(principal, Permission.INSPECT, s.name())) {
                b.addNames(ProtoCodec.status(s));
                n++;
            }
        }
        out.onNext(b.build());
        out.onCompleted();
        calls.done("inspect", "ok", start);
    }

    // ------------------------------------------------------------------------------------------------ info, echo

    void socketPort(int port) {
        socketPort = Math.max(0, port);
    }

    void maxMessageBytes(int bytes) {
        maxMessageBytes = bytes;
    }

    private InfoReply info() {
        LeaseService engine = holder.engine();
        EngineConfig c = holder.config();
        return InfoReply.newBuilder().setServiceId(engine.serviceId()).setNowMicros(holder.time().nowMicros())
                .setAvailableFromMicros(Micros.of(engine.availableFrom()))
                .setStartedAtMicros(Micros.of(engine.availableFrom()) - Micros.of(c.effectiveQuietPeriod()))
                .setMaxLeaseMicros(Micros.of(c.maxLeaseDuration())).setGraceMicros(Micros.of(c.grace()))
                .setTestClock(holder.testClock()).setProtocolVersion(Protocol.VERSION).setPrincipal(principal())
                .setSocketPort(socketPort).setMaxMessageBytes(maxMessageBytes).setProofsOnRequest(true).build();
    }

    @Override
    public void info(InfoRequest req, StreamObserver<InfoReply> out) {
        out.onNext(info());
        out.onCompleted();
    }

    @Override
    public void signTime(TimeRequest req, StreamObserver<SignedTimeReply> out) {
        long start = System.nanoTime();
        signatures.signTime(req).thenAccept(reply -> {
            try {
                out.onNext(reply);
                out.onCompleted();
            } catch (RuntimeException gone) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-2102 answer to a gone call dropped: {0}",
                        gone.getMessage());
            }
            calls.done("time", reply.hasError() ? "unavailable" : "ok", start);
        });
    }

    @Override
    public void keys(KeysRequest req, StreamObserver<KeysReply> out) {
        out.onNext(signatures.keys());
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
            c = RequestChecks.resetConfig(holder.config(), req);
            startAt = RequestChecks.resetStart(req);
        } catch (IllegalArgumentException | InvalidLeaseRequestException e) {
            out.onError(Status.INVALID_ARGUMENT.withDescription(e.getMessage()).asRuntimeException());
            return;
        }
        holder.reset(c, startAt);
        calls.owners().clear();
        out.onNext(info());
        out.onCompleted();
    }
}
