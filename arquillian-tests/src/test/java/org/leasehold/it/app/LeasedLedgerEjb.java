package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.util.List;

import jakarta.ejb.Stateless;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseLog;
import org.leasehold.inject.Leased;
import org.leasehold.lease.Lease;

/** An EJB that declares its leases with {@code @Leased} and appends through an injected {@link LeaseLog}. */
@Stateless
public class LeasedLedgerEjb {
    @Inject
    private LeaseLog log;

    /** One transaction (container-managed): leases on both accounts, one message; returns the leases held. */
    @Leased({"account/{0}", "account/{1}"})
    public List<Lease> transfer(String from, String to, long amount) throws LeaseholdException {
        log.append(("ejb " + from + "->" + to + " " + amount).getBytes(StandardCharsets.UTF_8));
        return log.leases();
    }

    /** Appends without {@code @Leased}: there are no leases to append under. */
    public void appendWithoutLeases(String text) throws LeaseholdException {
        log.append(text.getBytes(StandardCharsets.UTF_8));
    }
}
