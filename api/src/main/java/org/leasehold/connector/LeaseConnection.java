package org.leasehold.connector;

import org.leasehold.LeaseholdException;
import org.leasehold.lease.Lease;

/**
 * A handle on a managed connection of the resource adapter. Not thread-safe: one thread uses it, then closes it.
 * Closing it outside a transaction releases its leases (publishing the last timestamp appended as watermark); inside
 * one, the transaction's outcome decides.
 */
public interface LeaseConnection extends LeaseLog, AutoCloseable {

    /**
     * Takes exclusive leases on {@code names} for the current unit of work, waiting up to the adapter's default wait.
     * Tentative inside a transaction (upgraded at prepare), full outside one.
     *
     * @throws org.leasehold.lease.InvalidLeaseRequestException a bad name, or more names than the adapter allows
     * @throws org.leasehold.lease.LeaseBusyException          not granted within the wait
     * @throws org.leasehold.lease.LeaseServiceUnavailableException the lease service is in its quiet period or down
     */
    Lease acquire(String... names) throws LeaseholdException;

    /** Takes leases with explicit options. */
    Lease acquire(LeaseOptions options) throws LeaseholdException;

    /** Closes the handle; later calls fail with {@link ConnectionClosedException}. Idempotent. */
    @Override
    void close();
}
