package org.leasehold.adapter;

import java.time.Instant;
import java.util.concurrent.CountDownLatch;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.BagStore;
import org.leasehold.connector.ConnectorException;
import org.leasehold.lease.Ending;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Makes a unit ready to use and write under its leases (the adapter's side of the store's write rule): before it
 * uses a lease whose predecessor expired it seals the predecessor's buckets, and before it writes it waits until its
 * leases are writable on this server's clock.
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
     * are sealed: wait until the store says they can be, and seal them, before the unit reads or writes.
     */
    void readyForSuccessor(Lease lease) throws LeaseholdException {
        boolean expired = false;
        for (LeaseGrant g : lease.grants()) {
            expired |= g.predecessor() != null && g.predecessor().ending() == Ending.EXPIRED;
        }
        if (!expired) {
            return;
        }
        Instant ready = store.writableFrom(config.log(), lease);
        if (!ready.isBefore(lease.deadline())) {
            throw new LeaseBusyException(lease.grants().get(0).name(), ready, "a previous holder of " + lease.names()
                    + " expired without releasing; its late writes are settled at " + ready + ", after this lease's "
                    + "deadline " + lease.deadline() + ": ask for a longer lease or retry then");
        }
        awaitTime(ready);
        store.sealForSuccessor(config.log(), lease);
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4002 sealed the buckets of an expired predecessor of {0} before "
                + "use", lease.names());
    }

    /**
     * Waits until this server's clock reaches the latest {@code writableFrom} of {@code u}'s leases, when that is no
     * more than {@code MaxClockErrorMillis} ahead. A lease server whose clock runs slightly ahead of this server's grants
     * leases writable from an instant this clock has not reached yet; a transaction that commits within that
     * difference waits it out instead of failing. Further ahead, the bag store refuses the write, saying why.
     */
    void awaitWritable(UnitOfWork u) throws ConnectorException {
        Instant from = null;
        for (Lease l : u.leases()) {
            from = from == null || l.writableFrom().isAfter(from) ? l.writableFrom() : from;
        }
        Instant now = time.now();
        if (from != null && now.isBefore(from) && !now.plus(config.maxClockError()).isBefore(from)) {
            awaitTime(from, "the leases of " + u + " to become writable (the lease server's clock runs ahead of this "
                    + "server's)");
        }
    }

    private void awaitTime(Instant t) throws ConnectorException {
        awaitTime(t, "a predecessor's writes to settle");
    }

    private void awaitTime(Instant t, String what) throws ConnectorException {
        if (!time.now().isBefore(t)) {
            return;
        }
        CountDownLatch reached = new CountDownLatch(1);
        TimeSource.Timer timer = time.schedule(Micros.of(t), reached::countDown);
        try {
            reached.await();
        } catch (InterruptedException e) {
            timer.cancel();
            Thread.currentThread().interrupt();
            throw new ConnectorException("interrupted while waiting until " + t + " for " + what);
        }
    }
}
