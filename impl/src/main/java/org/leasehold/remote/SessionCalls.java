package org.leasehold.remote;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;

/**
 * One server's lease calls on its session stream, each answered within its time: acquisitions (withdrawn when
 * cancelled or unanswered by their wait plus the call timeout) and the calls a server answers at once.
 */
final class SessionCalls {
    private static final System.Logger LOG = System.getLogger(SessionCalls.class.getName());

    private final Duration callTimeout;
    private final TimeSource local;
    private final UnwantedGrants unwanted;
    /** Where this client holds each holder's leases, for wound-wait across servers; null with one server. */
    private final WaitsElsewhere elsewhere;
    private final long requestIdBase = new SecureRandom().nextLong() & 0xffff_ffff_0000_0000L;
    private final AtomicLong requestCounter = new AtomicLong();

    SessionCalls(Duration callTimeout, TimeSource local, UnwantedGrants unwanted, boolean severalServers) {
        this.callTimeout = callTimeout;
        this.local = local;
        this.unwanted = unwanted;
        this.elsewhere = severalServers ? new WaitsElsewhere(local) : null;
    }

    /** A part of a lease held on {@code e} was released through this client. */
    void released(Endpoint e, Lease part) {
        if (elsewhere != null) {
            elsewhere.released(e, part);
        }
    }

    /** The session of {@code name}'s connection to {@code e}, or null if it cannot be had now. */
    private SessionChannel sessionOrNull(Endpoint e, String name) {
        try {
            return session(e, name);
        } catch (LeaseException ex) {
            return null;
        }
    }

    private long nextRequestId() {
        return requestIdBase | (requestCounter.incrementAndGet() & 0xffff_ffffL);
    }

    private SessionChannel session(Endpoint e, String name) throws LeaseException {
        return e.session(name, lease -> unwanted.release(e, lease), this::nextRequestId);
    }

    /**
     * One server's acquisition, sent on its acquisition stream: the answer arrives when the server decides.
     * Cancelling the future withdraws the request; without an answer by the wait plus the call timeout (on the local
     * clock; not against a test clock) it fails as unavailable and is withdrawn.
     */
    CompletableFuture<Lease> acquire(Endpoint e, LeaseRequest request, List<String> names, boolean callerWaits) {
        long id = nextRequestId();
        AcquireRequest wire = ProtoCodec.acquire(request, names).toBuilder().setRequestId(id).build();
        long timeoutMillis;
        try {
            timeoutMillis = callTimeoutFor(e, request);
        } catch (LeaseException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        SessionChannel session;
        try {
            e.refuseIfClockOff();
            session = session(e, names.get(0));
        } catch (LeaseException ex) {
            return CompletableFuture.failedFuture(ex);
        }
        CompletableFuture<Lease> result = session.acquire(wire, callerWaits);
        if (elsewhere != null) {
            if (request.maxWait().compareTo(java.time.Duration.ZERO) > 0) {
                // It may wait here: the other servers holding its holder's leases count it as waiting meanwhile.
                elsewhere.waiting(request.holder(), e, result, this::sessionOrNull);
            }
            result.thenAccept(lease -> elsewhere.granted(e, lease));
        }
        if (timeoutMillis > 0 && !result.isDone()) {
            // Elapsed time, not the local clock's: a clock stepped back must not leave the caller waiting as long.
            TimeSource.Timer timer = local.scheduleAfter(timeoutMillis * 1_000L, () -> {
                if (result.completeExceptionally(new LeaseServiceUnavailableException(null, "lease server " + e.address
                        + " did not answer the acquisition within " + timeoutMillis + " ms (its wait plus the call "
                        + "timeout); it was withdrawn"))) {
                    e.nudge();
                    session.withdraw(id, false);
                }
            });
            result.whenComplete((l, f) -> timer.cancel());
        }
        result.whenComplete((lease, failure) -> {
            if (failure instanceof CancellationException) {
                withdraw(session, id);
            }
        });
        return result;
    }

    /** How long to wait for an answer: the wait plus the call timeout; unbounded against a test clock. */
    private long callTimeoutFor(Endpoint e, LeaseRequest request) throws LeaseException {
        long base = callTimeout.toMillis();
        if (request.maxWait().isZero() || request.maxWait().isNegative()) {
            return base;
        }
        if (e.testClock()) {
            // A test clock moves only when a test says so: the server decides when the wait is over.
            return 0;
        }
        long wait;
        try {
            wait = request.maxWait().toMillis();
        } catch (ArithmeticException tooLong) {
            return 0;
        }
        return wait > Long.MAX_VALUE / 2 ? 0 : wait + base;
    }

    /**
     * Withdraws a waiting request. From an application thread it waits (up to the call timeout) for the server's
     * answer, so that once {@code cancel} returns the request is out of the queue, as with the embedded engine; a
     * grant that crossed the withdrawal is released when it arrives. From a transport thread it does not wait.
     */
    private void withdraw(SessionChannel session, long requestId) {
        boolean transport = session.onTransportThread();
        CompletableFuture<Boolean> ack = session.withdraw(requestId, !transport);
        if (transport) {
            return;
        }
        boolean interrupted = Thread.interrupted();
        try {
            ack.get(callTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException ex) {
            interrupted = true;
        } catch (ExecutionException | java.util.concurrent.TimeoutException ex) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3004 withdrawing request {0} got no answer: {1}",
                    Long.toHexString(requestId), ex.toString());
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Sends a request the server answers at once (release, renew, upgrade, echo) on the session stream of
     * {@code name}'s connection to {@code e} (where the lease was acquired) and waits up to the call timeout for the
     * answer; an error answer is thrown as the API's exception, and an answer of another kind than {@code expected} as
     * a failed call.
     */
    SessionReply call(Endpoint e, String name, String what, SessionRequest.Builder request,
            SessionReply.ResultCase expected) throws LeaseException {
        return answer(e, name, what, request, expected).reply();
    }

    /**
     * {@link #call} for a request answered with a lease (renew, upgrade): the lease, its witnesses read on the
     * connection the answer came on (their proofs, if still due, follow it there).
     */
    Lease callForLease(Endpoint e, String name, String what, SessionRequest.Builder request) throws LeaseException {
        return answer(e, name, what, request, SessionReply.ResultCase.LEASE).lease();
    }

    private OpenRequests.Reply answer(Endpoint e, String name, String what, SessionRequest.Builder request,
            SessionReply.ResultCase expected) throws LeaseException {
        long id = nextRequestId();
        SessionChannel session = session(e, name);
        CompletableFuture<OpenRequests.Reply> f = session.call(id, request);
        long timeoutMillis = callTimeout.toMillis();
        OpenRequests.Reply answered;
        try {
            answered = f.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (ExecutionException ex) {
            if (ex.getCause() instanceof LeaseException le) {
                throw le;
            }
            throw new LeaseServiceUnavailableException(null, "the " + what + " at lease server " + e.address
                    + " failed: " + ex.getCause(), ex.getCause());
        } catch (java.util.concurrent.TimeoutException ex) {
            e.nudge();
            throw new LeaseServiceUnavailableException(null, "lease server " + e.address + " did not answer the " + what
                    + " within the call timeout (" + timeoutMillis + " ms); it may or may not have taken effect: retry, "
                    + "and check that the server runs and the network reaches it");
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new LeaseServiceUnavailableException(null, "interrupted while waiting for lease server " + e.address
                    + " to answer the " + what + "; it may or may not have taken effect", ex);
        }
        SessionReply r = answered.reply();
        if (r.hasError()) {
            throw ProtoCodec.exception(r.getError(), e.address);
        }
        if (r.getResultCase() != expected) {
            throw new LeaseException("lease server " + e.address + " answered the " + what + " with " + r.getResultCase()
                    + " where " + expected + " was due; is it a server of another release? Use matching client and "
                    + "server versions");
        }
        return answered;
    }
}
