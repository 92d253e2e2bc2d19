package org.leasehold.adapter;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.BagStore;
import org.leasehold.connector.ConnectorException;
import org.leasehold.lease.Lease;
import org.leasehold.store.WriteRule;
import org.leasehold.time.TimeSource;

/**
 * Makes a unit ready to use and write under its leases by asking the store's {@link WriteRule}: before it uses a
 * lease whose predecessor expired, the predecessor's buckets are sealed; before it writes, it waits until its leases
 * are writable on this server's clock.
 */
final class WriteReadiness {
    /** Logs as the resource manager it is a part of, under the logger operators know. */
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final BagStore store;
    private final TimeSource time;

    WriteReadiness(AdapterConfig config, BagStore store, TimeSource time) {
        this.config = config;
        this.store = store;
        this.time = time;
    }

    /**
     * After a predecessor expired without releasing, the state its lease protects may still change until its buckets
     * are sealed: the store's {@link WriteRule} waits until they can be, and seals them, before the unit reads or writes.
     */
    void readyForSuccessor(Lease lease) throws LeaseholdException {
        try {
            if (!WriteRule.readyForSuccessor(store, config.log(), lease, time)) {
                return;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectorException(e.getMessage());
        }
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4002 sealed the buckets of an expired predecessor of {0} before "
                + "use", lease.names());
    }

    /**
     * Waits, as the store's {@link WriteRule} says, until this server's clock reaches the latest {@code writableFrom} of
     * {@code u}'s leases when a lease server's clock runs slightly ahead; further ahead, the bag store refuses the write.
     */
    void awaitWritable(UnitOfWork u) throws ConnectorException {
        try {
            WriteRule.awaitWritable(u.leases(), config.maxClockError(), time);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConnectorException(e.getMessage() + " (" + u + ")");
        }
    }
}
