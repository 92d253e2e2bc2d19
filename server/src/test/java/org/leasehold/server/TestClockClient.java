package org.leasehold.server;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.time.Micros;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AdvanceTestClockRequest;
import org.leasehold.wire.proto.AwaitTestClockRequest;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.ResetForTestRequest;

/** The test-only calls of a server on a test clock: move its clock, wait for it, reset its engine. */
public final class TestClockClient implements AutoCloseable {
    private final ManagedChannel channel;
    private final LeaseholdGrpc.LeaseholdBlockingStub stub;

    public TestClockClient(String address) {
        this(address, null);
    }

    TestClockClient(String address, String token) {
        int colon = address.lastIndexOf(':');
        channel = NettyChannelBuilder.forAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)))
                .usePlaintext().directExecutor().build();
        Metadata headers = new Metadata();
        headers.put(Protocol.VERSION_HEADER, Integer.toString(Protocol.VERSION));
        if (token != null) {
            headers.put(Protocol.AUTHORIZATION, "Bearer " + token);
        }
        stub = LeaseholdGrpc.newBlockingStub(channel).withInterceptors(MetadataUtils.newAttachHeadersInterceptor(headers));
    }

    LeaseholdGrpc.LeaseholdBlockingStub stub() {
        return stub;
    }

    public Instant advance(Duration d) {
        return ProtoCodec.instant(stub.advanceTestClock(AdvanceTestClockRequest.newBuilder().setMicros(Micros.of(d))
                .build()).getNowMicros());
    }

    void awaitTime(Instant t) {
        stub.awaitTestClock(AwaitTestClockRequest.newBuilder().setAtMicros(Micros.of(t)).build());
    }

    InfoReply info() {
        return stub.withDeadlineAfter(5, TimeUnit.SECONDS).info(InfoRequest.getDefaultInstance());
    }

    /** A fresh engine with {@code s}; the clock restarts at {@code start}, or keeps going if null. */
    InfoReply reset(LeaseFixture.Settings s, Instant start) {
        ResetForTestRequest.Builder b = ResetForTestRequest.newBuilder().setMaxLeaseMicros(Micros.of(s.maxLease()))
                .setGraceMicros(Micros.of(s.grace())).setQuietPeriodMicros(Micros.of(s.quietPeriod()))
                .setHistoryPerName(s.historyPerName()).setMaxWaitersPerName(s.maxWaitersPerName());
        if (start != null) {
            b.setStartMicros(Micros.of(start));
        }
        return stub.resetForTest(b.build());
    }

    @Override
    public void close() {
        channel.shutdownNow();
    }
}
