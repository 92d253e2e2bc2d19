package org.leasehold.connector;

import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.lease.Lease;

/**
 * A log of the bag store as seen from one unit of work: append messages under the leases held for it, read the log,
 * see the grants. Injectable into beans whose methods are {@link org.leasehold.inject.Leased @Leased}.
 */
public interface LeaseLog {

    /** The log this connection appends to. */
    String log();

    /**
     * Appends messages under every lease held for the current unit of work. In a transaction they are written, as
     * one frame, when it commits; outside one, at once.
     *
     * @throws NoLeaseHeldException     no lease is held for the current unit of work
     * @throws org.leasehold.lease.LeaseLostException a lease was lost; the transaction is rollback-only
     * @throws ConnectionClosedException the connection was closed
     */
    void append(byte[]... payloads) throws LeaseholdException;

    /** The leases held for the current unit of work, as last granted, renewed or upgraded. */
    List<Lease> leases() throws LeaseholdException;

    /** Reads the log in order (see {@link org.leasehold.bag.BagStore#read}). Close the stream when done. */
    MessageStream read(ReadRequest request) throws LeaseholdException;
}
