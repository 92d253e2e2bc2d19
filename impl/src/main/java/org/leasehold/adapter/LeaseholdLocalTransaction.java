package org.leasehold.adapter;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.LocalTransaction;
import jakarta.resource.spi.LocalTransactionException;

import org.leasehold.LeaseholdException;

/**
 * A resource-local transaction on one managed connection: leases are tentative until commit, which upgrades them,
 * writes the messages as one frame and releases with its timestamp; rollback releases without a watermark.
 */
final class LeaseholdLocalTransaction implements LocalTransaction {
    private final ConnectionUnits units;
    private final ResourceManager rm;

    LeaseholdLocalTransaction(ConnectionUnits units, ResourceManager rm) {
        this.units = units;
        this.rm = rm;
    }

    @Override
    public void begin() throws ResourceException {
        units.beginLocal();
    }

    @Override
    public void commit() throws ResourceException {
        UnitOfWork u = units.takeLocal("commit");
        try {
            rm.commitLocal(u);
        } catch (LeaseholdException e) {
            throw new LocalTransactionException("the local transaction rolled back: " + e.getMessage(), e);
        }
    }

    @Override
    public void rollback() throws ResourceException {
        rm.rollbackLocal(units.takeLocal("rollback"));
    }
}
