package org.leasehold.remote;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.grpc.stub.StreamObserver;

import org.leasehold.lease.Lease;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.ReleaseReply;
import org.leasehold.wire.proto.ReleaseRequest;

/**
 * The releases owed after a failure: a grant that crossed a withdrawal or a timeout, or the parts already held of a
 * multi-server acquisition that failed, released without waiting; one that cannot be released ends at its deadline.
 */
final class UnwantedGrants {
    private static final System.Logger LOG = System.getLogger(UnwantedGrants.class.getName());

    private final Duration callTimeout;

    UnwantedGrants(Duration callTimeout) {
        this.callTimeout = callTimeout;
    }

    /** Releases {@code lease} at {@code e}, without waiting for the answer. */
    void release(Endpoint e, Lease lease) {
        e.async.withDeadlineAfter(callTimeout.toMillis(), TimeUnit.MILLISECONDS)
                .release(ReleaseRequest.newBuilder().setLease(ProtoCodec.ref(lease)).build(), new StreamObserver<>() {
                    @Override
                    public void onNext(ReleaseReply value) {
                        if (value.hasError()) {
                            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-3005 releasing an unwanted grant at {0}: {1}",
                                    e.address, value.getError().getMessage());
                        }
                    }

                    @Override
                    public void onError(Throwable t) {
                        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-3006 releasing an unwanted grant of {0} at {1} "
                                + "failed ({2}); it ends at its deadline {3}", lease.describe(), e.address, t.getMessage(),
                                lease.deadline());
                    }

                    @Override
                    public void onCompleted() {
                        // Nothing more to do.
                    }
                });
    }
}
