package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import io.grpc.stub.StreamObserver;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.proto.Grant;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;

/**
 * A renewal answered after the client's call timeout: the client reports the renewal as unavailable, and the late
 * answer (a lease) must not be taken for a grant nobody waits for, which the client would release: the holder still
 * holds its lease. A server that answers renewals late (and everything else at once) stands in for a slow network.
 */
class LateAnswerTest {
    private final ScheduledExecutorService later = Executors.newSingleThreadScheduledExecutor();
    private final AtomicInteger releases = new AtomicInteger();
    private final CountDownLatch lateAnswerSent = new CountDownLatch(1);

    /** Grants at once, answers renewals 2.5 s late, echoes, and counts unary releases (how the client releases). */
    private final class SlowRenewals extends ScriptedServer {
        @Override
        void answer(SessionRequest r, Consumer<SessionReply> send) {
            if (r.hasAcquire()) {
                send.accept(SessionReply.newBuilder().setRequestId(r.getAcquire().getRequestId())
                        .setLease(lease(r.getAcquire().getHolder(), r.getAcquire().getNames(0))).build());
            } else if (r.hasRenew()) {
                SessionReply renewed = SessionReply.newBuilder().setRequestId(r.getRequestId())
                        .setLease(lease(r.getRenew().getLease().getHolder(), r.getRenew().getLease().getNames(0)))
                        .build();
                later.schedule(() -> {
                    send.accept(renewed);
                    lateAnswerSent.countDown();
                }, 2_500, TimeUnit.MILLISECONDS);
            } else if (r.hasEcho()) {
                send.accept(SessionReply.newBuilder().setRequestId(r.getRequestId()).setEcho(r.getEcho().getPayload())
                        .build());
            }
        }

        @Override
        public void release(ReleaseRequest request, StreamObserver<ReleaseReply> out) {
            releases.incrementAndGet();
            out.onNext(ReleaseReply.newBuilder().setEndedAtMicros(NOW).build());
            out.onCompleted();
        }
    }

    private static org.leasehold.wire.proto.Lease lease(Holder holder, String name) {
        return org.leasehold.wire.proto.Lease.newBuilder().setHolder(holder).setGrantedAtMicros(ScriptedServer.NOW)
                .setDeadlineMicros(ScriptedServer.NOW + 30_000_000L).addGrants(Grant.newBuilder().setName(name)
                        .setGeneration(7).setFloorMicros(ScriptedServer.NOW).setWritableFromMicros(ScriptedServer.NOW))
                .build();
    }

    @AfterEach
    void stop() {
        later.shutdownNow();
    }

    @Test
    void aRenewalAnsweredTooLateDoesNotReleaseTheLease() throws Exception {
        try (ScriptedServer server = new SlowRenewals().start(Duration.ofMillis(1_000))) {
            // A first acquisition through a patient client loads what the transport needs in this JVM, which must not
            // count against the short call timeout of the client under test.
            try (RemoteLeaseService warm = new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                    .transport(RemoteClientConfig.Transport.GRPC).callTimeout(Duration.ofSeconds(30)).build())) {
                warm.acquire(LeaseRequest.builder(new HolderId("warm", "t"), "warm/1").build());
            }
            RemoteLeaseService client = server.client();
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
}
