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
    private final LeaseholdManagedConnection mc;

    LeaseholdLocalTransaction(LeaseholdManagedConnection mc) {
        this.mc = mc;
    }

    @Override
    public void begin() throws ResourceException {
        if (mc.localUnit() != null) {
            throw new LocalTransactionException("a local transaction is already active on this connection: commit or "
                    + "roll it back first");
        }
        mc.localUnit(mc.rm().beginLocal());
    }

    @Override
    public void commit() throws ResourceException {
        UnitOfWork u = take("commit");
        try {
            mc.rm().commitLocal(u);
        } catch (LeaseholdException e) {
            throw new LocalTransactionException("the local transaction rolled back: " + e.getMessage(), e);
        }
    }

    @Override
    public void rollback() throws ResourceException {
        mc.rm().rollbackLocal(take("rollback"));
    }

    private UnitOfWork take(String what) throws LocalTransactionException {
        UnitOfWork u = mc.localUnit();
        if (u == null) {
            throw new LocalTransactionException(what + " without an active local transaction on this connection");
        }
        mc.localUnit(null);
        return u;
    }
}
