package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.it.Lookups.uid;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;

import jakarta.ejb.EJB;
import jakarta.enterprise.concurrent.ManagedThreadFactory;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.it.app.CommitDelay;
import org.leasehold.it.app.LedgerEjb;
import org.leasehold.it.app.StockEjb;
import org.leasehold.it.check.Stored;
import org.leasehold.store.check.LogChecker;

/**
 * What a lease promises an application on Payara Micro and on WildFly: while it holds the lease, the state the lease
 * guards is current, in the log and in a database of the same transaction. Sixteen clients update a few items, each
 * update a transaction that takes the item's lease with {@code @Leased}, reads the item's row from an XA database,
 * writes it back one version higher and appends that version; a row read under the lease that is behind the log's last
 * message for the item is a stale read. A {@link CommitDelay} between the adapter and the database in every
 * transaction commits the database a few milliseconds after the adapter, so a lease that ends with the adapter's
 * branch, not with the transaction, is caught every run. And a store root that nothing has written yet is read and
 * then appended to by the first {@code @Leased} call.
 */
@ExtendWith(ArquillianExtension.class)
class GuardedStateIT {
    private static final String LOG = "stock";
    private static final String FRESH_LOG = "fresh";
    private static final int CLIENTS = 16;
    private static final int ITEMS = 4;
    private static final int TRANSACTIONS = 2_000;
    /** How much later than the adapter's branch the database's commits (see {@link CommitDelay}). */
    private static final long COMMIT_DELAY_MILLIS = 5;
    /** A bound on the clients' run, far above its usual length, so that a hung run fails instead of stalling CI. */
    private static final long RUN_LIMIT_SECONDS = 240;

    @EJB
    private StockEjb stock;

    @Deployment
    static WebArchive app() throws IOException {
        return Deployments.war("guarded.war")
                .addClasses(StockEjb.class, StockEjb.Outcome.class, CommitDelay.class, LedgerEjb.class)
                .addAsLibraries(Deployments.microFile("leasehold-cdi.jar"))
                .addAsResource(new StringAsset("leasehold.connection-factory=" + StockEjb.FACTORY + "\n"),
                        "META-INF/microprofile-config.properties")
                .addAsResource(new StringAsset(freshRoot().toString()), FRESH_ROOT_RESOURCE)
                .setWebXML(new StringAsset(webXml()));
    }

    /**
     * The application's two connection factories on the adapter deployed as 'leasehold': one on the tests' store, one
     * on a store root of this server's own that nothing has written before.
     */
    private static String webXml() throws IOException {
        return "<web-app xmlns=\"https://jakarta.ee/xml/ns/jakartaee\" version=\"6.0\">\n"
                + factory(StockEjb.FACTORY, Stored.itRoot(), LOG, "it-stock", "    <property><name>DefaultWaitMillis"
                        + "</name><value>20000</value></property>\n")
                + factory(StockEjb.FRESH_FACTORY, freshRoot(), FRESH_LOG, "it-fresh", "")
                + "</web-app>\n";
    }

    private static String factory(String name, Path root, String log, String writer, String more) {
        return "  <connection-factory>\n"
                + "    <name>" + name + "</name>\n"
                + "    <interface-name>" + LeaseConnectionFactory.class.getName() + "</interface-name>\n"
                + "    <resource-adapter>leasehold</resource-adapter>\n"
                + "    <transaction-support>XATransaction</transaction-support>\n"
                + "    <property><name>BagStoreRoot</name><value>" + root + "</value></property>\n"
                + "    <property><name>Log</name><value>" + log + "</value></property>\n"
                + "    <property><name>WriterId</name><value>" + writer + "</value></property>\n"
                + more
                + "  </connection-factory>\n";
    }

    /** The war's resource that names the fresh store root inside the server (which has no property for it). */
    private static final String FRESH_ROOT_RESOURCE = "leasehold-it-fresh-root.txt";

    /**
     * This server's fresh store root, an empty directory the build creates (target/fresh-store/payara or
     * .../wildfly): each server's run starts on a root that nothing has written. Outside the server it comes from the
     * build's system property; inside, from the war.
     */
    private static Path freshRoot() throws IOException {
        try (InputStream in = GuardedStateIT.class.getClassLoader().getResourceAsStream(FRESH_ROOT_RESOURCE)) {
            if (in != null) {
                return Path.of(new String(in.readAllBytes(), StandardCharsets.UTF_8));
            }
        }
        String dir = System.getProperty("leasehold.it.fresh");
        if (dir == null) {
            throw new IllegalStateException("the system property leasehold.it.fresh is not set: run the tests through "
                    + "Maven (failsafe passes it)");
        }
        return Path.of(dir, Deployments.server());
    }

    private static LogChecker.Result stored(Path root, String log) throws Exception {
        LogChecker.Result r = Stored.log(root, log);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        return r;
    }

    @Test
    void sixteenClientsNeverReadADatabaseRowBehindTheLogUnderTheLease() throws Exception {
        String run = uid();
        List<String> items = new ArrayList<>();
        for (int i = 0; i < ITEMS; i++) {
            items.add(run + "-" + i);
        }
        stock.createTable();
        stock.open(run);

        AtomicInteger committed = new AtomicInteger();
        AtomicInteger staleReads = new AtomicInteger();
        AtomicInteger duplicateFirstRows = new AtomicInteger();
        AtomicInteger failed = new AtomicInteger();
        AtomicReference<Throwable> firstFailure = new AtomicReference<>();
        ManagedThreadFactory threads = Lookups.lookup("java:comp/DefaultManagedThreadFactory");
        ExecutorService clients = Executors.newFixedThreadPool(CLIENTS, threads);
        long start = System.nanoTime();
        long until = start + TimeUnit.SECONDS.toNanos(RUN_LIMIT_SECONDS);
        List<Future<?>> running = new ArrayList<>();
        for (int c = 0; c < CLIENTS; c++) {
            running.add(clients.submit(() -> {
                while (committed.get() < TRANSACTIONS && System.nanoTime() < until) {
                    String item = items.get(ThreadLocalRandom.current().nextInt(ITEMS));
                    StockEjb.Outcome o;
                    try {
                        o = stock.update(item, COMMIT_DELAY_MILLIS);
                    } catch (RuntimeException e) {
                        // Rolled back (a lease broken by an older transaction, a wait that timed out): nothing written.
                        failed.incrementAndGet();
                        firstFailure.compareAndSet(null, e);
                        continue;
                    }
                    if (o.stale()) {
                        staleReads.incrementAndGet();
                    }
                    if (o.duplicateFirstRow()) {
                        duplicateFirstRows.incrementAndGet();
                    } else {
                        committed.incrementAndGet();
                    }
                }
                return null;
            }));
        }
        clients.shutdown();
        for (Future<?> f : running) {
            f.get(RUN_LIMIT_SECONDS + 60, TimeUnit.SECONDS);
        }
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        System.out.printf("guarded state: %d clients, %d items, %d transactions committed in %d ms (%.0f/s), "
                + "%d stale reads (%d of them a duplicate first row), %d rolled back (first: %s)%n", CLIENTS, ITEMS,
                committed.get(), millis, committed.get() * 1000.0 / Math.max(1, millis), staleReads.get(),
                duplicateFirstRows.get(), failed.get(), firstFailure.get());

        assertEquals(0, staleReads.get(), () -> staleReads.get() + " of " + (committed.get() + duplicateFirstRows.get())
                + " transactions read the item's row behind the log's last message for it under the item's lease ("
                + duplicateFirstRows.get() + " inserted a first row that another had inserted): the lease ended before "
                + "the database's branch of the previous holder's transaction had committed");
        assertTrue(committed.get() >= TRANSACTIONS, () -> "only " + committed.get() + " transactions committed in "
                + RUN_LIMIT_SECONDS + " s (" + failed.get() + " rolled back, first: " + firstFailure.get() + ")");

        // From the stored data alone: each item's versions in the log are 1, 2, 3, ... and its row holds the last.
        LogChecker.Result r = stored(Stored.itRoot(), LOG);
        Map<String, Long> rows = stock.rows(run + "-");
        long messages = 0;
        for (String item : items) {
            String prefix = "stock " + item + " v";
            List<Long> versions = Stored.startingWith(r, prefix).stream()
                    .map(m -> Long.parseLong(m.text().substring(prefix.length()))).toList();
            List<Long> expected = LongStream.rangeClosed(1, versions.size()).boxed().toList();
            assertEquals(expected, versions, () -> "the versions of " + item + " in the log, in log order");
            Long lastVersion = versions.isEmpty() ? null : Long.valueOf(versions.size());
            assertEquals(lastVersion, rows.get(item), () -> "the row of " + item + " is the log's last version of it");
            for (LogChecker.Msg m : Stored.startingWith(r, prefix)) {
                assertTrue(m.generationOf("item/" + item) > 0, () -> "'" + m.text() + "' is not under item/" + item);
            }
            messages += versions.size();
        }
        assertEquals(committed.get(), messages, "every committed transaction appended one message, no other did");
    }

    @Test
    void theFirstLeasedCallOnAFreshStoreReadsNothingThenAppends() throws Exception {
        Path root = freshRoot();
        assertEquals(List.of(), stored(root, FRESH_LOG).ordered(), "nothing was appended to the fresh store before");
        String item = uid();
        assertEquals(0, stock.readThenAppend(item), "a log with no messages reads as empty");
        assertEquals(1, stock.readThenAppend(item), "the second call reads the first's message");

        LogChecker.Result r = stored(root, FRESH_LOG);
        assertEquals(List.of("fresh " + item + " after 0", "fresh " + item + " after 1"),
                r.ordered().stream().map(LogChecker.Msg::text).toList());
    }
}
