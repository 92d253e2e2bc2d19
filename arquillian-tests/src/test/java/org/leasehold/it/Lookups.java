package org.leasehold.it;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.UUID;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.naming.InitialContext;
import javax.naming.NamingException;

import jakarta.transaction.Status;
import jakarta.transaction.UserTransaction;

/** Small helpers of the in-container tests. */
final class Lookups {
    private Lookups() {
    }

    static <T> T lookup(String name) throws NamingException {
        return InitialContext.doLookup(name);
    }

    static UserTransaction userTransaction() throws NamingException {
        return lookup("java:comp/UserTransaction");
    }

    /** Rolls back what is still active on this thread (a failed test must not leave a transaction behind). */
    static void rollbackIfActive(UserTransaction ut) {
        try {
            if (ut.getStatus() != Status.STATUS_NO_TRANSACTION) {
                ut.rollback();
            }
        } catch (Exception e) {
            System.getLogger(Lookups.class.getName()).log(System.Logger.Level.WARNING, "rollback failed: {0}",
                    e.toString());
        }
    }

    /** A short id that makes a test's names and payloads unique across runs. */
    static String uid() {
        return UUID.randomUUID().toString().substring(0, 8);
    }

    static long micros(Instant t) {
        return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
    }

    /** An attribute of the adapter's metrics MBean for {@code log}. */
    static long adapterMetric(String log, String attribute) throws JMException {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        Set<ObjectName> names = server.queryNames(new ObjectName("org.leasehold:type=Adapter,*"), null);
        for (ObjectName n : names) {
            if (ObjectName.quote(log).equals(n.getKeyProperty("log"))) {
                return ((Number) server.getAttribute(n, attribute)).longValue();
            }
        }
        throw new IllegalStateException("no metrics MBean of the adapter for log " + log + " among " + names);
    }

    /** Waits until the adapter's metric reaches {@code atLeast}; returns how long that took. */
    static Duration awaitMetric(String log, String attribute, long atLeast, Duration max) throws Exception {
        long start = System.nanoTime();
        while (adapterMetric(log, attribute) < atLeast) {
            if (System.nanoTime() - start > max.toNanos()) {
                throw new AssertionError(attribute + " of log " + log + " stayed at " + adapterMetric(log, attribute)
                        + " for " + max.toMillis() + " ms, expected at least " + atLeast);
            }
            Thread.sleep(50);
        }
        return Duration.ofNanos(System.nanoTime() - start);
    }
}
