package org.leasehold.remote;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.SessionReply;

/**
 * The requests a client session (on either transport) has sent and not had answered, each with the connection it went
 * out on ({@code C}: a gRPC stream, a socket link): how answers find their request, and how a connection's end fails
 * the requests sent on it and never a newer connection's.
 */
final class OpenRequests<C> {
    private static final System.Logger LOG = System.getLogger(OpenRequests.class.getName());

    /** A request sent on {@code via}, waiting for its answer. */
    record Open<T, C>(CompletableFuture<T> future, C via) {
    }

    /**
     * The answer to a call, and the lease it carries (renew, upgrade) read on arrival with the witnesses of the
     * connection it arrived on, whose proofs follow it there: null if it carries none.
     */
    record Reply(SessionReply reply, Lease lease) {
    }

    /** Acquisitions, by request id. */
    final Map<Long, Open<Lease, C>> acquisitions = new ConcurrentHashMap<>();
    /** Withdrawals, by the id of the acquisition they withdraw. */
    final Map<Long, Open<Boolean, C>> withdrawals = new ConcurrentHashMap<>();
    /** Requests answered at once (release, renew, upgrade, echo), by request id. */
    final Map<Long, Open<Reply, C>> calls = new ConcurrentHashMap<>();
    /** Told of the connection of every entry that leaves (answered or failed). */
    private final Consumer<C> left;

    OpenRequests(Consumer<C> left) {
        this.left = left;
    }

    /** Removes {@code id}'s entry from {@code registry}; null if there is none. */
    <T> Open<T, C> take(Map<Long, Open<T, C>> registry, long id) {
        Open<T, C> o = registry.remove(id);
        if (o != null) {
            left.accept(o.via);
        }
        return o;
    }

    /**
     * Hands one answer to the request it answers. A grant nobody waits for any more (the acquisition was given up
     * before it arrived) is released through {@code orphans}; a grant for an unknown id is not ours to release. The
     * proofs of witnesses that follow their lease's answer go to {@code proofs}; the witnesses of leases answered here
     * are read with {@code witnesses} (the connection's {@link PendingProofs#reader}), a call's too. A lease whose grants lack
     * witnesses from a server whose keys {@code signed} pinned is refused ({@link SignedClock#unsigned}) and released.
     */
    void answer(SessionReply r, String server, PendingProofs proofs, ProtoCodec.WitnessReader witnesses,
            SignedClock signed, SessionChannel.Orphans orphans) {
        long id = r.getRequestId();
        if (r.getResultCase() == SessionReply.ResultCase.SEALS) {
            // Not an answer: the proofs of an answered lease's witnesses, pushed when their batch was signed.
            proofs.arrived(r.getSeals(), server);
            return;
        }
        Open<Reply, C> call = take(calls, id);
        if (call != null) {
            // A lease's witnesses are read here, not by the caller later: their proofs come on this connection, so if
            // it ends first, the proofs still due fail at once (PendingProofs.sessionEnded) rather than never come.
            try {
                call.future.complete(new Reply(r, r.hasLease() ? ProtoCodec.lease(r.getLease(), witnesses) : null));
            } catch (RuntimeException e) {
                call.future.completeExceptionally(new LeaseException("lease server " + server + " answered with a "
                        + "lease this client cannot read (" + e.getMessage() + "); is it a server of another release? "
                        + "Use matching client and server versions", e));
            }
            return;
        }
        if (r.getResultCase() == SessionReply.ResultCase.WITHDRAWN) {
            Open<Boolean, C> ack = take(withdrawals, id);
            if (ack != null) {
                ack.future.complete(r.getWithdrawn());
            }
            return;
        }
        Open<Lease, C> open = take(acquisitions, id);
        CompletableFuture<Lease> f = open == null ? null : open.future;
        if (r.hasLease()) {
            Lease lease = ProtoCodec.lease(r.getLease(), witnesses);
            LeaseException unsigned = signed.unsigned(lease);
            if (f == null) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3103 answer for unknown request {0} from {1} dropped",
                        Long.toHexString(id), server);
            } else if (unsigned != null) {
                // A grant without a witness from a server that signed before: refused, and given back.
                f.completeExceptionally(unsigned);
                orphans.release(lease);
            } else if (!f.complete(lease)) {
                orphans.release(lease);
            }
        } else if (f != null && r.hasError()) {
            f.completeExceptionally(ProtoCodec.exception(r.getError(), server));
        } else if (f != null) {
            f.completeExceptionally(new LeaseException("lease server " + server + " answered the acquisition with "
                    + r.getResultCase() + " where a lease or an error was due; is it a server of another release? Use "
                    + "matching client and server versions"));
        }
    }

    /** Fails every request sent on {@code via} with {@code why}; a withdrawal completes with false (the server withdrew). */
    void failAll(C via, LeaseException why) {
        failAll(acquisitions, via, why);
        failAll(calls, via, why);
        for (Map.Entry<Long, Open<Boolean, C>> e : withdrawals.entrySet()) {
            if (e.getValue().via == via && withdrawals.remove(e.getKey(), e.getValue())) {
                left.accept(via);
                e.getValue().future.complete(false);
            }
        }
    }

    private <T> void failAll(Map<Long, Open<T, C>> registry, C via, LeaseException why) {
        for (Map.Entry<Long, Open<T, C>> e : registry.entrySet()) {
            if (e.getValue().via == via && registry.remove(e.getKey(), e.getValue())) {
                left.accept(via);
                e.getValue().future.completeExceptionally(why);
            }
        }
    }
}
