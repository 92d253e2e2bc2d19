package org.leasehold.remote;

import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;

import com.google.protobuf.ByteString;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;

import org.leasehold.audit.ProofFuture;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.Batches;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.HurryRequest;
import org.leasehold.wire.proto.LeaseholdGrpc;
import org.leasehold.wire.proto.ProofRequest;
import org.leasehold.wire.proto.SessionReplies;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.SessionRequests;
import org.leasehold.wire.proto.WithdrawRequest;

/**
 * The client's end of the session stream (the {@code Session} call) on one connection to a server: every thread's
 * acquisitions, withdrawals, releases, renewals, upgrades and echoes for the names of this connection go out on it in
 * the order they are made, and the answers come back tagged with their request ids.
 *
 * <p>The stream is opened on first use and again after it ends. Each opened stream ({@link Stream}) knows whether it
 * has ended and which requests went out on it: its end fails exactly those requests with
 * {@link LeaseServiceUnavailableException} (the server withdraws them on its side), and never a newer stream's. A
 * stream that fails while it is being opened (the server is unreachable: gRPC closes such a call at once, on the
 * calling thread) is not kept, so the next request opens a new one — after a server restarts on the same address
 * the client's acquisitions reach the new server.
 */
final class AcquireSession implements SessionChannel {
    private static final System.Logger LOG = System.getLogger(AcquireSession.class.getName());

    private final Endpoint endpoint;
    /** The stub of this session's connection. */
    private final LeaseholdGrpc.LeaseholdStub stub;
    private final Orphans orphans;
    private final LongSupplier ids;
    private final OpenRequests<Stream> requests = new OpenRequests<>(stream -> { });
    /** The stream requests go out on; null before the first and after it ended. Guarded by {@code this}. */
    private Stream current;
    private boolean closed;

    AcquireSession(Endpoint endpoint, LeaseholdGrpc.LeaseholdStub stub, Orphans orphans, LongSupplier ids) {
        this.endpoint = endpoint;
        this.stub = stub;
        this.orphans = orphans;
        this.ids = ids;
    }

    /**
     * A caller blocks on the proof of a witness this session was answered with: asks the server to sign the batch
     * being gathered now rather than at the end of its linger. One-way (no answer), on the open stream; nothing if
     * none is open (the proof then comes with the batch, or fails with the stream's end). Tagged with a request id of
     * its own, so that a server of an earlier release, which answers it with an error, answers no request.
     */
    @Override
    public void oneWay(SessionRequest.Builder request) {
        Stream s;
        synchronized (this) {
            s = closed ? null : current;
        }
        if (s == null || s.ended) {
            return;
        }
        s.outbox.add(request.setRequestId(ids.getAsLong()).build());
        s.flush();
    }

    private void hurry() {
        Stream s;
        synchronized (this) {
            s = closed ? null : current;
        }
        if (s == null || s.ended) {
            return;
        }
        s.outbox.add(SessionRequest.newBuilder().setRequestId(ids.getAsLong())
                .setHurry(HurryRequest.getDefaultInstance()).build());
        s.flush();
    }

    @Override
    public CompletableFuture<Lease> acquire(AcquireRequest request, boolean callerWaits) {
        CompletableFuture<Lease> f = new CompletableFuture<>();
        send(request.getRequestId(), f, requests.acquisitions, SessionRequest.newBuilder().setAcquire(request),
                Proofs.ON_REQUEST);
        return f;
    }

    @Override
    public CompletableFuture<Boolean> withdraw(long requestId, boolean callerWaits) {
        CompletableFuture<Boolean> ack = new CompletableFuture<>();
        OpenRequests.Open<Lease, Stream> open = requests.acquisitions.get(requestId);
        if (open != null && open.via().ended) {
            // Its stream has ended: the server withdrew it then, and the request fails on this side.
            ack.complete(false);
            return ack;
        }
        send(requestId, ack, requests.withdrawals,
                SessionRequest.newBuilder().setWithdraw(WithdrawRequest.newBuilder().setRequestId(requestId)), Proofs.NONE);
        return ack;
    }

    /**
     * Sends a request answered at once (release, renew, upgrade, echo), tagged with {@code requestId}; the future
     * completes with the server's reply, or fails with {@link LeaseServiceUnavailableException} if the stream ends
     * first (the request may or may not have taken effect). A caller that stops waiting leaves the future: the entry
     * stays until the answer arrives or the stream ends, so a late answer is recognised and dropped (a late renewal's
     * lease must not be taken for an unwanted grant and released).
     */
    @Override
    public CompletableFuture<OpenRequests.Reply> call(long requestId, SessionRequest.Builder request) {
        CompletableFuture<OpenRequests.Reply> f = new CompletableFuture<>();
        send(requestId, f, requests.calls, request.setRequestId(requestId), Proofs.of(request));
        return f;
    }

    /**
     * Registers {@code future} under {@code id} on the current stream (opening one if needed) and sends
     * {@code message}; if the stream cannot be opened or the message cannot be sent, the future fails.
     */
    private <T> void send(long id, CompletableFuture<T> future, Map<Long, OpenRequests.Open<T, Stream>> registry,
            SessionRequest.Builder request, Proofs proofs) {
        Stream s;
        synchronized (this) {
            if (closed) {
                future.completeExceptionally(new LeaseServiceUnavailableException(null, "the session to lease server "
                        + endpoint.address + " is closed"));
                return;
            }
            s = current;
            if (s == null) {
                endpoint.nudge();
                s = new Stream();
                StreamObserver<SessionRequests> out;
                try {
                    out = stub.session(s);
                } catch (RuntimeException e) {
                    future.completeExceptionally(endpoint.failure(Status.fromThrowable(e)));
                    return;
                }
                if (s.ended) {
                    // Closed while being opened (unreachable server): report that, and open a new one next time.
                    future.completeExceptionally(s.failure);
                    return;
                }
                s.out = out;
                current = s;
            }
            registry.put(id, new OpenRequests.Open<>(future, s));
            // Queued under the lock: messages go out in the order they were registered.
            s.outbox.add(proofs.wanted(request, s.proofsOnRequest).build());
        }
        s.flush();
    }

    @Override
    public boolean onTransportThread() {
        return Thread.currentThread().getName().startsWith("grpc-");
    }

    @Override
    public void close() {
        Stream s;
        synchronized (this) {
            closed = true;
            s = current;
            current = null;
        }
        // Outside the session's lock: a stream's lock is never taken while holding it.
        if (s != null) {
            try {
                synchronized (s) {
                    s.out.onCompleted();
                }
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3102 closing the session to {0}: {1}", endpoint.address,
                        e.getMessage());
            }
        }
    }

    /** One opened {@code Session} call: its outgoing queue, its replies, and its end. */
    private final class Stream implements StreamObserver<SessionReplies> {
        /** Set once opened (under the session's lock). */
        StreamObserver<SessionRequests> out;
        volatile boolean ended;
        volatile LeaseException failure;
        /** The server signs a grant's or renewal's witness only when asked, as it said when this stream opened. */
        final boolean proofsOnRequest = endpoint.proofsOnRequest();
        /**
         * The witnesses of the answers read on this stream: a proof still due hurries the server when a caller blocks
         * on it, and fails at once once the stream has ended (the proof would have come on it); with a server that
         * signs on request, a proof that does not follow by itself is asked for on this stream once wanted.
         */
        final ProtoCodec.WitnessReader witnesses = endpoint.proofs.reader(() -> new ProofFuture<>(
                AcquireSession.this::hurry), endpoint.address, () -> ended ? failure.getMessage() : null,
                proofsOnRequest ? this::askProof : null);
        final Queue<SessionRequest> outbox = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean flushing = new AtomicBoolean();

        /**
         * Asks the server for the proof of {@code statement}, a witness it sent on this stream without one: one-way,
         * answered by a {@code WitnessSeals} push on this stream (nothing once it has ended: the proof fails then).
         */
        void askProof(byte[] statement) {
            if (ended) {
                return;
            }
            outbox.add(SessionRequest.newBuilder().setRequestId(ids.getAsLong()).setProof(ProofRequest.newBuilder()
                    .addWitnesses(ByteString.copyFrom(statement))).build());
            flush();
        }

        /**
         * Sends what is queued, joining the requests queued meanwhile into one message (up to
         * {@link Protocol#BATCH_BYTES}): one thread sends at a time, and while it does, others' requests queue up for
         * its next message. A thread that finds another sending leaves its request to it.
         */
        void flush() {
            Batches.send(outbox, flushing, SessionRequest::getSerializedSize, this::emit);
        }

        private void emit(List<SessionRequest> batch) {
            if (ended) {
                return; // its requests have failed with the stream's end
            }
            try {
                synchronized (this) {
                    out.onNext(SessionRequests.newBuilder().addAllRequests(batch).build());
                }
            } catch (RuntimeException e) {
                end(endpoint.failure(Status.fromThrowable(e)));
                try {
                    synchronized (this) {
                        out.onError(e);
                    }
                } catch (RuntimeException ignored) {
                    // Already broken: nothing more to tell the transport.
                }
            }
        }

        /** Marks this stream ended (no new request goes out on it) and fails every request still open on it. */
        void end(LeaseException why) {
            synchronized (AcquireSession.this) {
                if (ended) {
                    return;
                }
                failure = why;
                ended = true;
                if (current == this) {
                    current = null;
                }
            }
            requests.failAll(this, why);
            endpoint.proofs.sessionEnded(endpoint.address, why.getMessage());
        }

        @Override
        public void onNext(SessionReplies batch) {
            for (SessionReply r : batch.getRepliesList()) {
                requests.answer(r, endpoint.address, endpoint.proofs, witnesses, endpoint.signed, orphans);
            }
        }

        @Override
        public void onError(Throwable t) {
            end(endpoint.failure(Status.fromThrowable(t)));
        }

        @Override
        public void onCompleted() {
            end(new LeaseServiceUnavailableException(null, "lease server " + endpoint.address
                    + " ended the acquisition session (shutting down?): retry"));
        }
    }
}
