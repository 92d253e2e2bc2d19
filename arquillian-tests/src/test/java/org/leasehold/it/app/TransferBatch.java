package org.leasehold.it.app;

import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.leasehold.LeaseholdException;
import org.leasehold.lease.Lease;

/** Several {@code @Leased} calls in one transaction: each takes its own connection, enlisted in the same branch. */
@ApplicationScoped
public class TransferBatch {
    @Inject
    private LeasedLedgerBean ledger;

    /** Two transfers in one transaction; fails after both when told to. */
    @Transactional
    public List<List<Lease>> twoTransfers(String a, String b, String c, boolean fail) throws LeaseholdException {
        List<Lease> first = ledger.transfer(a, b, 1, false);
        List<Lease> second = ledger.transfer(b, c, 2, false);
        if (fail) {
            throw new IllegalStateException("forced failure after two transfers");
        }
        return List.of(first, second);
    }
}
