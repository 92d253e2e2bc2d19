package org.leasehold.samples.ledger.app;

import java.time.Instant;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import jakarta.enterprise.context.ApplicationScoped;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseLog;

/**
 * Each account's balance, as a projection of the log: whoever holds an account's lease first reads the entries
 * written under it since the projection was last brought up to date, then decides. Entries of one account come in
 * lease order with increasing timestamps, and a previous holder's entries are in the log before it released, so
 * the projection read under the lease is current.
 */
@ApplicationScoped
public class Balances {

    private static final class Account {
        long balance;
        Instant through;
    }

    private final ConcurrentMap<Integer, Account> accounts = new ConcurrentHashMap<>();

    /** The balance of {@code account}; the caller holds its lease. */
    long current(LeaseLog log, int account) throws LeaseholdException {
        Account a = accounts.computeIfAbsent(account, k -> new Account());
        synchronized (a) {
            ReadRequest r = ReadRequest.all(log.log()).underAnyOf(Set.of(Entry.leaseName(account)));
            if (a.through != null) {
                r = r.between(a.through.plusNanos(1_000), null);
            }
            try (MessageStream messages = log.read(r)) {
                Message m;
                while ((m = messages.next()) != null) {
                    a.balance += Entry.parse(m.payload()).delta(account);
                    a.through = m.timestamp();
                }
            } catch (org.leasehold.bag.UnknownLogException e) {
                return 0;
            }
            return a.balance;
        }
    }
}
