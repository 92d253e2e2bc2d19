package org.leasehold.samples.ledger.app;

import javax.naming.InitialContext;
import javax.naming.NamingException;

import jakarta.annotation.Resource;
import jakarta.ejb.SessionContext;
import jakarta.ejb.Stateless;
import jakarta.ejb.TransactionAttribute;
import jakarta.ejb.TransactionAttributeType;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * The benchmark's Leasehold side: in the container's JTA transaction, one exclusive lease {@code bench/<key>} and one
 * 256-byte message, written when the transaction commits. The connection factory is the benchmark's own pool of the
 * adapter ({@value #FACTORY}, log {@code bench}), which only the runner's benchmark mode creates, so it is looked up
 * on first use and the ledger deploys without it.
 */
@Stateless
public class LeaseholdBench {

    /** JNDI name of the connection factory the benchmark mode defines. */
    static final String FACTORY = "leasehold/Bench";

    @Resource
    SessionContext context;

    private LeaseConnectionFactory leases;

    /** One lease, one message, in the caller's (or a new) JTA transaction; rolled back on any failure. */
    @TransactionAttribute(TransactionAttributeType.REQUIRED)
    public void leaseAndAppend(int key) throws LeaseholdException, BenchNotConfiguredException {
        LeaseConnectionFactory factory = factory();
        try (LeaseConnection c = factory.getConnection()) {
            c.acquire("bench/" + key);
            c.append(BenchPayload.of(key));
        } catch (LeaseholdException | RuntimeException e) {
            context.setRollbackOnly();
            throw e;
        }
    }

    /** Messages in the benchmark's log, read from the bag store (also from buckets not sealed yet). */
    @TransactionAttribute(TransactionAttributeType.NOT_SUPPORTED)
    public long storedMessages() throws LeaseholdException, BenchNotConfiguredException {
        long n = 0;
        try (LeaseConnection c = factory().getConnection(); MessageStream s = c.read(ReadRequest.all(c.log()))) {
            while (s.next() != null) {
                n++;
            }
        } catch (org.leasehold.bag.UnknownLogException e) {
            return 0;
        }
        return n;
    }

    private LeaseConnectionFactory factory() throws BenchNotConfiguredException {
        if (leases == null) {
            try {
                leases = InitialContext.doLookup(FACTORY);
            } catch (NamingException e) {
                throw new BenchNotConfiguredException(FACTORY + " is not defined: the runner's benchmark mode "
                        + "(--workload=bench) creates it with a connector pool on the adapter (" + e + ")");
            }
        }
        return leases;
    }
}
