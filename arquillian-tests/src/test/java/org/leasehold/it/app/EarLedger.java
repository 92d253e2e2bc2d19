package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;

import jakarta.annotation.Resource;
import jakarta.ejb.Stateless;
import jakarta.resource.ConnectionFactoryDefinition;
import jakarta.resource.spi.TransactionSupport.TransactionSupportLevel;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.Lease;

/**
 * An EJB of an application that ships the adapter inside its EAR and defines the connection factory itself, on the
 * EAR's {@code leasehold.rar} ({@code #leasehold}). The bag store root comes from a system property of the server
 * (WildFly replaces {@code ${...}} in annotations when the ee subsystem's annotation-property-replacement is on).
 */
@ConnectionFactoryDefinition(name = EarLedger.FACTORY, interfaceName = "org.leasehold.connector.LeaseConnectionFactory",
        resourceAdapter = "#leasehold", transactionSupport = TransactionSupportLevel.XATransaction,
        properties = {"BagStoreRoot=${leasehold.it.store}", "Log=" + EarLedger.LOG, "WriterId=it-ear"})
@Stateless
public class EarLedger {
    public static final String FACTORY = "java:app/leasehold/Leases";
    public static final String LOG = "ear";

    @Resource(lookup = FACTORY)
    private LeaseConnectionFactory leases;

    /** Takes the lease on {@code name} and appends {@code text} in this method's transaction. */
    public Lease record(String name, String text) throws LeaseholdException {
        try (LeaseConnection c = leases.getConnection()) {
            Lease lease = c.acquire(name);
            c.append(text.getBytes(StandardCharsets.UTF_8));
            return lease;
        }
    }

    /** Like {@link #record}, then fails: the container rolls the transaction back. */
    public void recordThenFail(String name, String text) throws LeaseholdException {
        record(name, text);
        throw new IllegalStateException("forced failure after appending '" + text + "'");
    }
}
