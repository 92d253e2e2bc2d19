package org.leasehold.peers;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Retrying a try-lock (Redis {@code SET NX}, the PostgreSQL upsert) while the name is busy: jittered exponential
 * backoff from 50 µs to 5 ms, and a limit of {@link LockClient#MAX_WAIT}. These systems have no server-side wait
 * queue, so this is what their lock libraries do too.
 */
final class Backoff {
    private static final long MIN_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    private static final long MAX_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

    private final long deadline;
    private final String name;
    private long next = MIN_NANOS;

    Backoff(String name) {
        this.name = name;
        this.deadline = System.nanoTime() + LockClient.MAX_WAIT.toNanos();
    }

    /** Sleeps before the next try; throws when the wait is over. */
    void pause() throws LockWaitTimeoutException {
        if (System.nanoTime() - deadline >= 0) {
            throw new LockWaitTimeoutException("'" + name + "' stayed busy for " + LockClient.MAX_WAIT);
        }
        LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(next / 2, next + 1));
        next = Math.min(MAX_NANOS, next * 2);
    }

    /** An acquisition that waited longer than {@link LockClient#MAX_WAIT}. */
    static final class LockWaitTimeoutException extends Exception {
        LockWaitTimeoutException(String message) {
            super(message);
        }
    }
}
