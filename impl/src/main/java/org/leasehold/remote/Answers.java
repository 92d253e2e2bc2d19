package org.leasehold.remote;

import java.util.concurrent.CompletableFuture;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.remote.proto.SessionReply;

/** How both transports' sessions take the server's answer to an acquisition. */
final class Answers {
    private static final System.Logger LOG = System.getLogger(Answers.class.getName());

    private Answers() {
    }

    /**
     * Completes {@code f} (null if no open acquisition has the answer's id) with the lease or the error of {@code r}. A
     * grant nobody waits for any more (the acquisition was given up before it arrived) is released through
     * {@code orphans}; a grant for an unknown id is not ours to release.
     */
    static void acquisition(CompletableFuture<Lease> f, SessionReply r, String server, SessionChannel.Orphans orphans) {
        if (r.hasLease()) {
            Lease lease = ProtoCodec.lease(r.getLease());
            if (f == null) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3103 answer for unknown request {0} from {1} dropped",
                        Long.toHexString(r.getRequestId()), server);
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
}
