package org.leasehold.peers;

/**
 * One lock service as the benchmark drives it: take the exclusive lock (a lease with a deadline) on a name, waiting
 * until it is free, then give it back. Implementations are shared by every worker thread.
 *
 * @param <H> what a holder keeps to release the lock (the lease, the lock key, the fencing token)
 */
public interface LockClient<H> extends AutoCloseable {

    /** How long every lock is held at most if its holder vanishes (the lease time asked of each system). */
    java.time.Duration LEASE_TIME = java.time.Duration.ofSeconds(10);

    /** The longest an acquisition waits for a busy name before it counts as an error. */
    java.time.Duration MAX_WAIT = java.time.Duration.ofSeconds(30);

    /** The system's label in results, e.g. {@code redis-jedis}. */
    String system();

    /** Takes the lock on {@code name}, waiting while another holder has it; returns what releases it. */
    H acquire(String name) throws Exception;

    /** Releases a lock taken by {@link #acquire}; only the holder's own lock is released. */
    void release(H handle) throws Exception;

    @Override
    void close() throws Exception;
}
