package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.function.LongPredicate;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.leasehold.engine.EngineConfig;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.CheckReply;
import org.leasehold.wire.proto.CheckRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.InspectReply;
import org.leasehold.wire.proto.InspectRequest;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.LeaseReply;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.Mode;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.RenewRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.UpgradeRequest;
import org.leasehold.wire.proto.WithdrawRequest;

/**
 * Every numeric field of every request, set to extreme values ({@code Long.MIN_VALUE}, {@code Long.MAX_VALUE}, 0, -1,
 * 1, the integer extremes for int fields, and the bounds of each documented range and one past them), on both
 * transports and on the unary calls: each is answered in band (a reply with the request's id, or the unary call's
 * reply, never a failed call or a closed connection); a value outside its documented range is answered
 * {@code INVALID} naming the field; and the session still grants a normal acquisition afterwards.
 */
class RequestRangesTest {
    private static final long MAX_INSTANT = ProtoCodec.MAX_INSTANT_MICROS;
    private static final long MAX_DURATION = ProtoCodec.MAX_DURATION_MICROS;
    private static final long[] LONGS = {Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, 0, 1, Integer.MAX_VALUE,
        Long.MAX_VALUE - 1, Long.MAX_VALUE, MAX_INSTANT, MAX_INSTANT + 1, MAX_DURATION, MAX_DURATION + 1};
    private static final long[] INTS = {Integer.MIN_VALUE, -1, 0, 1, 2, 3, Integer.MAX_VALUE};

    private static final LongPredicate INSTANT = v -> v >= 0 && v <= MAX_INSTANT;
    private static final LongPredicate DURATION = v -> v >= 0 && v <= MAX_DURATION;
    private static final LongPredicate ANY = v -> true;

    private final List<AutoCloseable> closing = new ArrayList<>();
    private LeaseServer server;
    private long nextId = 1L << 40;
    private int names;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withLimits(1_000, 1_000, 1_000, 64 * 1024).withSocket(ServerConfig.SocketSettings.loopback())
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing) {
            c.close();
        }
        server.close();
    }

    /** One request with one field set to one value: how to build it around a held lease, and what the field accepts. */
    private record Case(String type, String field, long value, LongPredicate accepts,
            BiFunction<Long, LeaseRef, SessionRequest> build) {
        @Override
        public String toString() {
            return type + "." + field + " = " + value;
        }
    }

    private static AcquireRequest.Builder acquire(long id, String name) {
        return AcquireRequest.newBuilder().setRequestId(id).addNames(name)
                .setHolder(Holder.newBuilder().setProcess("ranges").setOwner("o"));
    }

    private static SessionRequest session(long id, AcquireRequest.Builder a) {
        return SessionRequest.newBuilder().setAcquire(a.setRequestId(id)).build();
    }

    /** The lease reference with its mode's permits, its deadline or its first generation replaced. */
    private static List<Case> refCases(String type, BiFunction<Long, LeaseRef, SessionRequest> around) {
        List<Case> cases = new ArrayList<>();
        for (long v : LONGS) {
            cases.add(new Case(type, "lease.deadline_micros", v, INSTANT,
                    (id, ref) -> around.apply(id, ref.toBuilder().setDeadlineMicros(v).build())));
            cases.add(new Case(type, "lease.generations", v, ANY,
                    (id, ref) -> around.apply(id, ref.toBuilder().setGenerations(0, v).build())));
        }
        for (long v : INTS) {
            cases.add(new Case(type, "mode.permits", v, p -> p == 0 || p == 1,
                    (id, ref) -> around.apply(id, ref.toBuilder().setMode(ref.getMode().toBuilder()
                            .setPermits((int) v)).build())));
            cases.add(new Case(type, "mode.type", v, t -> t >= 0 && t <= 2,
                    (id, ref) -> around.apply(id, ref.toBuilder().setMode(mode(v)).build())));
            cases.add(new Case(type, "kind", v, k -> k == 0 || k == 1,
                    (id, ref) -> around.apply(id, ref.toBuilder().setKindValue((int) v).build())));
        }
        return cases;
    }

    /** A mode of type {@code type} with permits its type accepts (1 for a semaphore, else 0). */
    private static Mode mode(long type) {
        return Mode.newBuilder().setTypeValue((int) type).setPermits(type == Mode.Type.SEMAPHORE_VALUE ? 1 : 0).build();
    }

    private static SessionRequest release(long id, ReleaseRequest.Builder r) {
        return SessionRequest.newBuilder().setRequestId(id).setRelease(r).build();
    }

    private static SessionRequest renew(long id, RenewRequest.Builder r) {
        return SessionRequest.newBuilder().setRequestId(id).setRenew(r).build();
    }

    private static SessionRequest upgrade(long id, UpgradeRequest.Builder r) {
        return SessionRequest.newBuilder().setRequestId(id).setUpgrade(r).build();
    }

    /** Every case: each numeric field of each request type, with each extreme value. */
    private List<Case> cases() {
        List<Case> cases = new ArrayList<>();
        for (long v : LONGS) {
            String fresh = "ranges/acquire/" + (names++);
            cases.add(new Case("Acquire", "deadline_micros", v, INSTANT,
                    (id, ref) -> session(id, acquire(id, fresh).setDeadlineMicros(v))));
            cases.add(new Case("Acquire", "started_at_micros", v, INSTANT,
                    (id, ref) -> session(id, acquire(id, fresh).setStartedAtMicros(v))));
            cases.add(new Case("Acquire", "lease_time_micros", v, DURATION,
                    (id, ref) -> session(id, acquire(id, fresh).setLeaseTimeMicros(v))));
            cases.add(new Case("Acquire", "wait_micros", v, DURATION,
                    (id, ref) -> session(id, acquire(id, fresh).setWaitMicros(v))));
            cases.add(new Case("Acquire", "request_id", v, ANY, (id, ref) -> session(v, acquire(v, fresh))));
            cases.add(new Case("Withdraw", "request_id", v, ANY, (id, ref) -> SessionRequest.newBuilder()
                    .setWithdraw(WithdrawRequest.newBuilder().setRequestId(v)).build()));
            cases.add(new Case("Echo", "request_id", v, ANY, (id, ref) -> SessionRequest.newBuilder().setRequestId(v)
                    .setEcho(EchoRequest.getDefaultInstance()).build()));
            cases.add(new Case("Release", "request_id", v, ANY,
                    (id, ref) -> release(v, ReleaseRequest.newBuilder().setLease(ref))));
            cases.add(new Case("Release", "watermark_micros", v, INSTANT,
                    (id, ref) -> release(id, ReleaseRequest.newBuilder().setLease(ref).setWatermarkMicros(v))));
            cases.add(new Case("Renew", "deadline_micros", v, INSTANT,
                    (id, ref) -> renew(id, RenewRequest.newBuilder().setLease(ref).setDeadlineMicros(v))));
            cases.add(new Case("Renew", "hold_in_doubt_until_micros", v, INSTANT,
                    (id, ref) -> renew(id, RenewRequest.newBuilder().setLease(ref)
                            .setDeadlineMicros(ref.getDeadlineMicros()).setHoldInDoubtUntilMicros(v))));
            cases.add(new Case("Upgrade", "deadline_micros", v, INSTANT,
                    (id, ref) -> upgrade(id, UpgradeRequest.newBuilder().setLease(ref).setDeadlineMicros(v))));
        }
        for (long v : INTS) {
            String fresh = "ranges/mode/" + (names++);
            for (Mode.Type t : new Mode.Type[] {Mode.Type.EXCLUSIVE, Mode.Type.SHARED, Mode.Type.SEMAPHORE}) {
                LongPredicate ok = t == Mode.Type.EXCLUSIVE ? p -> p == 0 || p == 1
                        : t == Mode.Type.SHARED ? p -> p == 0 : p -> p >= 1;
                cases.add(new Case("Acquire", "mode.permits", v, ok, (id, ref) -> session(id, acquire(id, fresh + t)
                        .setMode(Mode.newBuilder().setType(t).setPermits((int) v)))));
            }
            cases.add(new Case("Acquire", "mode.type", v, m -> m >= 0 && m <= 2,
                    (id, ref) -> session(id, acquire(id, fresh).setMode(mode(v)))));
            cases.add(new Case("Acquire", "kind", v, k -> k == 0 || k == 1,
                    (id, ref) -> session(id, acquire(id, fresh).setKindValue((int) v))));
        }
        cases.addAll(refCases("Release", (id, ref) -> release(id, ReleaseRequest.newBuilder().setLease(ref))));
        cases.addAll(refCases("Renew", (id, ref) -> renew(id, RenewRequest.newBuilder().setLease(ref)
                .setDeadlineMicros(ref.getDeadlineMicros()))));
        cases.addAll(refCases("Upgrade", (id, ref) -> upgrade(id, UpgradeRequest.newBuilder().setLease(ref))));
        return cases;
    }

    /** The id the answer to {@code r} carries. */
    private static long answerId(SessionRequest r) {
        return switch (r.getRequestCase()) {
            case ACQUIRE -> r.getAcquire().getRequestId();
            case WITHDRAW -> r.getWithdraw().getRequestId();
            default -> r.getRequestId();
        };
    }

    /** Acquires a fresh name on {@code s}: its reference. */
    private LeaseRef hold(RawSession s) throws Exception {
        long id = nextId++;
        s.send(session(id, acquire(id, "ranges/held/" + (names++)).setLeaseTimeMicros(60_000_000L)));
        SessionReply r = s.reply(id);
        assertTrue(r.hasLease(), r.toString());
        return ProtoCodec.ref(ProtoCodec.lease(r.getLease()));
    }

    private void releaseQuietly(RawSession s, SessionReply answer) throws Exception {
        if (answer.hasLease()) {
            long id = nextId++;
            s.send(release(id, ReleaseRequest.newBuilder().setLease(ProtoCodec.ref(ProtoCodec.lease(answer.getLease())))));
            s.reply(id);
        }
    }

    private static void assertAnswer(Case c, boolean inRange, LeaseError error, boolean hasError, String answer) {
        if (!inRange) {
            assertTrue(hasError, c + ": out of range, yet answered " + answer);
            assertEquals(LeaseError.Kind.INVALID, error.getKind(), c + ": " + answer);
            assertTrue(error.getMessage().contains(c.field()), c + ": the refusal names the field: " + error.getMessage());
        }
    }

    @ParameterizedTest(name = "socket transport: {0}")
    @ValueSource(booleans = {false, true})
    void everyNumericFieldOfEveryRequestIsAnsweredInBandAndTheSessionLivesOn(boolean socket) throws Exception {
        RawSession s = socket ? RawSession.socket(server.socketPort(), null) : RawSession.grpc(server.port(), null);
        closing.add(s);
        int invalid = 0;
        List<Case> cases = cases();
        for (Case c : cases) {
            LeaseRef ref = hold(s);
            SessionRequest r = c.build().apply(nextId++, ref);
            s.send(r);
            SessionReply answer = s.reply(answerId(r));
            boolean inRange = c.accepts().test(c.value());
            assertAnswer(c, inRange, answer.getError(), answer.hasError(), answer.toString());
            invalid += inRange ? 0 : 1;
            releaseQuietly(s, answer);
            // The session lives on: a normal acquisition on it is granted (and the held lease is ended if still held).
            long id = nextId++;
            s.send(session(id, acquire(id, "ranges/alive/" + (names++))));
            SessionReply alive = s.reply(id);
            assertTrue(alive.hasLease(), c + ": after it, " + alive);
            releaseQuietly(s, alive);
            long end = nextId++;
            s.send(release(end, ReleaseRequest.newBuilder().setLease(ref)));
            s.reply(end);
        }
        assertTrue(cases.size() > 250 && invalid > 100, cases.size() + " cases, " + invalid + " out of range");
    }

    @Test
    void theUnaryCallsAnswerEveryExtremeValueInTheirReply() throws Exception {
        ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext().build();
        closing.add(() -> ch.shutdownNow().awaitTermination(5, TimeUnit.SECONDS));
        Metadata h = new Metadata();
        h.put(Protocol.VERSION_HEADER, Integer.toString(Protocol.VERSION));
        LeaseholdGrpc.LeaseholdBlockingStub stub = LeaseholdGrpc.newBlockingStub(ch)
                .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h));
        RawSession s = RawSession.grpc(server.port(), null);
        closing.add(s);
        for (Case c : cases()) {
            if (!List.of("Release", "Renew", "Upgrade").contains(c.type()) || c.field().equals("request_id")) {
                continue;
            }
            LeaseRef ref = hold(s);
            SessionRequest r = c.build().apply(0L, ref);
            boolean inRange = c.accepts().test(c.value());
            try {
                switch (r.getRequestCase()) {
                    case RELEASE -> {
                        ReleaseReply a = stub.withDeadlineAfter(10, TimeUnit.SECONDS).release(r.getRelease());
                        assertAnswer(c, inRange, a.getError(), a.hasError(), a.toString());
                    }
                    case RENEW -> {
                        LeaseReply a = stub.withDeadlineAfter(10, TimeUnit.SECONDS).renew(r.getRenew());
                        assertAnswer(c, inRange, a.getError(), a.hasError(), a.toString());
                    }
                    case UPGRADE -> {
                        LeaseReply a = stub.withDeadlineAfter(10, TimeUnit.SECONDS).upgrade(r.getUpgrade());
                        assertAnswer(c, inRange, a.getError(), a.hasError(), a.toString());
                    }
                    default -> fail("not a unary case: " + c);
                }
            } catch (StatusRuntimeException e) {
                fail(c + ": the call failed instead of answering: " + e.getStatus());
            }
            long end = nextId++;
            s.send(release(end, ReleaseRequest.newBuilder().setLease(ref)));
            s.reply(end);
        }
        for (long v : LONGS) {
            CheckReply a = stub.withDeadlineAfter(10, TimeUnit.SECONDS).check(CheckRequest.newBuilder()
                    .setName("ranges/check").setGeneration(v).build());
            assertTrue(!a.hasError() && !a.getCurrent(), v + ": " + a);
        }
        for (long v : INTS) {
            InspectReply a = stub.withDeadlineAfter(10, TimeUnit.SECONDS).inspect(InspectRequest.newBuilder()
                    .setPrefix("ranges/").setLimit((int) v).build());
            if (v < 0) {
                assertEquals(LeaseError.Kind.INVALID, a.getError().getKind(), v + ": " + a);
                assertTrue(a.getError().getMessage().contains("limit"), a.getError().getMessage());
            } else {
                assertTrue(!a.hasError() && a.getNamesCount() <= v, v + ": " + a);
            }
        }
        // The session that held the leases lives on too.
        hold(s);
    }
}
