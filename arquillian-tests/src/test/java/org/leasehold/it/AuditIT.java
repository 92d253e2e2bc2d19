package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.it.Lookups.uid;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import jakarta.ejb.EJB;
import jakarta.ejb.EJBException;
import jakarta.enterprise.concurrent.ManagedExecutorService;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.container.test.api.RunAsClient;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.it.app.AuditEjb;
import org.leasehold.it.audit.Verified;
import org.leasehold.it.check.Stored;
import org.leasehold.lease.Lease;
import org.leasehold.store.check.LogChecker;

/**
 * The audit chain end to end on Payara Micro and on WildFly: transactions through the adapter (several names, in
 * several threads, commits and rollbacks) write a log of their own, {@code audit}; then, in the test JVM,
 * {@code leasehold verify}'s LogVerifier proves that log from the stored bytes and the keys the adapter's embedded
 * engine published into the store: no finding, and a witness on every lease of every frame. One flipped bit in one
 * stored witness of a copy of the log (its frame's checksum rewritten, as a forger would) is a bad signature there.
 */
@ExtendWith(ArquillianExtension.class)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class AuditIT {
    private static final String LOG = "audit";
    private static final int THREADS = 4;
    private static final int TRANSACTIONS = 6;

    @Deployment
    static WebArchive app() {
        return Deployments.war("audit.war").addClasses(AuditEjb.class);
    }

    @EJB
    private AuditEjb ledger;

    /** In the server: commits and rollbacks over overlapping sets of names, from several threads at once. */
    @Test
    @Order(1)
    void transactionsWriteThroughTheAdapter() throws Exception {
        String run = uid();
        List<String> names = List.of("audit/" + run + "-a", "audit/" + run + "-b", "audit/" + run + "-c");
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        List<Future<Integer>> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int thread = t;
            threads.add(executor.submit(() -> {
                int committed = 0;
                for (int i = 0; i < TRANSACTIONS; i++) {
                    List<String> these = List.of(names.get((thread + i) % names.size()),
                            names.get((thread + 2 * i + 1) % names.size())).stream().distinct().toList();
                    String text = run + "-" + thread + "-" + i;
                    if ((thread + i) % 3 == 2) {
                        assertThrows(EJBException.class, () -> ledger.recordThenFail(these, text + "-rolled-back"));
                    } else {
                        Lease l = ledger.record(these, List.of(text + "-x", text + "-y"));
                        assertEquals(these.size(), l.names().size());
                        committed++;
                    }
                }
                return committed;
            }));
        }
        int committed = 0;
        for (Future<Integer> f : threads) {
            committed += f.get(5, TimeUnit.MINUTES);
        }
        LogChecker.Result stored = Stored.log(Stored.itRoot(), LOG);
        assertEquals(List.of(), stored.violations(), "the log breaks the format");
        assertEquals(2 * committed, Stored.startingWith(stored, run + "-").size(), "every committed message, once");
        assertTrue(Stored.startingWith(stored, run + "-").stream().noneMatch(m -> m.text().endsWith("-rolled-back")),
                "no rolled-back message is stored");
    }

    /** In the test JVM: the log the server wrote verifies; a flipped witness bit in a copy of it does not. */
    @Test
    @Order(2)
    @RunAsClient
    void theVerifierProvesTheLogAndCatchesAFlippedWitnessBit() throws Exception {
        // Everything of the verifier stays in Verified: the server loads this class too, and has none of it.
        Verified.assertProvenThenFlipped(Stored.itRoot(), LOG, Deployments.server(), 2 * THREADS, THREADS);
    }
}
