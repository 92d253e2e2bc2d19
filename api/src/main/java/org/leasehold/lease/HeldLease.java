package org.leasehold.lease;

import java.time.Duration;
import java.time.Instant;

/**
 * A lease held for a block of code: {@code close()} releases it (without a watermark) unless it was already
 * released. Not thread-safe; one holder uses it.
 *
 * <pre>{@code
 * try (HeldLease held = leases.hold(LeaseRequest.builder(me, "tenant/42").waitFor(Duration.ofSeconds(2)).build())) {
 *     Instant t = ... // a timestamp in (held.lease().floor(), held.lease().deadline())
 *     write(t);
 *     held.release(t, "log=orders");
 * }
 * }</pre>
 */
public final class HeldLease implements AutoCloseable {
    private final LeaseService service;
    private Lease lease;
    private boolean ended;

    public HeldLease(LeaseService service, Lease lease) {
        this.service = service;
        this.lease = lease;
    }

    /** The lease as last granted, renewed or upgraded. */
    public Lease lease() {
        return lease;
    }

    /** Renews for {@code leaseTime} from now. */
    public Lease renew(Duration leaseTime) throws LeaseException {
        lease = service.renewFor(lease, leaseTime);
        return lease;
    }

    /** Upgrades a tentative lease to full. */
    public Lease upgrade() throws LeaseException {
        lease = service.upgrade(lease, null);
        return lease;
    }

    /** Releases with a watermark (null if nothing was written) and metadata (or null). */
    public void release(Instant watermark, String metadata) throws LeaseException {
        service.release(lease, watermark, metadata);
        ended = true;
    }

    /**
     * Releases without a watermark if not released yet. A broken tentative lease needs no release. An expired
     * lease is reported with {@link LeaseExpiredException}: whatever the block did after the deadline was not
     * protected by it.
     */
    @Override
    public void close() throws LeaseException {
        if (ended) {
            return;
        }
        ended = true;
        try {
            service.release(lease, null, null);
        } catch (LeaseBrokenException e) {
            // A broken tentative lease never allowed writes; there is nothing to release.
        }
    }
}
