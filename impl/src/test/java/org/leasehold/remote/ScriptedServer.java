package org.leasehold.remote;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;

import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.InfoReply;
import org.leasehold.wire.proto.InfoRequest;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;

/**
 * A gRPC server on a loopback port that answers session requests as a test scripts them (wrongly, late), for testing
 * how the client copes with a server that misbehaves; {@link #client()} is a client connected to it.
 */
abstract class ScriptedServer extends LeaseholdGrpc.LeaseholdImplBase implements AutoCloseable {
    static final long NOW = 1_800_000_000_000_000L;

    private Server server;
    private RemoteLeaseService client;

    /** Answers one request; {@code send} may be called now or later, from any thread. */
    abstract void answer(SessionRequest request, Consumer<SessionReply> send);

    /** Starts serving and connects a client with {@code callTimeout}. */
    ScriptedServer start(Duration callTimeout) throws java.io.IOException {
        server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(this).build().start();
        // A scripted gRPC session: the client must take it, not the socket transport it would take by default.
        client = new RemoteLeaseService(RemoteClientConfig.builder("127.0.0.1:" + server.getPort())
                .transport(RemoteClientConfig.Transport.GRPC).callTimeout(callTimeout).build());
        return this;
    }

    RemoteLeaseService client() {
        return client;
    }

    /** Where it listens ({@code host:port}). */
    String address() {
        return "127.0.0.1:" + server.getPort();
    }

    @Override
    public void close() throws InterruptedException {
        client.close();
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    @Override
    public void info(InfoRequest request, StreamObserver<InfoReply> out) {
        out.onNext(InfoReply.newBuilder().setServiceId("scripted").setNowMicros(NOW).setMaxLeaseMicros(60_000_000L)
                .setGraceMicros(1_000_000L).setProtocolVersion(Protocol.VERSION).build());
        out.onCompleted();
    }

    @Override
    public StreamObserver<SessionRequests> session(StreamObserver<SessionReplies> out) {
        Consumer<SessionReply> send = reply -> {
            synchronized (out) {
                out.onNext(SessionReplies.newBuilder().addReplies(reply).build());
            }
        };
        return new StreamObserver<>() {
            @Override
            public void onNext(SessionRequests batch) {
                for (SessionRequest r : batch.getRequestsList()) {
                    answer(r, send);
                }
            }

            @Override
            public void onError(Throwable t) {
                // The client went away.
            }

            @Override
            public void onCompleted() {
                synchronized (out) {
                    out.onCompleted();
                }
            }
        };
    }
}
