package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.Protocol;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.remote.proto.InfoReply;
import org.leasehold.remote.proto.InfoRequest;
import org.leasehold.remote.proto.LeaseholdGrpc;
import org.leasehold.remote.proto.SessionReplies;
import org.leasehold.remote.proto.SessionReply;
import org.leasehold.remote.proto.SessionRequest;
import org.leasehold.remote.proto.SessionRequests;

/**
 * The client against a server that answers session requests with the wrong kind of answer (as a server of another
 * release might): each call fails with an error saying what came back and what was due, and nothing hangs.
 */
class MismatchedServerTest {
    private Server server;
    private RemoteLeaseService client;

    /** Answers every session request with "ended at 1" (a release's answer), whatever it asked. */
    private static final class WrongAnswers extends LeaseholdGrpc.LeaseholdImplBase {
        @Override
        public void info(InfoRequest request, StreamObserver<InfoReply> out) {
            out.onNext(InfoReply.newBuilder().setServiceId("mismatched").setNowMicros(1_800_000_000_000_000L)
                    .setMaxLeaseMicros(60_000_000L).setGraceMicros(1_000_000L).setProtocolVersion(Protocol.VERSION)
                    .build());
            out.onCompleted();
        }

        @Override
        public StreamObserver<SessionRequests> session(StreamObserver<SessionReplies> out) {
            return new StreamObserver<>() {
                @Override
                public void onNext(SessionRequests batch) {
                    SessionReplies.Builder answers = SessionReplies.newBuilder();
                    for (SessionRequest r : batch.getRequestsList()) {
                        long id = r.hasAcquire() ? r.getAcquire().getRequestId() : r.getRequestId();
                        answers.addReplies(SessionReply.newBuilder().setRequestId(id).setEndedAtMicros(1));
                    }
                    out.onNext(answers.build());
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

    @BeforeEach
    void start() throws Exception {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(new WrongAnswers())
                .build().start();
        client = new RemoteLeaseService(RemoteClientConfig.builder("127.0.0.1:" + server.getPort())
                .callTimeout(Duration.ofSeconds(2)).build());
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    @Test
    void wrongKindsOfAnswerFailTheCallSayingWhatCameBack() {
        LeaseException echo = assertThrows(LeaseException.class, () -> client.ping("n"));
        assertFalse(echo instanceof LeaseServiceUnavailableException, "an answer came; it was the wrong one: " + echo);
        assertTrue(echo.getMessage().contains("answered the echo with ENDED_AT_MICROS where ECHO was due")
                && echo.getMessage().contains("matching client and server versions"), echo.getMessage());
        LeaseException acquire = assertThrows(LeaseException.class,
                () -> client.acquire(LeaseRequest.builder(new HolderId("mismatch", "t"), "n").build()));
        assertTrue(acquire.getMessage().contains("answered the acquisition with ENDED_AT_MICROS where a lease or an "
                + "error was due"), acquire.getMessage());
    }
}
