package org.leasehold.samples.ledger.app;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.LeaseView;

/**
 * Each account's balance, as a projection of the log. The first transfer after the application starts reads the
 * ledger's view ({@link BalanceView}) under its leases: the latest snapshot the adapter published plus the entries
 * after it, not the log from the beginning. From then on, whoever holds an account's lease reads the entries written
 * under it since the projection last saw it, then decides. Entries of one account come in lease order with increasing
 * timestamps, and a previous holder's entries are in the log before it released, so the projection read under the
 * lease is current.
 */
@ApplicationScoped
public class Balances {

    private static final class Account {
        long balance;
        Instant through;
    }

    /** How the projection started: the view read of the first transfer. */
    private record Start(Instant boundary, long tailMessages, int accounts, boolean tentative) {
    }

    @Inject
    LeaseView<TreeMap<Integer, BalanceView.Account>> view;

    private final ConcurrentMap<Integer, Account> accounts = new ConcurrentHashMap<>();
    private volatile Start start;

    /** The balance of {@code account}; the caller holds its lease. */
    long current(LeaseLog log, int account) throws LeaseholdException {
        if (start == null) {
            startFromView();
        }
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

    /**
     * Every account's balance and last entry from the view, read under the caller's leases. Only the caller's accounts
     * are current; the others carry the timestamp of their last entry, and the first read under their lease continues
     * from there.
     */
    private synchronized void startFromView() throws LeaseholdException {
        if (start != null) {
            return;
        }
        ViewState<TreeMap<Integer, BalanceView.Account>> v = view.read();
        for (Map.Entry<Integer, BalanceView.Account> e : v.state().entrySet()) {
            Account a = new Account();
            a.balance = e.getValue().balance();
            a.through = e.getValue().through();
            accounts.put(e.getKey(), a);
        }
        start = new Start(v.boundary(), v.tailMessages(), v.state().size(), v.tentative());
    }

    /** Where the projection started from: the snapshot's boundary and the entries applied after it. */
    Map<String, Object> started() {
        Start s = start;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("started", s != null);
        if (s != null) {
            out.put("snapshotBoundary", s.boundary() == null ? null : s.boundary().toString());
            out.put("tailMessages", s.tailMessages());
            out.put("accounts", s.accounts());
            out.put("tentative", s.tentative());
        }
        return out;
    }
}
