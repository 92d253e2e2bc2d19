package org.leasehold.inject;

import java.time.Instant;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;

/**
 * A materialized view of the application's log, injectable where a {@code ViewDefinition} bean of the application
 * defines it: {@code @Inject LeaseView<TreeMap<String, Long>> balances;} (the definition whose state type it is) or
 * {@code @Inject @View("balances") LeaseView<TreeMap<String, Long>> balances;} (by name). The CDI integration registers
 * every {@code ViewDefinition} bean with the connection factory when the application starts (its snapshots are then
 * built in the background) and unregisters it when the application stops.
 *
 * @param <S> the view's state
 */
public interface LeaseView<S> {

    /** The view's definition (the application's bean). */
    ViewDefinition<S> definition();

    /**
     * The view's state now (see {@link org.leasehold.connector.LeaseLog#view}): read on the connection of the
     * {@link Leased @Leased} method running on this thread, so that it is current under that method's leases; outside
     * one, on a connection of the factory {@code @Leased} uses by default, and then current only for names nobody
     * holds.
     */
    ViewState<S> read() throws LeaseholdException;

    /**
     * Publishes a snapshot of the view at the latest sealed boundary now (see
     * {@link org.leasehold.connector.LeaseConnectionFactory#buildView}) and returns that boundary.
     */
    Instant build() throws LeaseholdException;
}
