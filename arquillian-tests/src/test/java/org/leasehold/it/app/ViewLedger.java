package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.LeaseView;
import org.leasehold.inject.Leased;
import org.leasehold.inject.View;

/**
 * Transfers that read the balances from the injected view under both accounts' leases, decide, and append; the same
 * view injected by name, read outside any {@code @Leased} method; snapshots built on demand.
 */
@ApplicationScoped
public class ViewLedger {
    @Inject
    private LeaseLog log;

    @Inject
    private LeaseView<TreeMap<String, Long>> balances;

    @Inject
    @View(ItBalances.NAME)
    private LeaseView<TreeMap<String, Long>> byName;

    @Transactional
    @Leased("account/{0}")
    public void deposit(String account, long amount) throws LeaseholdException {
        log.append(("view - " + account + " " + amount).getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Moves {@code amount} if the view, read under both leases, says {@code from} has it; returns that read. A
     * transfer that would take an account below zero writes nothing.
     */
    @Transactional
    @Leased({"account/{0}", "account/{1}"})
    public ViewState<TreeMap<String, Long>> transfer(String from, String to, long amount) throws LeaseholdException {
        ViewState<TreeMap<String, Long>> v = balances.read();
        if (v.state().getOrDefault(from, 0L) >= amount) {
            log.append(("view " + from + " " + to + " " + amount).getBytes(StandardCharsets.UTF_8));
        }
        return v;
    }

    /** The view read under {@code account}'s lease. */
    @Transactional
    @Leased("account/{0}")
    public ViewState<TreeMap<String, Long>> readUnder(String account) throws LeaseholdException {
        return balances.read();
    }

    /** The view injected by name, read outside any {@code @Leased} method (on a connection of the factory). */
    public ViewState<TreeMap<String, Long>> readByName() throws LeaseholdException {
        return byName.read();
    }

    /** Whether both injected views are of the same definition bean (the application's one instance of it). */
    public boolean sameDefinition() {
        return balances.definition() == byName.definition() && byName.definition().name().equals(ItBalances.NAME);
    }

    public Instant build() throws LeaseholdException {
        return balances.build();
    }
}
