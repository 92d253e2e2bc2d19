package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.it.Lookups.micros;
import static org.leasehold.it.Lookups.uid;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import jakarta.ejb.EJB;
import jakarta.ejb.EJBException;
import jakarta.enterprise.concurrent.ManagedExecutorService;
import jakarta.transaction.RollbackException;
import jakarta.transaction.UserTransaction;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.it.app.LedgerEjb;
import org.leasehold.it.check.JournalReader;
import org.leasehold.it.check.Stored;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseLostException;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionListener;
import org.leasehold.store.check.LogChecker;

/**
 * Transactions through the adapter's connection factory on Payara Micro and on WildFly: commit, rollback,
 * contention, two-phase commit with an XA database, and a lease lost mid-transaction. Every outcome is read back twice: through the
 * adapter ({@code LeaseConnection.read}) and from the files, with the independent {@link LogChecker} (and the
 * journal with {@link JournalReader}).
 */
@ExtendWith(ArquillianExtension.class)
class TransactionsIT {
    private static final String LOG = "tx";
    private static final String WRITER = "it-tx";

    @Deployment
    static WebArchive app() {
        return Deployments.war("transactions.war").addClasses(LedgerEjb.class);
    }

    @EJB
    private LedgerEjb ledger;

    private static LeaseConnectionFactory factory() throws Exception {
        return Lookups.lookup(LedgerEjb.FACTORY);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The messages under any of {@code names}, read through a connection of the adapter (outside a transaction). */
    private static List<Message> readThroughAdapter(Set<String> names) throws Exception {
        List<Message> out = new ArrayList<>();
        try (LeaseConnection c = factory().getConnection();
                MessageStream s = c.read(ReadRequest.all(LOG).underAnyOf(names))) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
        }
        return out;
    }

    private static String text(Message m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    private static LogChecker.Result stored() throws Exception {
        LogChecker.Result r = Stored.log(Stored.itRoot(), LOG);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        return r;
    }

    private static LogChecker.Msg storedOnce(LogChecker.Result r, String text) {
        List<LogChecker.Msg> found = Stored.withText(r, text);
        assertEquals(1, found.size(), () -> "'" + text + "' should be stored exactly once: " + found);
        return found.get(0);
    }

    @Test
    void committedMessagesAreReadableInLeaseOrder() throws Exception {
        String run = uid();
        String a = "account/" + run + "-a";
        String b = "account/" + run + "-b";
        List<List<String>> nameSets = List.of(List.of(a, b), List.of(a), List.of(b), List.of(b, a), List.of(a),
                List.of(a, b));
        List<Lease> grants = new ArrayList<>();
        List<String> sent = new ArrayList<>();
        for (int i = 0; i < nameSets.size(); i++) {
            List<String> messages = List.of(run + "-" + i + "-x", run + "-" + i + "-y");
            grants.add(ledger.record(nameSets.get(i), messages));
            sent.addAll(messages);
        }

        // Through the adapter: every message once, in commit order, both messages of a transaction in one frame.
        List<Message> read = readThroughAdapter(Set.of(a, b));
        assertEquals(sent, read.stream().map(TransactionsIT::text).toList());
        for (int i = 0; i < read.size(); i += 2) {
            assertEquals(read.get(i).timestamp(), read.get(i + 1).timestamp(), "one transaction, one timestamp");
            assertEquals(read.get(i).offset(), read.get(i + 1).offset(), "one transaction, one frame");
        }

        // From the files: the same messages, each under exactly its transaction's names and generations.
        LogChecker.Result r = stored();
        Map<String, Long> lastTimestamp = new HashMap<>();
        Map<String, Long> lastGeneration = new HashMap<>();
        for (int i = 0; i < nameSets.size(); i++) {
            LogChecker.Msg x = storedOnce(r, run + "-" + i + "-x");
            LogChecker.Msg y = storedOnce(r, run + "-" + i + "-y");
            assertEquals(x.timestamp(), y.timestamp());
            assertEquals(x.offset(), y.offset());
            assertEquals(micros(read.get(2 * i).timestamp()), x.timestamp(), "the adapter and the files agree");
            Lease g = grants.get(i);
            assertEquals(nameSets.get(i).size(), x.leases().size(), () -> "stored leases " + x.leases());
            for (String name : nameSets.get(i)) {
                long generation = g.grant(name).generation();
                assertEquals(generation, x.generationOf(name), "the stored generation is the grant's");
                // Invariant 3: floor < timestamp < deadline.
                assertTrue(micros(g.grant(name).floor()) < x.timestamp(), "above the floor");
                assertTrue(x.timestamp() < micros(g.deadline()), "below the deadline");
                Long before = lastTimestamp.get(name);
                if (before != null) {
                    // Lease order: later generations of a name carry later timestamps, above the last watermark.
                    assertTrue(generation > lastGeneration.get(name), "generations of " + name + " increase");
                    assertTrue(x.timestamp() > before, "timestamps of " + name + " increase with generations");
                    assertEquals(before, micros(g.grant(name).floor()), "the floor is the previous holder's watermark");
                }
                lastTimestamp.put(name, x.timestamp());
                lastGeneration.put(name, generation);
            }
        }
    }

    @Test
    void aRolledBackTransactionWritesNothingAndLeavesTheFloor() throws Exception {
        String run = uid();
        String name = "account/" + run;
        ledger.record(List.of(name), List.of(run + "-before"));
        EJBException failed = assertThrows(EJBException.class,
                () -> ledger.recordThenFail(List.of(name), run + "-rolled-back"));
        assertTrue(String.valueOf(failed.getCause()).contains("forced failure"), () -> "cause: " + failed.getCause());
        Lease after = ledger.record(List.of(name), List.of(run + "-after"));

        List<String> read = readThroughAdapter(Set.of(name)).stream().map(TransactionsIT::text).toList();
        assertEquals(List.of(run + "-before", run + "-after"), read);
        LogChecker.Result r = stored();
        assertEquals(List.of(), Stored.withText(r, run + "-rolled-back"));
        long before = storedOnce(r, run + "-before").timestamp();
        assertEquals(before, micros(after.grant(name).floor()), "a rollback publishes no watermark");
        assertTrue(JournalReader.read(JournalReader.dir(Stored.itRoot(), LOG, WRITER)).promising(run + "-rolled-back")
                .isEmpty(), "a transaction rolled back before prepare leaves nothing in the journal");
    }

    @Test
    void aSecondTransactionWaitsForTheFirstAndWritesAboveItsWatermark() throws Exception {
        String run = uid();
        String name = "account/" + run + "-contended";
        long holdMillis = 1_500;
        LeaseConnectionFactory f = factory();
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        CountDownLatch firstHolds = new CountDownLatch(1);
        AtomicLong firstCommitStarted = new AtomicLong();
        Future<Lease> first = executor.submit(() -> {
            UserTransaction ut = Lookups.userTransaction();
            ut.begin();
            try {
                Lease l;
                try (LeaseConnection c = f.getConnection()) {
                    l = c.acquire(name);
                    c.append(bytes(run + "-first"));
                }
                firstHolds.countDown();
                Thread.sleep(holdMillis);
                firstCommitStarted.set(System.nanoTime());
                ut.commit();
                return l;
            } finally {
                Lookups.rollbackIfActive(ut);
            }
        });
        assertTrue(firstHolds.await(60, TimeUnit.SECONDS), "the first transaction never took its lease");

        UserTransaction ut = Lookups.userTransaction();
        long asked;
        long granted;
        Lease second;
        ut.begin();
        try {
            try (LeaseConnection c = f.getConnection()) {
                asked = System.nanoTime();
                second = c.acquire(name);
                granted = System.nanoTime();
                c.append(bytes(run + "-second"));
            }
            ut.commit();
        } finally {
            Lookups.rollbackIfActive(ut);
        }
        Lease firstLease = first.get(60, TimeUnit.SECONDS);

        long waitedMillis = (granted - asked) / 1_000_000;
        System.out.printf("contention: the second transaction waited %d ms for the lease (the first held it %d ms)%n",
                waitedMillis, holdMillis);
        assertTrue(asked < firstCommitStarted.get(), "the second asked only after the first had begun to commit: "
                + "the test proves nothing (is the machine overloaded?)");
        assertTrue(granted > firstCommitStarted.get(), "the second was granted while the first still held the lease");
        assertEquals(LeaseKind.TENTATIVE, second.kind(), "inside a transaction, leases are tentative until prepare");

        LogChecker.Result r = stored();
        long t1 = storedOnce(r, run + "-first").timestamp();
        long t2 = storedOnce(r, run + "-second").timestamp();
        assertTrue(t2 > t1, "the second wrote above the first");
        assertEquals(t1, micros(second.grant(name).floor()), "the second's floor is the first's watermark");
        assertTrue(second.grant(name).generation() > firstLease.grant(name).generation());
        assertEquals(List.of(run + "-first", run + "-second"),
                readThroughAdapter(Set.of(name)).stream().map(TransactionsIT::text).toList());
    }

    @Test
    void aTransactionWithADatabaseCommitsBothInTwoPhases() throws Exception {
        ledger.createTable();
        String run = uid();
        String text = run + "-with-row";
        ledger.recordWithRow("account/" + run, text, false);

        assertEquals(1, ledger.rows(text), "the row committed");
        storedOnce(stored(), text);
        assertEquals(List.of(text), readThroughAdapter(Set.of("account/" + run)).stream().map(TransactionsIT::text)
                .toList());
        // Two-phase, not one-phase: the adapter's branch was prepared (journal) and then committed.
        List<JournalReader.Branch> branches = JournalReader.read(JournalReader.dir(Stored.itRoot(), LOG, WRITER))
                .promising(text);
        assertEquals(1, branches.size(), () -> "journal branches promising " + text + ": " + branches);
        assertEquals(List.of(JournalReader.Type.PREPARED, JournalReader.Type.COMMITTED),
                branches.get(0).records().stream().map(JournalReader.Record::type).toList());
    }

    @Test
    void aFailingTransactionWithADatabaseRollsBothBack() throws Exception {
        ledger.createTable();
        String run = uid();
        String text = run + "-doomed";
        EJBException failed = assertThrows(EJBException.class,
                () -> ledger.recordWithRow("account/" + run, text, true));
        assertTrue(String.valueOf(failed.getCause()).contains("forced failure"), () -> "cause: " + failed.getCause());

        assertEquals(0, ledger.rows(text), "the row rolled back");
        assertEquals(List.of(), Stored.withText(stored(), text), "the message rolled back");
        assertEquals(List.of(), readThroughAdapter(Set.of("account/" + run)));
    }

    @Test
    void aLeaseLostMidTransactionRollsItBackWithAClearException() throws Exception {
        ledger.createTable();
        String run = uid();
        String name = "account/" + run + "-lost";
        // Short leases, renewed every 500 ms, so the renewer notices the break quickly.
        LeaseOptions shortLease = LeaseOptions.of(name).leaseFor(Duration.ofMillis(1_500));
        LeaseConnectionFactory f = factory();
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        long lostBefore = Lookups.adapterMetric(LOG, "LeasesLost");
        // The application's subscription to session events: the younger's lease must be told EXPIRED.
        List<SessionEvent> events = new CopyOnWriteArrayList<>();
        SessionListener listener = e -> {
            if (e.lease().names().contains(name)) {
                events.add(e);
            }
        };
        f.addSessionListener(listener);
        CountDownLatch olderStarted = new CountDownLatch(1);
        CountDownLatch youngerHolds = new CountDownLatch(1);
        Future<Lease> older = executor.submit(() -> {
            UserTransaction ut = Lookups.userTransaction();
            ut.begin();
            try {
                Lease l;
                // The branch starts (and its age is taken) when the connection is enlisted.
                try (LeaseConnection c = f.getConnection()) {
                    // A lease the younger transaction will wait for.
                    c.acquire(LeaseOptions.of(name + "-older-first"));
                    olderStarted.countDown();
                    if (!youngerHolds.await(60, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the younger transaction never took its lease");
                    }
                    // Waits until the younger one waits for it, then breaks its tentative lease (wound-wait).
                    l = c.acquire(shortLease);
                    c.append(bytes(run + "-older"));
                }
                ut.commit();
                return l;
            } finally {
                Lookups.rollbackIfActive(ut);
            }
        });
        assertTrue(olderStarted.await(60, TimeUnit.SECONDS));

        UserTransaction ut = Lookups.userTransaction();
        Lease younger;
        Lease olderLease;
        LeaseLostException lost;
        ut.begin();
        try {
            try (LeaseConnection c = f.getConnection()) {
                younger = c.acquire(shortLease);
                ledger.insertRow(run + "-younger-row");
                c.append(bytes(run + "-younger-1"));
                youngerHolds.countDown();
                // It waits for the older one's lease: a cycle of waits, which the older one breaks.
                c.acquire(LeaseOptions.of(name + "-older-first"));
                olderLease = older.get(60, TimeUnit.SECONDS);
                Duration noticed = Lookups.awaitMetric(LOG, "LeasesLost", lostBefore + 1, Duration.ofSeconds(20));
                System.out.printf("lease lost: the renewer reported the broken lease %d ms after the older committed%n",
                        noticed.toMillis());
                lost = assertThrows(LeaseLostException.class, () -> c.append(bytes(run + "-younger-2")));
            }
            RollbackException rolledBack = assertThrows(RollbackException.class, ut::commit);
            System.out.println("lease lost: commit failed with " + rolledBack);
        } finally {
            Lookups.rollbackIfActive(ut);
        }
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (events.isEmpty() && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        f.removeSessionListener(listener);
        System.out.println("lease lost: session events " + events);
        assertEquals(List.of(SessionEvent.Type.EXPIRED), events.stream().map(SessionEvent::type).toList(),
                "a broken lease is expired at once, without jeopardy");
        assertEquals(younger.grant(name).generation(), events.get(0).lease().grant(name).generation());
        String message = lost.getMessage();
        System.out.println("lease lost: append failed with " + message);
        assertTrue(message.contains("lost a lease") && message.contains("rolled back"), message);
        assertTrue(message.contains(name), () -> "the message should name the lease: " + message);
        assertTrue(olderLease.grant(name).generation() > younger.grant(name).generation());

        LogChecker.Result r = stored();
        storedOnce(r, run + "-older");
        assertEquals(List.of(), Stored.startingWith(r, run + "-younger"), "nothing of the younger was written");
        assertEquals(0, ledger.rows(run + "-younger-row"), "the younger's database row rolled back with it");
        assertNotEquals(List.of(), readThroughAdapter(Set.of(name)));
        assertEquals(List.of(run + "-older"), readThroughAdapter(Set.of(name)).stream().map(TransactionsIT::text)
                .toList());
        assertTrue(JournalReader.read(JournalReader.dir(Stored.itRoot(), LOG, WRITER)).promising(run + "-younger-1")
                .isEmpty(), "the younger never prepared");
    }

    /**
     * A rollback caused by a broken lease says why, to the application and in the server log: an older transaction
     * breaks the tentative lease of a younger one (wound-wait) that does not touch its connection again, so the
     * younger learns of it only when it commits. Once as an EJB method (container-managed transaction), once with a
     * {@code UserTransaction}: the exception the application gets carries the reason (somewhere among its causes and
     * suppressed exceptions), and the server logs {@code LEASEHOLD-4208} with it.
     */
    @Test
    void aRollbackByABrokenLeaseCarriesTheReasonToTheApplicationAndTheServerLog() throws Exception {
        String run = uid();
        LeaseConnectionFactory f = factory();
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        try (ServerLog serverLog = ServerLog.capture()) {
            String ejbName = "account/" + run + "-wounded-ejb";
            CountDownLatch ejbHolds = new CountDownLatch(1);
            Future<Lease> olderOfEjb = olderBreaks(executor, f, ejbName, run + "-older-ejb", ejbHolds);
            Exception fromEjb = assertThrows(Exception.class, () -> ledger.recordAndWaitFor(ejbName,
                    Duration.ofMillis(1_500), run + "-younger-ejb", ejbHolds, ejbName + "-older-first"),
                    "the commit of an EJB method whose lease an older transaction broke");
            olderOfEjb.get(60, TimeUnit.SECONDS);

            String utName = "account/" + run + "-wounded-ut";
            CountDownLatch utHolds = new CountDownLatch(1);
            Future<Lease> olderOfUt = olderBreaks(executor, f, utName, run + "-older-ut", utHolds);
            UserTransaction ut = Lookups.userTransaction();
            Exception fromUt;
            ut.begin();
            try {
                try (LeaseConnection c = f.getConnection()) {
                    c.acquire(LeaseOptions.of(utName).leaseFor(Duration.ofMillis(1_500)));
                    c.append(bytes(run + "-younger-ut"));
                    utHolds.countDown();
                    // Waits for the older one's lease, which it gets once the older one committed.
                    c.acquire(LeaseOptions.of(utName + "-older-first"));
                }
                fromUt = assertThrows(RollbackException.class, ut::commit,
                        "the commit of a transaction whose lease an older transaction broke");
            } finally {
                Lookups.rollbackIfActive(ut);
            }
            olderOfUt.get(60, TimeUnit.SECONDS);

            for (Exception failed : List.of(fromEjb, fromUt)) {
                List<String> chain = ServerLog.chain(failed);
                System.out.println("broken lease: the application got " + String.join("\n  caused by ", chain));
            }
            List<String> logged = serverLog.lines("LEASEHOLD-4208", run + "-wounded-");
            System.out.println("broken lease: the server logged " + logged);
            for (String name : List.of(ejbName, utName)) {
                // Said when the transaction completes, not only as a vote at prepare.
                assertTrue(logged.stream().anyMatch(l -> l.contains("the transaction of") && l.contains(name)
                        && l.contains("rolls back") && l.contains("was broken at") && l.contains("older requester")),
                        () -> "no LEASEHOLD-4208 line with the reason for " + name + " among "
                                + serverLog.lines("LEASEHOLD-4208"));
            }
            for (Exception failed : List.of(fromEjb, fromUt)) {
                List<String> chain = ServerLog.chain(failed);
                assertTrue(chain.stream().anyMatch(m -> m.startsWith(LeaseLostException.class.getName() + ": ")
                        && m.contains("was broken at") && m.contains("older requester")),
                        () -> "the application's exception does not say why the transaction rolled back: " + chain);
            }
        }
        LogChecker.Result r = stored();
        storedOnce(r, run + "-older-ejb");
        storedOnce(r, run + "-older-ut");
        assertEquals(List.of(), Stored.startingWith(r, run + "-younger"), "nothing of the younger ones was written");
    }

    /**
     * Starts, on {@code executor}, an older transaction: it enlists a connection of {@code f} (its age is taken there)
     * and takes {@code name + "-older-first"}, waits until {@code youngerHolds} opens, takes {@code name} (it waits
     * until the younger transaction waits for {@code name + "-older-first"}, then breaks its tentative lease), appends
     * {@code text} and commits. Returns once the older transaction holds its first lease.
     */
    private static Future<Lease> olderBreaks(ManagedExecutorService executor, LeaseConnectionFactory f, String name,
            String text, CountDownLatch youngerHolds) throws InterruptedException {
        CountDownLatch olderStarted = new CountDownLatch(1);
        Future<Lease> older = executor.submit(() -> {
            UserTransaction ut = Lookups.userTransaction();
            ut.begin();
            try {
                Lease l;
                try (LeaseConnection c = f.getConnection()) {
                    c.acquire(LeaseOptions.of(name + "-older-first"));
                    olderStarted.countDown();
                    if (!youngerHolds.await(60, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the younger transaction never took its lease");
                    }
                    l = c.acquire(name); // wound-wait, once the younger one waits: breaks its tentative lease
                    c.append(bytes(text));
                }
                ut.commit();
                return l;
            } finally {
                Lookups.rollbackIfActive(ut);
            }
        });
        assertTrue(olderStarted.await(60, TimeUnit.SECONDS), "the older transaction never started");
        return older;
    }
}
