package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.Protocol;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.remote.proto.Grant;
import org.leasehold.remote.proto.Holder;
import org.leasehold.remote.proto.InfoReply;
import org.leasehold.remote.proto.InfoRequest;
import org.leasehold.remote.proto.LeaseholdGrpc;
import org.leasehold.remote.proto.ReleaseReply;
import org.leasehold.remote.proto.ReleaseRequest;
import org.leasehold.remote.proto.SessionReplies;
import org.leasehold.remote.proto.SessionReply;
import org.leasehold.remote.proto.SessionRequest;
import org.leasehold.remote.proto.SessionRequests;

/**
 * A renewal answered after the client's call timeout: the client reports the renewal as unavailable, and the late
 * answer (a lease) must not be taken for a grant nobody waits for, which the client would release: the holder still
 * holds its lease. A server that answers renewals late (and everything else at once) stands in for a slow network.
 */
class LateAnswerTest {
    private static final long NOW = 1_800_000_000_000_000L;

    private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
    private final AtomicInteger releases = new AtomicInteger();
    private final CountDownLatch lateAnswerSent = new CountDownLatch(1);
    private Server server;
    private RemoteLeaseService client;

    private final class SlowRenewals extends LeaseholdGrpc.LeaseholdImplBase {
        @Override
        public void info(InfoRequest request, StreamObserver<InfoReply> out) {
            out.onNext(InfoReply.newBuilder().setServiceId("slow").setNowMicros(NOW).setMaxLeaseMicros(60_000_000L)
                    .setGraceMicros(1_000_000L).setProtocolVersion(Protocol.VERSION).build());
            out.onCompleted();
        }

        @Override
        public void release(ReleaseRequest request, StreamObserver<ReleaseReply> out) {
            releases.incrementAndGet();
            out.onNext(ReleaseReply.newBuilder().setEndedAtMicros(NOW).build());
            out.onCompleted();
        }

        @Override
        public StreamObserver<SessionRequests> session(StreamObserver<SessionReplies> out) {
            return new StreamObserver<>() {
                @Override
                public void onNext(SessionRequests batch) {
                    for (SessionRequest r : batch.getRequestsList()) {
                        if (r.hasAcquire()) {
                            send(SessionReply.newBuilder().setRequestId(r.getAcquire().getRequestId())
                                    .setLease(lease(r.getAcquire().getHolder(), r.getAcquire().getNames(0))).build());
                        } else if (r.hasRenew()) {
                            SessionReply renewed = SessionReply.newBuilder().setRequestId(r.getRequestId())
                                    .setLease(lease(r.getRenew().getLease().getHolder(),
                                            r.getRenew().getLease().getNames(0))).build();
                            later.schedule(() -> {
                                send(renewed);
                                lateAnswerSent.countDown();
                            }, 1_500, TimeUnit.MILLISECONDS);
                        } else if (r.hasEcho()) {
                            send(SessionReply.newBuilder().setRequestId(r.getRequestId()).setEcho(r.getEcho()
                                    .getPayload()).build());
                        }
                    }
                }

                private synchronized void send(SessionReply reply) {
                    out.onNext(SessionReplies.newBuilder().addReplies(reply).build());
                }

                @Override
                public void onError(Throwable t) {
                    // The client went away.
                }

                @Override
                public void onCompleted() {
                    out.onCompleted();
                }
            };
        }
    }

    private static org.leasehold.remote.proto.Lease lease(Holder holder, String name) {
        return org.leasehold.remote.proto.Lease.newBuilder().setHolder(holder).setGrantedAtMicros(NOW)
                .setDeadlineMicros(NOW + 30_000_000L).addGrants(Grant.newBuilder().setName(name).setGeneration(7)
                        .setFloorMicros(NOW).setWritableFromMicros(NOW)).build();
    }

    @BeforeEach
    void start() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(new SlowRenewals())
                .build().start();
        client = new RemoteLeaseService(RemoteClientConfig.builder("127.0.0.1:" + server.getPort())
                .callTimeout(Duration.ofMillis(500)).build());
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        later.shutdownNow();
    }

    @Test
    void aRenewalAnsweredTooLateDoesNotReleaseTheLease() throws Exception {
        Lease held = client.acquire(LeaseRequest.builder(new HolderId("late", "t"), "late/1").build());
        LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                () -> client.renew(held, held.deadline(), null));
        assertTrue(e.getMessage().contains("did not answer the renewal within the call timeout"), e.getMessage());
        assertTrue(lateAnswerSent.await(10, TimeUnit.SECONDS));
        // Answers of one stream arrive in order: once this echo is back, the late renewal was handled too.
        client.ping("late/1");
        assertEquals(0, releases.get(), "the client released a lease its holder still holds");
    }
}
