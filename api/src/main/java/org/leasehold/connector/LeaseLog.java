package org.leasehold.connector;

import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;

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

    /**
     * The fencing generation of the lease held on {@code name} for the current unit of work: strictly greater than
     * that of every earlier holder of the name, also across restarts of the lease service. Store it beside what is
     * written elsewhere under the lease (a database row, say) and let that resource refuse a write that carries a
     * lower generation than the one it has: a holder that stalled past its lease can then change nothing there
     * (the README's "Fencing other resources" has the recipe).
     *
     * @throws NoLeaseHeldException no lease on {@code name} is held for the current unit of work
     */
    default long generation(String name) throws LeaseholdException {
        for (Lease l : leases()) {
            for (LeaseGrant g : l.grants()) {
                if (g.name().equals(name)) {
                    return g.generation();
                }
            }
        }
        throw new NoLeaseHeldException("no lease on '" + name + "' is held for this unit of work: acquire it (or name it "
                + "in @Leased) before asking for its generation");
    }

    /**
     * Reads a log in order (see {@link org.leasehold.bag.BagStore#read}). Close the stream when done. The adapter's
     * own log exists from the adapter's start, so reading it before anything was appended gives an empty stream.
     *
     * @throws org.leasehold.bag.UnknownLogException another log, to which nothing was ever appended
     * @throws org.leasehold.bag.InvalidLogNameException the log name is not acceptable
     */
    MessageStream read(ReadRequest request) throws LeaseholdException;
}
