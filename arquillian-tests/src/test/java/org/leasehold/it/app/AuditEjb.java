package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.util.List;

import jakarta.annotation.Resource;
import jakarta.ejb.Stateless;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.Lease;

/**
 * The audit test's writer (container-managed transactions, REQUIRED) on a log of its own, {@code audit}, which only
 * this bean writes: each business method is one transaction that takes exclusive leases and appends messages.
 */
@Stateless
public class AuditEjb {
    public static final String FACTORY = "eis/leasehold/audit";

    @Resource(lookup = FACTORY)
    private LeaseConnectionFactory leases;

    /** Takes exclusive leases on {@code names} and appends {@code messages} under them; returns the grant. */
    public Lease record(List<String> names, List<String> messages) throws LeaseholdException {
        try (LeaseConnection c = leases.getConnection()) {
            Lease lease = c.acquire(names.toArray(String[]::new));
            for (String m : messages) {
                c.append(m.getBytes(StandardCharsets.UTF_8));
            }
            return lease;
        }
    }

    /** Like {@link #record}, then fails with a system exception: the container rolls the transaction back. */
    public void recordThenFail(List<String> names, String message) throws LeaseholdException {
        record(names, List.of(message));
        throw new IllegalStateException("forced failure after appending '" + message + "'");
    }
}
