package org.leasehold.remote;

import java.util.concurrent.CompletableFuture;

import org.leasehold.lease.Lease;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.SessionRequest;

/**
 * One connection's session with a server, on either transport ({@link RemoteClientConfig.Transport}): the lease calls
 * of every thread whose names take this connection, and their answers.
 */
interface SessionChannel {
    /** What the client does with a grant that nobody waits for any more. */
    interface Orphans {
        void release(Lease lease);
    }

    /**
     * Sends an acquisition; the future completes with the server's answer.
     *
     * @param callerWaits true if the calling thread goes on to wait for the future (the socket transport then lets it
     *                    read the answer itself); false if nothing may wait on it (asynchronous use)
     */
    CompletableFuture<Lease> acquire(AcquireRequest request, boolean callerWaits);

    /** Sends a withdrawal; the future completes with true if the request was still waiting. */
    CompletableFuture<Boolean> withdraw(long requestId, boolean callerWaits);

    /**
     * Sends a request answered at once (release, renew, upgrade, echo), tagged with {@code requestId}; the calling
     * thread waits for the future. It fails with {@link org.leasehold.lease.LeaseServiceUnavailableException} if the
     * session ends first (the request may or may not have taken effect).
     */
    CompletableFuture<OpenRequests.Reply> call(long requestId, SessionRequest.Builder request);

    /**
     * Sends a one-way request (no answer; tagged with a request id of its own, so that a server of an earlier release,
     * which answers it with an error, answers no request) on the current connection; nothing if there is none.
     */
    void oneWay(SessionRequest.Builder request);

    /** True on a thread of the transport's, which must not wait for an answer. */
    boolean onTransportThread();

    void close();
}
