package org.leasehold.lease;

/**
 * A lease renewed in the background (about every third of its lease time) until it is closed or lost. Its
 * {@link SessionListener} hears {@link SessionEvent.Type#JEOPARDY jeopardy}, {@link SessionEvent.Type#SAFE safe}
 * and {@link SessionEvent.Type#EXPIRED expired}. {@link #close()} stops renewing and releases the lease without a
 * watermark; {@link #release} publishes one.
 */
public interface KeptLease extends AutoCloseable {

    /** The lease as last granted or renewed. */
    Lease lease();

    /** True until the lease is released, closed or lost. */
    boolean isLive();

    /** Stops renewing, then releases with {@code watermark} (or null) and {@code metadata} (or null). */
    void release(java.time.Instant watermark, String metadata) throws LeaseException;

    /** Stops renewing and releases the lease if it is still live. */
    @Override
    void close() throws LeaseException;
}
