package org.leasehold.store;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;

/**
 * An encoded frame from its queueing to its outcome: where the committer placed it, and the outcome it decided,
 * delivered to the appending thread through {@link #future}.
 */
final class PendingAppend {
    final ByteBuffer frame;
    final int length;
    final int messages;
    final long deadline;
    final boolean callerTime;
    final CompletableFuture<Appended> future = new CompletableFuture<>();
    long t;
    long bucket;
    DataFile file;
    long offset;
    Appended result;
    BagStoreException failure;

    PendingAppend(ByteBuffer frame, int messages, long t, long deadline, boolean callerTime) {
        this.frame = frame;
        this.length = frame.capacity();
        this.messages = messages;
        this.t = t;
        this.deadline = deadline;
        this.callerTime = callerTime;
    }

    /** Decides a failure, unless an outcome was decided already. */
    void fail(BagStoreException e) {
        if (result == null && failure == null) {
            failure = e;
        }
    }

    /** Completes the future with the decided outcome (wakes the caller). */
    void deliver() {
        if (result != null) {
            future.complete(result);
        } else if (failure != null) {
            future.completeExceptionally(failure);
        } else {
            future.completeExceptionally(new IllegalStateException("no outcome decided"));
        }
    }
}
