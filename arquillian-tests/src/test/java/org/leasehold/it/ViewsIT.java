package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.it.Lookups.micros;
import static org.leasehold.it.Lookups.uid;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import jakarta.enterprise.concurrent.ManagedExecutorService;
import jakarta.inject.Inject;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.bag.ViewState;
import org.leasehold.it.app.ItBalances;
import org.leasehold.it.app.ViewLedger;
import org.leasehold.it.check.Stored;
import org.leasehold.store.check.LogChecker;

/**
 * Materialized views in an application on Payara Micro and on WildFly: a {@code ViewDefinition} bean, injected as
 * {@code LeaseView} by its state type and by {@code @View} name, registered with the connection factory when the
 * application starts. Concurrent {@code @Leased} transfers decide on the balance the view gives under their leases;
 * the stored log, read by the independent checker, shows that no account went below zero and that the view equals
 * the fold of the whole log; once a snapshot covers the log, a read applies only the messages after it.
 */
@ExtendWith(ArquillianExtension.class)
class ViewsIT {
    private static final String LOG = "cdi";
    private static final String FACTORY = "eis/leasehold/cdi";

    @Inject
    private ViewLedger ledger;

    @Deployment
    static WebArchive app() {
        return Deployments.war("views.war")
                .addClasses(ItBalances.class, ViewLedger.class)
                .addAsLibraries(Deployments.microFile("leasehold-cdi.jar"))
                .addAsResource(new StringAsset("leasehold.connection-factory=" + FACTORY + "\n"),
                        "META-INF/microprofile-config.properties");
    }

    /** The balances of {@code accounts} from the stored log, replayed in the store's order; fails on one below zero. */
    private static TreeMap<String, Long> replay(LogChecker.Result r, List<String> accounts) {
        TreeMap<String, Long> balance = new TreeMap<>();
        for (LogChecker.Msg m : r.ordered()) {
            String[] f = m.text().split(" ");
            if (f.length != 4 || !f[0].equals("view") || !accounts.contains(f[2])) {
                continue;
            }
            long amount = Long.parseLong(f[3]);
            if (!f[1].equals("-")) {
                long left = balance.merge(f[1], -amount, Long::sum);
                assertTrue(left >= 0, () -> f[1] + " below zero after " + m.text() + " at " + m.timestamp());
            }
            balance.merge(f[2], amount, Long::sum);
        }
        return balance;
    }

    private static TreeMap<String, Long> only(TreeMap<String, Long> state, List<String> accounts) {
        TreeMap<String, Long> out = new TreeMap<>(state);
        out.keySet().retainAll(accounts);
        return out;
    }

    /** Whether {@code e} is a transaction rolled back because a lease was broken (a rollback in its causes). */
    private static boolean rolledBack(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof jakarta.transaction.RollbackException
                    || t instanceof jakarta.ejb.EJBTransactionRolledbackException
                    || t instanceof org.leasehold.lease.LeaseLostException) {
                return true;
            }
        }
        return false;
    }

    private static LogChecker.Result stored() throws Exception {
        LogChecker.Result r = Stored.log(Stored.itRoot(), LOG);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        return r;
    }

    @Test
    void transfersDecideOnTheViewUnderTheirLeasesAndTheViewEqualsTheFoldOfTheLog() throws Exception {
        String run = uid();
        List<String> accounts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            accounts.add(run + "-" + i);
            ledger.deposit(run + "-" + i, 100);
        }
        assertTrue(ledger.sameDefinition(), "by state type and by name, the application's one definition bean");
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        List<Future<int[]>> clients = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            long seed = t;
            clients.add(executor.submit(() -> {
                Random rnd = new Random(seed);
                int[] outcomes = new int[2];
                for (int i = 0; i < 15; i++) {
                    int from = rnd.nextInt(4);
                    int to = (from + 1 + rnd.nextInt(3)) % 4;
                    try {
                        ViewState<TreeMap<String, Long>> v = ledger.transfer(accounts.get(from), accounts.get(to),
                                1 + rnd.nextInt(60));
                        assertTrue(v.state().getOrDefault(accounts.get(from), 0L) >= 0, v::toString);
                        outcomes[0]++;
                    } catch (Exception e) {
                        // An older transaction broke this one's tentative lease (wound-wait): it rolled back and
                        // wrote nothing (LEASEHOLD-4208).
                        if (!rolledBack(e)) {
                            throw e;
                        }
                        outcomes[1]++;
                    }
                }
                return outcomes;
            }));
        }
        int committed = 0;
        int rolledBack = 0;
        for (Future<int[]> c : clients) {
            int[] o = c.get(120, TimeUnit.SECONDS);
            committed += o[0];
            rolledBack += o[1];
        }
        System.out.println("views: " + committed + " transfers committed, " + rolledBack + " rolled back by older ones");
        assertTrue(committed > 0, "no transfer committed");

        TreeMap<String, Long> expected = replay(stored(), accounts);
        assertEquals(400L, expected.values().stream().mapToLong(Long::longValue).sum(), "money conserved");
        ViewState<TreeMap<String, Long>> underLease = ledger.readUnder(accounts.get(0));
        assertEquals(expected, only(underLease.state(), accounts), "the view read under a lease is the full fold");
        assertEquals(expected, only(ledger.readByName().state(), accounts));

        // Snapshots until one covers every message written so far (the latest sealed boundary trails the clock by
        // the grace period); then a read starts there and applies only what is written after it.
        long last = 0;
        for (LogChecker.Msg m : stored().ordered()) {
            last = Math.max(last, m.timestamp());
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Instant built = ledger.build();
        while (micros(built) <= last && System.nanoTime() < deadline) {
            Thread.sleep(200);
            built = ledger.build();
        }
        assertTrue(micros(built) > last, () -> "no snapshot covers the log within 60 s");
        ledger.transfer(accounts.get(1), accounts.get(2), 1);
        ViewState<TreeMap<String, Long>> v = ledger.readUnder(accounts.get(2));
        assertNotNull(v.boundary());
        assertTrue(!v.boundary().isBefore(built), v.boundary() + " before " + built);
        LogChecker.Result r = stored();
        long after = 0;
        for (LogChecker.Msg m : r.ordered()) {
            if (m.timestamp() >= micros(v.boundary())) {
                after++;
            }
        }
        assertEquals(after, v.tailMessages(), "only the messages after the snapshot are applied");
        assertTrue(v.tailMessages() <= 1, () -> "the one transfer after the snapshot, at most: " + v.tailMessages());
        assertEquals(replay(r, accounts), only(v.state(), accounts));
        System.out.println("views: snapshot at " + v.boundary() + " plus " + v.tailMessages() + " messages of the "
                + r.ordered().size() + " in log '" + LOG + "' gives " + Map.copyOf(only(v.state(), accounts)));
    }
}
