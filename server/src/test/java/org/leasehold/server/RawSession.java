package org.leasehold.server;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.MetadataUtils;
import io.grpc.stub.StreamObserver;

import org.leasehold.wire.Protocol;
import org.leasehold.wire.WireFrames;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.SocketHello;
import org.leasehold.wire.proto.SocketWelcome;

/**
 * One session with a lease server, spoken by the test itself on either transport: a gRPC {@code Session} stream or a
 * socket-transport connection. Requests go out as written; answers are collected by a reader thread, and a test takes
 * them by request id. The session's end (the server closing it, or failing the stream) is seen as such, never as a
 * time-out.
 */
abstract class RawSession implements AutoCloseable {
    /** How long an answer may take before the test fails. */
    static final long ANSWER_SECONDS = 10;

    /** What the reader saw: an answer, or the end of the session. */
    private record Event(SessionReply reply, String end) {
    }

    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final List<SessionReply> unread = new ArrayList<>();
    private volatile String ended;

    /** The transport's name, for messages. */
    abstract String transport();

    /** Sends one batch of requests. */
    abstract void send(SessionRequests batch) throws IOException;

    final void send(SessionRequest... requests) throws IOException {
        send(SessionRequests.newBuilder().addAllRequests(List.of(requests)).build());
    }

    final void received(SessionReplies replies) {
        for (SessionReply r : replies.getRepliesList()) {
            events.add(new Event(r, null));
        }
    }

    final void endedBecause(String why) {
        events.add(new Event(null, why));
    }

    /** The next answer to {@code id}; fails if the session ends first, or nothing comes within the time allowed. */
    final SessionReply reply(long id) throws InterruptedException {
        for (Iterator<SessionReply> it = unread.iterator(); it.hasNext();) {
            SessionReply r = it.next();
            if (r.getRequestId() == id) {
                it.remove();
                return r;
            }
        }
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(ANSWER_SECONDS);
        while (true) {
            if (ended != null) {
                throw new AssertionError(transport() + " session ended before the answer to request " + id + ": " + ended);
            }
            Event e = events.poll(end - System.nanoTime(), TimeUnit.NANOSECONDS);
            if (e == null) {
                throw new AssertionError("no answer to request " + id + " within " + ANSWER_SECONDS + " s on the "
                        + transport() + " session");
            }
            if (e.end != null) {
                ended = e.end;
                continue;
            }
            if (e.reply.getRequestId() == id) {
                return e.reply;
            }
            unread.add(e.reply);
        }
    }

    /** Every answer received before the answer to {@code id}, that one included (taking them all). */
    final List<SessionReply> repliesUpTo(long id) throws InterruptedException {
        SessionReply last = reply(id);
        List<SessionReply> all = new ArrayList<>(unread);
        unread.clear();
        all.add(last);
        return all;
    }

    /** A gRPC {@code Session} stream on its own channel, with {@code token} if not null. */
    static RawSession grpc(int port, String token) {
        ManagedChannel ch = NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
        Metadata h = new Metadata();
        h.put(Protocol.VERSION_HEADER, Integer.toString(Protocol.VERSION));
        if (token != null) {
            h.put(Protocol.AUTHORIZATION, "Bearer " + token);
        }
        return new RawSession() {
            private final StreamObserver<SessionRequests> out = LeaseholdGrpc.newStub(ch)
                    .withInterceptors(MetadataUtils.newAttachHeadersInterceptor(h)).session(new StreamObserver<>() {
                        @Override
                        public void onNext(SessionReplies replies) {
                            received(replies);
                        }

                        @Override
                        public void onError(Throwable t) {
                            endedBecause(t.toString());
                        }

                        @Override
                        public void onCompleted() {
                            endedBecause("completed by the server");
                        }
                    });

            @Override
            String transport() {
                return "gRPC";
            }

            @Override
            synchronized void send(SessionRequests batch) {
                out.onNext(batch);
            }

            @Override
            public void close() throws InterruptedException {
                ch.shutdownNow();
                ch.awaitTermination(5, TimeUnit.SECONDS);
            }
        };
    }

    /** A socket-transport connection that has said hello (with {@code token} if not null) and been welcomed. */
    static RawSession socket(int port, String token) throws IOException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5_000);
        s.setTcpNoDelay(true);
        OutputStream out = s.getOutputStream();
        WireFrames.Reader in = new WireFrames.Reader(s.getInputStream(), 16 * 1024 * 1024);
        SocketHello.Builder hello = SocketHello.newBuilder().setProtocolVersion(Protocol.VERSION);
        if (token != null) {
            hello.setToken(token);
        }
        out.write(WireFrames.encode(hello.build()));
        out.flush();
        s.setSoTimeout(5_000);
        SocketWelcome w = in.next(SocketWelcome.parser(), "SocketWelcome");
        s.setSoTimeout(0);
        if (w.hasError()) {
            s.close();
            throw new IOException("not welcomed: " + w.getError().getMessage());
        }
        RawSession session = new RawSession() {
            @Override
            String transport() {
                return "socket";
            }

            @Override
            synchronized void send(SessionRequests batch) throws IOException {
                out.write(WireFrames.encode(batch));
                out.flush();
            }

            @Override
            public void close() throws IOException {
                s.close();
            }
        };
        Thread reader = new Thread(() -> {
            try {
                while (true) {
                    session.received(in.next(SessionReplies.parser(), "SessionReplies"));
                }
            } catch (IOException e) {
                session.endedBecause(e.toString());
            }
        }, "raw-socket-session-reader");
        reader.setDaemon(true);
        reader.start();
        return session;
    }
}
