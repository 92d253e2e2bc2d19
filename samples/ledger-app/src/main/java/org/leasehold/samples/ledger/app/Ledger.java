package org.leasehold.samples.ledger.app;

import jakarta.ejb.Stateless;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.Leased;

/**
 * Transfers, each one JTA transaction: the interceptor takes both accounts' leases (tentative until the transaction
 * prepares), the balance is read from the log, and one entry is appended; it is written when the transaction commits.
 */
@Stateless
public class Ledger {

    /** What a transfer did. */
    public enum Outcome { DONE, DECLINED }

    @Inject
    LeaseLog log;

    @Inject
    Balances balances;

    @Leased({"ledger/account/{0}", "ledger/account/{1}"})
    public Outcome transfer(int from, int to, long amount) throws LeaseholdException {
        if (from == to || amount <= 0) {
            throw new IllegalArgumentException("a transfer needs two different accounts and a positive amount");
        }
        long available = balances.current(log, from);
        balances.current(log, to);
        if (available < amount) {
            return Outcome.DECLINED;
        }
        log.append(Entry.transfer(from, to, amount).bytes());
        return Outcome.DONE;
    }
}
