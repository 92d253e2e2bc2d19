package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jakarta.annotation.Resource;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.inject.Inject;
import jakarta.transaction.Transactional;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseLog;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.inject.Leased;
import org.leasehold.lease.Lease;

/**
 * Uses a connection factory the application defines itself (in its web.xml, the descriptor twin of
 * {@code @ConnectionFactoryDefinition}) at the CDI integration's default name, named explicitly with
 * {@code @Leased(factory = ...)}.
 */
@ApplicationScoped
public class AppDefinedLedger {
    @Inject
    private LeaseLog log;

    @Resource(lookup = LeaseConnectionFactory.DEFAULT_JNDI_NAME)
    private LeaseConnectionFactory leases;

    @Transactional
    @Leased(value = "account/{0}", factory = LeaseConnectionFactory.DEFAULT_JNDI_NAME)
    public List<Lease> deposit(String account, long amount) throws LeaseholdException {
        log.append(("deposit " + account + " " + amount).getBytes(StandardCharsets.UTF_8));
        return log.leases();
    }

    /**
     * Takes the lease on {@code account/<account>} in this method's transaction, says so through {@code holding},
     * then (on a connection of the same factory in the same transaction) asks for {@code account/<account>-older-first},
     * which an older transaction holds, and waits for it: a transaction that waits is one whose tentative lease an
     * older one asking for it breaks (wound-wait). Then keeps what it holds until {@code done} opens (at most a
     * minute).
     */
    @Transactional
    @Leased(value = "account/{0}", factory = LeaseConnectionFactory.DEFAULT_JNDI_NAME)
    public void holdUntil(String account, CountDownLatch holding, CountDownLatch done) throws InterruptedException,
            LeaseholdException {
        holding.countDown();
        try (LeaseConnection c = leases.getConnection()) {
            c.acquire(LeaseOptions.of("account/" + account + "-older-first"));
        }
        done.await(60, TimeUnit.SECONDS);
    }

    /** The log the injected {@link LeaseLog} appends to inside a {@code @Leased} method. */
    @Transactional
    @Leased(value = "account/{0}", factory = LeaseConnectionFactory.DEFAULT_JNDI_NAME)
    public String logName(String account) {
        return log.log();
    }
}
