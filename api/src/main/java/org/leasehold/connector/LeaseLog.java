package org.leasehold.connector;

import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;

/**
 * A log of the bag store as seen from one unit of work: append messages under the leases held for it, read the log
 * and its materialized views, see the grants. Injectable into beans whose methods are {@link org.leasehold.inject.Leased @Leased}.
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

    /**
     * The state of {@code definition}'s view of this connection's log now: the latest readable snapshot published in
     * the store, with every message after its boundary applied, read through {@link #read} (unsealed buckets
     * included: {@link ViewState#tentative()} says whether any such message was applied). Under the leases held for
     * the current unit of work it is current for their names: every earlier holder's messages are in the log. The
     * messages this unit appends are not in it until its transaction commits. {@link ViewState#boundary()} and
     * {@link ViewState#tailMessages()} say where the read started and how much it folded.
     *
     * <p>A damaged snapshot is logged and passed over for an older one (or a fold from the beginning). Snapshots are
     * built by the adapter for the views registered with {@link LeaseConnectionFactory#registerView}, or by anyone
     * calling {@link LeaseConnectionFactory#buildView} or the store's {@code buildView}; reading an unregistered view
     * works too, from whatever snapshot exists.
     *
     * @throws IllegalArgumentException the view's name is not acceptable, or it has no version
     * @throws org.leasehold.bag.StoreUnavailableException the store could not be read
     */
    <S> ViewState<S> view(ViewDefinition<S> definition) throws LeaseholdException;
}
