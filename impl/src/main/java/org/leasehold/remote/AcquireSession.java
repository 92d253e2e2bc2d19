package org.leasehold.remote;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import io.grpc.Status;
import io.grpc.stub.StreamObserver;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.proto.AcquireRequest;
import org.leasehold.remote.proto.SessionReply;
import org.leasehold.remote.proto.SessionRequest;
import org.leasehold.remote.proto.WithdrawRequest;

/**
 * The client's end of one server's acquisition stream (the {@code Session} call): every thread's acquisitions and
 * withdrawals go out on it in the order they are made, and the answers come back tagged with their request ids.
 * The stream is opened on first use and again after it breaks; a break fails every request still open on it with
 * {@link LeaseServiceUnavailableException} (the server withdraws them on its side).
 */
final class AcquireSession {
    private static final System.Logger LOG = System.getLogger(AcquireSession.class.getName());

    /** What the client does with a grant that nobody waits for any more. */
    interface Orphans {
        void release(Lease lease);
    }

    private final Endpoint endpoint;
    private final Orphans orphans;
    private final Map<Long, CompletableFuture<Lease>> pending = new ConcurrentHashMap<>();
    private final Map<Long, CompletableFuture<Boolean>> withdrawals = new ConcurrentHashMap<>();
    private StreamObserver<SessionRequest> out;

    AcquireSession(Endpoint endpoint, Orphans orphans) {
        this.endpoint = endpoint;
        this.orphans = orphans;
    }

    /** Sends an acquisition; the future completes with the server's answer. */
    CompletableFuture<Lease> acquire(AcquireRequest request) {
        CompletableFuture<Lease> f = new CompletableFuture<>();
        pending.put(request.getRequestId(), f);
        if (!send(SessionRequest.newBuilder().setAcquire(request).build())) {
            pending.remove(request.getRequestId(), f);
        }
        return f;
    }

    /** Sends a withdrawal; the future completes with true if the request was still waiting. */
    CompletableFuture<Boolean> withdraw(long requestId) {
        CompletableFuture<Boolean> ack = new CompletableFuture<>();
        withdrawals.put(requestId, ack);
        send(SessionRequest.newBuilder().setWithdraw(WithdrawRequest.newBuilder().setRequestId(requestId)).build());
        return ack;
    }

    /** Forgets a request (it timed out on this side); a grant that still arrives for it is released. */
    void forget(long requestId) {
        pending.remove(requestId);
    }

    private synchronized boolean send(SessionRequest message) {
        try {
            if (out == null) {
                endpoint.nudge();
                out = endpoint.async.session(new Replies());
            }
            out.onNext(message);
            return true;
        } catch (RuntimeException e) {
            LeaseException failure = endpoint.failure(Status.fromThrowable(e));
            failAll(failure);
            out = null;
            return false;
        }
    }

    synchronized void close() {
        if (out != null) {
            try {
                out.onCompleted();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3102 closing the session to {0}: {1}", endpoint.address,
                        e.getMessage());
            }
            out = null;
        }
    }

    private void failAll(LeaseException failure) {
        for (Map.Entry<Long, CompletableFuture<Lease>> e : pending.entrySet()) {
            if (pending.remove(e.getKey(), e.getValue())) {
                e.getValue().completeExceptionally(failure);
            }
        }
        for (Map.Entry<Long, CompletableFuture<Boolean>> e : withdrawals.entrySet()) {
            if (withdrawals.remove(e.getKey(), e.getValue())) {
                e.getValue().complete(false);
            }
        }
    }

    private final class Replies implements StreamObserver<SessionReply> {
        @Override
        public void onNext(SessionReply r) {
            long id = r.getRequestId();
            if (r.getResultCase() == SessionReply.ResultCase.WITHDRAWN) {
                CompletableFuture<Boolean> ack = withdrawals.remove(id);
                if (ack != null) {
                    ack.complete(r.getWithdrawn());
                }
                return;
            }
            CompletableFuture<Lease> f = pending.remove(id);
            if (r.hasLease()) {
                Lease lease = ProtoCodec.lease(r.getLease());
                if (f == null || !f.complete(lease)) {
                    orphans.release(lease);
                }
            } else if (f != null) {
                f.completeExceptionally(ProtoCodec.exception(r.getError(), endpoint.address));
            }
        }

        @Override
        public void onError(Throwable t) {
            LeaseException failure = endpoint.failure(Status.fromThrowable(t));
            synchronized (AcquireSession.this) {
                out = null;
            }
            failAll(failure);
        }

        @Override
        public void onCompleted() {
            synchronized (AcquireSession.this) {
                out = null;
            }
            failAll(new LeaseServiceUnavailableException(null, "lease server " + endpoint.address
                    + " ended the acquisition session (shutting down?): retry"));
        }
    }
}
