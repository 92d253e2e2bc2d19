package org.leasehold.engine;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.time.TimeSource;

/**
 * A validated request: decided at once, or queued on every one of its names until granted, timed out or cancelled.
 * The time-dependent fields are set under the locks of its shards before it is queued; the future exists only for a
 * queued request (the uncontended path allocates none).
 */
final class Waiter {
    private static final VarHandle DONE;

    static {
        try {
            DONE = MethodHandles.lookup().findVarHandle(Waiter.class, "done", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final HolderId holder;
    final String[] names;
    final int[] shards;
    final LeaseMode mode;
    final LeaseKind kind;
    final Instant startedAt;
    /** Absolute deadline asked for, in micros, or {@link Long#MIN_VALUE} to use {@link #leaseTime}. */
    final long requestedDeadline;
    final long leaseTime;
    /** How long it may wait, in micros; 0 tries once. */
    final long maxWait;
    /** The authenticated principal it is asked for, or null. */
    final String principal;

    long age;
    long since;
    long waitUntil;
    CompletableFuture<Lease> future;
    volatile TimeSource.Timer timeout;
    /** Where its holder is counted as waiting while it is queued (set when queued), else null. */
    volatile Waits waits;
    @SuppressWarnings("unused") // accessed through DONE
    private volatile int done;

    Waiter(HolderId holder, String[] names, int[] shards, LeaseMode mode, LeaseKind kind, Instant startedAt,
            long requestedDeadline, long leaseTime, long maxWait, String principal) {
        this.holder = holder;
        this.names = names;
        this.shards = shards;
        this.mode = mode;
        this.kind = kind;
        this.startedAt = startedAt;
        this.requestedDeadline = requestedDeadline;
        this.leaseTime = leaseTime;
        this.maxWait = maxWait;
        this.principal = principal;
    }

    /** Claims the right to decide this request's outcome; true for exactly one caller. Its holder waits no more. */
    boolean finish() {
        if (!DONE.compareAndSet(this, 0, 1)) {
            return false;
        }
        Waits ws = waits;
        if (ws != null) {
            ws.finished(holder);
        }
        return true;
    }

    boolean isDone() {
        return (int) DONE.getVolatile(this) != 0;
    }
}
