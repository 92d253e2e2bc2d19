package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.naming.NamingException;

import jakarta.ejb.EJB;
import jakarta.enterprise.concurrent.ManagedExecutorService;
import jakarta.inject.Inject;
import jakarta.transaction.UserTransaction;

import org.jboss.arquillian.container.test.api.Deployment;
import org.jboss.arquillian.junit5.ArquillianExtension;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.it.app.AppDefinedLedger;
import org.leasehold.it.app.LeasedLedgerBean;
import org.leasehold.it.app.LeasedLedgerEjb;
import org.leasehold.it.app.OwnedLogLedger;
import org.leasehold.it.app.SessionEventRecorder;
import org.leasehold.it.app.TransferBatch;
import org.leasehold.it.check.Stored;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.SessionEvent;
import org.leasehold.store.check.LogChecker;

/**
 * The CDI integration on Payara Micro and on WildFly: {@code @Leased} on an EJB and on a {@code @Transactional} CDI
 * bean, with an injected {@code LeaseLog}. The application bundles only the leasehold-cdi jar; it finds the connection factory
 * through the MicroProfile Config property {@code leasehold.connection-factory}.
 */
@ExtendWith(ArquillianExtension.class)
class InjectionIT {
    private static final String LOG = "cdi";
    private static final String FACTORY = "eis/leasehold/cdi";
    private static final String APP_LOG = "app";
    /** The adapter's reason for refusing a second embedded owner of the log 'owned', up to the instant it lapses. */
    private static final Pattern REASON = Pattern.compile("the log 'owned' in .*? its ownership lapses at [0-9T:.-]+Z");

    @Inject
    private AppDefinedLedger appDefined;

    @Deployment
    static WebArchive app() {
        return Deployments.war("injection.war")
                .addClasses(LeasedLedgerEjb.class, LeasedLedgerBean.class, TransferBatch.class, SessionEventRecorder.class,
                        OwnedLogLedger.class)
                .addAsLibraries(Deployments.microFile("leasehold-cdi.jar"))
                .addClass(AppDefinedLedger.class)
                .addAsResource(new StringAsset("leasehold.connection-factory=" + FACTORY + "\n"),
                        "META-INF/microprofile-config.properties")
                .setWebXML(new StringAsset(webXml()));
    }

    /** A connection factory defined by the application itself, on the adapter deployed as 'leasehold'. */
    private static String webXml() {
        return "<web-app xmlns=\"https://jakarta.ee/xml/ns/jakartaee\" version=\"6.0\">\n"
                + "  <connection-factory>\n"
                + "    <name>" + LeaseConnectionFactory.DEFAULT_JNDI_NAME + "</name>\n"
                + "    <interface-name>" + LeaseConnectionFactory.class.getName() + "</interface-name>\n"
                + "    <resource-adapter>leasehold</resource-adapter>\n"
                + "    <transaction-support>XATransaction</transaction-support>\n"
                + "    <property><name>BagStoreRoot</name><value>" + Stored.itRoot() + "</value></property>\n"
                + "    <property><name>Log</name><value>" + APP_LOG + "</value></property>\n"
                + "    <property><name>WriterId</name><value>it-app</value></property>\n"
                + "  </connection-factory>\n"
                + "</web-app>\n";
    }

    @EJB
    private LeasedLedgerEjb ejb;
    @Inject
    private LeasedLedgerBean bean;
    @Inject
    private TransferBatch batch;
    @Inject
    private SessionEventRecorder recorder;
    @EJB
    private OwnedLogLedger owned;

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

    /** The one lease of a transfer, covering both accounts, taken inside the method's transaction. */
    private static Lease transferLease(List<Lease> held, String from, String to) {
        assertEquals(1, held.size(), () -> "leases held: " + held);
        Lease l = held.get(0);
        assertEquals(List.of("account/" + from, "account/" + to).stream().sorted().toList(), l.names());
        assertEquals(LeaseKind.TENTATIVE, l.kind(), "the interceptor must run inside the method's transaction");
        return l;
    }

    @Test
    void leasedMethodsOfAnEjbAndACdiBeanAppendUnderBothLeasesInLeaseOrder() throws Exception {
        String run = uid();
        String a = run + "-a";
        String b = run + "-b";
        Lease first = transferLease(ejb.transfer(a, b, 10), a, b);
        Lease second = transferLease(bean.transfer(b, a, 7, false), b, a);
        Lease third = transferLease(ejb.transfer(a, b, 3), a, b);

        LogChecker.Result r = stored();
        LogChecker.Msg m1 = storedOnce(r, "ejb " + a + "->" + b + " 10");
        LogChecker.Msg m2 = storedOnce(r, "cdi " + b + "->" + a + " 7");
        LogChecker.Msg m3 = storedOnce(r, "ejb " + a + "->" + b + " 3");
        List<Lease> leases = List.of(first, second, third);
        List<LogChecker.Msg> msgs = List.of(m1, m2, m3);
        for (int i = 0; i < 3; i++) {
            for (String account : List.of(a, b)) {
                String name = "account/" + account;
                assertEquals(leases.get(i).grant(name).generation(), msgs.get(i).generationOf(name));
                if (i > 0) {
                    assertTrue(msgs.get(i).timestamp() > msgs.get(i - 1).timestamp(), "lease order");
                    assertEquals(msgs.get(i - 1).timestamp(), micros(leases.get(i).grant(name).floor()),
                            "each transfer's floor is the previous transfer's watermark");
                }
            }
        }
        // Read back through the injected log, inside a @Leased method.
        assertEquals(List.of("ejb " + a + "->" + b + " 10", "cdi " + b + "->" + a + " 7", "ejb " + a + "->" + b + " 3"),
                bean.history(a));
    }

    @Test
    void aFailingTransactionalCdiMethodWritesNothing() throws Exception {
        String run = uid();
        String a = run + "-a";
        String b = run + "-b";
        IllegalStateException failed = assertThrows(IllegalStateException.class, () -> bean.transfer(a, b, 99, true));
        assertTrue(failed.getMessage().contains("forced failure"), failed.getMessage());
        bean.transfer(a, b, 1, false);

        LogChecker.Result r = stored();
        assertEquals(List.of(), Stored.withText(r, "cdi " + a + "->" + b + " 99"));
        storedOnce(r, "cdi " + a + "->" + b + " 1");
        assertEquals(List.of("cdi " + a + "->" + b + " 1"), bean.history(a));
    }

    @Test
    void twoLeasedCallsInOneTransactionCommitAndRollBackTogether() throws Exception {
        String run = uid();
        String a = run + "-a";
        String b = run + "-b";
        String c = run + "-c";
        assertThrows(IllegalStateException.class, () -> batch.twoTransfers(a, b, c, true));
        LogChecker.Result afterFailure = stored();
        assertEquals(List.of(), Stored.withText(afterFailure, "cdi " + a + "->" + b + " 1"));
        assertEquals(List.of(), Stored.withText(afterFailure, "cdi " + b + "->" + c + " 2"));

        List<List<Lease>> held = batch.twoTransfers(a, b, c, false);
        LogChecker.Result r = stored();
        LogChecker.Msg first = storedOnce(r, "cdi " + a + "->" + b + " 1");
        LogChecker.Msg second = storedOnce(r, "cdi " + b + "->" + c + " 2");
        // One transaction, one branch of the adapter: one frame, one timestamp, every lease of both calls.
        assertEquals(first.timestamp(), second.timestamp(), "one transaction is one frame");
        assertEquals(first.offset(), second.offset(), "one transaction is one frame");
        for (String account : List.of(a, b, c)) {
            assertTrue(first.generationOf("account/" + account) > 0, () -> "lease on " + account + " missing from "
                    + first.leases());
        }
        assertEquals(held.get(1).get(held.get(1).size() - 1).grant("account/" + c).generation(),
                first.generationOf("account/" + c));
        assertEquals(List.of("cdi " + a + "->" + b + " 1", "cdi " + b + "->" + c + " 2"), bean.history(b));
    }

    @Test
    void aLostLeaseIsObservedAsACdiEvent() throws Exception {
        LeaseConnectionFactory f = Lookups.lookup(FACTORY);
        String name = "account/" + uid() + "-observed";
        // Short leases, renewed every 500 ms, so that the renewer notices the break quickly.
        LeaseOptions shortLease = LeaseOptions.of(name).leaseFor(Duration.ofMillis(1_500));
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        CountDownLatch youngerHolds = new CountDownLatch(1);
        Future<?> older = olderBreaks(executor, f, shortLease, youngerHolds);
        UserTransaction ut = Lookups.userTransaction();
        ut.begin();
        try (LeaseConnection c = f.getConnection()) {
            Lease younger = c.acquire(shortLease);
            youngerHolds.countDown();
            // It waits for the older one's lease: a cycle of waits, which the older one breaks.
            c.acquire(LeaseOptions.of(name + "-older-first"));
            older.get(60, TimeUnit.SECONDS);
            List<SessionEvent> heard = heardAbout(name);
            System.out.println("cdi session events: " + heard);
            assertEquals(List.of(SessionEvent.Type.EXPIRED), heard.stream().map(SessionEvent::type).toList(),
                    "the observer bean heard the broken lease expire");
            assertEquals(younger.grant(name).generation(), heard.get(0).lease().grant(name).generation());
        } finally {
            Lookups.rollbackIfActive(ut);
        }
    }

    @Test
    void aLostLeaseOfAFactoryNamedInLeasedIsObservedToo() throws Exception {
        // AppDefinedLedger names the application's own factory in @Leased(factory = ...); the default factory of the
        // CDI integration is another (FACTORY). The bridge subscribes the named one at its first use.
        LeaseConnectionFactory f = Lookups.lookup(LeaseConnectionFactory.DEFAULT_JNDI_NAME);
        String account = uid() + "-named-factory";
        String name = "account/" + account;
        ManagedExecutorService executor = Lookups.lookup("java:comp/DefaultManagedExecutorService");
        CountDownLatch youngerHolds = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(1);
        Future<?> older = olderBreaks(executor, f, LeaseOptions.of(name), youngerHolds);
        Future<?> younger = executor.submit(() -> {
            appDefined.holdUntil(account, youngerHolds, done);
            return null;
        });
        try {
            older.get(60, TimeUnit.SECONDS);
            List<SessionEvent> events = heardAbout(name);
            System.out.println("cdi session events of the named factory: " + events);
            assertEquals(List.of(SessionEvent.Type.EXPIRED), events.stream().map(SessionEvent::type).toList(),
                    "the observer bean heard the broken lease, taken through @Leased(factory = ...), expire");
        } finally {
            done.countDown();
        }
        ExecutionException failed = assertThrows(ExecutionException.class, () -> younger.get(60, TimeUnit.SECONDS),
                "a @Leased transaction whose lease was broken does not commit");
        System.out.println("the younger @Leased method failed after its lease was broken: " + failed.getCause());
    }

    /**
     * Starts, on {@code executor}, a transaction that enlists a connection of {@code f} (its branch, and so its age,
     * starts there) and takes {@code <name>-older-first}, waits until {@code youngerHolds} opens, then acquires
     * {@code lease}: it waits until the younger holder waits for {@code <name>-older-first}, then breaks the younger
     * holder's lease (wound-wait), and commits. Returns once that older transaction holds its first lease.
     */
    private static Future<?> olderBreaks(ManagedExecutorService executor, LeaseConnectionFactory f, LeaseOptions lease,
            CountDownLatch youngerHolds) throws InterruptedException {
        CountDownLatch olderStarted = new CountDownLatch(1);
        Future<?> older = executor.submit(() -> {
            UserTransaction ut = Lookups.userTransaction();
            ut.begin();
            try {
                try (LeaseConnection c = f.getConnection()) {
                    c.acquire(LeaseOptions.of(lease.names().get(0) + "-older-first"));
                    olderStarted.countDown();
                    if (!youngerHolds.await(60, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the younger transaction never took its lease");
                    }
                    c.acquire(lease);
                }
                ut.commit();
            } finally {
                Lookups.rollbackIfActive(ut);
            }
            return null;
        });
        assertTrue(olderStarted.await(60, TimeUnit.SECONDS));
        return older;
    }

    /** The session events the observer bean heard about {@code name}, once there are any (or after 30 s). */
    private List<SessionEvent> heardAbout(String name) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (recorder.about(name).isEmpty() && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        return recorder.about(name);
    }

    @Test
    void appendsOutsideALeasedMethodFailClearly() throws Exception {
        String run = uid();
        ConnectorException fromCdi = assertThrows(ConnectorException.class,
                () -> bean.appendWithoutLeases(run + "-cdi-unleased"));
        ConnectorException fromEjb = assertThrows(ConnectorException.class,
                () -> ejb.appendWithoutLeases(run + "-ejb-unleased"));
        for (ConnectorException e : List.of(fromCdi, fromEjb)) {
            assertTrue(e.getMessage().contains("no @Leased method is running"), e.getMessage());
        }
        assertEquals(List.of(), Stored.startingWith(stored(), run), "nothing was written");
    }

    @Test
    void aLeaseNameFromANullArgumentFailsClearly() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> bean.touch(null));
        assertTrue(e.getMessage().contains("argument 0 is null"), e.getMessage());
    }

    @Test
    void aConnectionFactoryDefinedByTheApplicationWorks() throws Exception {
        String account = uid();
        assertEquals(APP_LOG, appDefined.logName(account));
        List<Lease> held = appDefined.deposit(account, 5);
        LogChecker.Result r = Stored.log(Stored.itRoot(), APP_LOG);
        assertEquals(List.of(), r.violations());
        LogChecker.Msg m = storedOnce(r, "deposit " + account + " 5");
        assertEquals(held.get(0).grant("account/" + account).generation(), m.generationOf("account/" + account));
        assertEquals(List.of(), Stored.withText(stored(), "deposit " + account + " 5"), "not in the pool's log");
    }

    /**
     * A second embedded-mode owner of a log: the server's factories {@link OwnedLogLedger#A} and {@link OwnedLogLedger#B}
     * are on the same store and log with different writers. The one whose runtime starts first owns the log (on Payara
     * the first used, A here; on WildFly the first the server creates when the adapter starts); the other is exactly in
     * the state of a second server on that log. A {@code @Leased} call and a direct connection through it fail with the
     * owner and when its ownership lapses (not a hint to define a factory), and the server log says the same
     * ({@code LEASEHOLD-4008}).
     */
    @Test
    void aSecondEmbeddedOwnerOfALogSaysWhoOwnsItAndWhenThatLapses() throws Exception {
        String account = uid();
        Map<String, String> writers = Map.of(OwnedLogLedger.A, "it-owned-a", OwnedLogLedger.B, "it-owned-b");
        List<String> owners = new ArrayList<>();
        try (ServerLog serverLog = ServerLog.capture()) {
            Map<String, Exception> refused = new HashMap<>();
            for (String name : List.of(OwnedLogLedger.A, OwnedLogLedger.B)) {
                // Payara creates the factory at its lookup, which fails for the second owner; WildFly created it when
                // the adapter started, and the connection fails.
                try (LeaseConnection c = Lookups.<LeaseConnectionFactory>lookup(name).getConnection()) {
                    c.acquire("account/" + account);
                    c.append((name + " " + account).getBytes(StandardCharsets.UTF_8));
                    owners.add(name);
                } catch (Exception e) {
                    refused.put(name, e);
                }
            }
            assertEquals(1, owners.size(), () -> "exactly one of the two factories on the log owns it; owners " + owners
                    + ", refused " + refused);
            String second = refused.keySet().iterator().next();
            String owner = writers.get(owners.get(0));
            Exception direct = refused.get(second);
            Exception viaLeased = assertThrows(Exception.class, () -> {
                if (second.equals(OwnedLogLedger.A)) {
                    owned.depositThroughA(account, 1);
                } else {
                    owned.depositThroughB(account, 1);
                }
            }, "a @Leased call through the second owner's factory");
            System.out.println("second owner: " + owners.get(0) + " owns the log, " + second + " is refused");
            for (Exception failed : List.of(direct, viaLeased)) {
                List<String> chain = ServerLog.chain(failed);
                System.out.println("second owner: the application got " + String.join("\n  caused by ", chain));
                assertTrue(chain.stream().noneMatch(m -> m.contains("define one")), () -> "a JNDI hint instead of the "
                        + "reason: " + chain);
                // What the application reads in the exception's message. Only the lookup on Payara fails in the
                // server's own naming code, whose message is its own: there the reason is among the causes.
                String told = failed instanceof NamingException ? String.join("\n", chain) : failed.getMessage();
                assertTrue(told.contains("the log 'owned'") && told.contains("writer '" + owner + "'")
                        && told.contains("ownership lapses at"), () -> "the message does not say who owns the log and "
                        + "when that lapses: " + told);
                // The adapter's reason, as the server logged it: from the log's name to the instant it lapses.
                Matcher said = REASON.matcher(told);
                assertTrue(said.find(), told);
                String reason = said.group();
                List<String> logged = serverLog.lines("LEASEHOLD-4008", reason);
                assertTrue(!logged.isEmpty(), () -> "no LEASEHOLD-4008 line with '" + reason + "' among "
                        + serverLog.lines("LEASEHOLD-4008"));
            }
            System.out.println("second owner: the server logged " + serverLog.lines("LEASEHOLD-4008", "'owned'"));
        }
        LogChecker.Result r = Stored.log(Stored.itRoot(), "owned");
        assertEquals(List.of(), r.violations());
        assertEquals(1, Stored.withText(r, owners.get(0) + " " + account).size(), "the owner's message is stored");
        assertEquals(List.of(), Stored.withText(r, "owned-a " + account + " 1"), "the second owner wrote nothing");
        assertEquals(List.of(), Stored.withText(r, "owned-b " + account + " 1"), "the second owner wrote nothing");
    }

    @Test
    void theApiComesFromTheResourceAdapterNotTheApplication() throws Exception {
        ClassLoader app = Thread.currentThread().getContextClassLoader();
        ClassLoader api = LeaseConnectionFactory.class.getClassLoader();
        assertTrue(api != app, "the api must not be loaded from the application");
        Object factory = Lookups.lookup(FACTORY);
        assertTrue(factory instanceof LeaseConnectionFactory, () -> factory + " from " + factory.getClass()
                .getClassLoader() + " is not a LeaseConnectionFactory of " + api);
    }
}
