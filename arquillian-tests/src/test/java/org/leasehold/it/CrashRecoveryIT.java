package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.asset.StringAsset;
import org.jboss.shrinkwrap.api.exporter.ZipExporter;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.it.app.ParentWatchdog;
import org.leasehold.it.check.JournalReader;
import org.leasehold.it.check.Stored;
import org.leasehold.it.crash.CrashEjb;
import org.leasehold.it.crash.CrashGate;
import org.leasehold.it.crash.CrashServlet;
import org.leasehold.store.check.LogChecker;

/**
 * Invariant 7 on a real server: the server crashes while transactions over the database, the adapter and a test
 * resource are between prepare and commit; it restarts on the same configuration and transaction log (Payara Micro:
 * the same {@code --rootdir}, pools created with asadmin, automatic recovery on; WildFly: the same server directory,
 * the connection definition and the datasource in the server configuration with recovery credentials, periodic
 * recovery every 5 s), and every transaction must end committed (its message stored exactly once) or
 * rolled back (absent), never half, never twice, and never heuristically: in embedded mode the restarted server holds
 * the leases of the branches prepared at the crash again before it grants anything, so recovery can commit what the
 * transaction manager decided to commit. Judged from the stored data with the independent {@link LogChecker} and
 * {@link JournalReader}.
 *
 * <p>Three crashes: {@code Runtime.halt} with four transactions stopped in the commit phase (the test resource
 * enlisted before the adapter's connection in two of them, after it in the others); halt with two stopped in the
 * prepare phase after the adapter prepared; and SIGKILL with two stopped in the commit phase.
 */
class CrashRecoveryIT {
    private static final String LOG = "crash";
    private static final String WRITER = "crash";
    private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(120);

    private static Path micro;
    private static Path dir;
    private static Path store;
    private static Path markers;
    private static Path war;
    private static Duration startup;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<String> report = new ArrayList<>();
    private int boots;
    private boolean sawInDoubt;

    @BeforeAll
    static void prepare() throws IOException {
        micro = Path.of(property("leasehold.it.micro.dir"));
        dir = Path.of(property("leasehold.it.crash.dir"));
        startup = Duration.ofSeconds(Long.parseLong(property("leasehold.it.startupTimeout")));
        store = dir.resolve("store");
        markers = dir.resolve("markers");
        Files.createDirectories(store);
        Files.createDirectories(markers);
        war = dir.resolve("crash.war");
        ShrinkWrap.create(WebArchive.class, "crash.war")
                .addClasses(CrashEjb.class, CrashGate.class, CrashServlet.class, ParentWatchdog.class)
                .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml")
                .addAsWebInfResource(new StringAsset(Deployments.jbossWeb("eis/leasehold/crash", "jdbc/leasehold-crash")),
                        "jboss-web.xml")
                .setManifest(new StringAsset(Deployments.ADAPTER_DEPENDENCY))
                .as(ZipExporter.class).exportTo(war.toFile(), true);
    }

    private static String property(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            throw new IllegalStateException("the system property " + name + " is not set: run the tests through Maven");
        }
        return v;
    }

    private ServerProcess boot() throws Exception {
        boots++;
        Path log = dir.resolve("server-" + boots + ".log");
        ServerProcess m = Deployments.onWildFly() ? bootWildFly(log) : bootMicro(log);
        report.add(String.format("boot %d: ready in %d ms (server), %d ms from launch", boots, m.readyMillis(),
                m.wallMillis()));
        return m;
    }

    /** Payara Micro on a persistent domain ({@code --rootdir}); the pools come from the asadmin command files. */
    private ServerProcess bootMicro(Path log) throws Exception {
        List<String> jvm = new ArrayList<>(Arrays.asList(property("leasehold.it.micro.jvm").trim().split("\\s+")));
        jvm.add("-Dleasehold.crash.markers=" + markers);
        List<String> options = List.of("--rootdir", dir.resolve("domain").toString(),
                "--addLibs", micro.resolve("h2.jar").toString(),
                "--prebootcommandfile", micro.resolve("crash-preboot.asadmin").toString(),
                "--postbootcommandfile", micro.resolve("crash-postboot.asadmin").toString(),
                "--deploy", war.toString());
        return MicroProcess.start(micro.resolve("payara-micro.jar"), dir, log, jvm, options, startup);
    }

    /**
     * WildFly on a persistent server directory that the build configured with the adapter, its connection definition
     * and the database (so periodic recovery reaches them); the test application is in its deployments directory.
     * Periodic recovery runs every 5 s instead of every 2 minutes.
     */
    private ServerProcess bootWildFly(Path log) throws Exception {
        Path base = dir.resolve("wildfly");
        Files.copy(war, base.resolve("deployments").resolve("crash.war"), StandardCopyOption.REPLACE_EXISTING);
        List<String> jvm = new ArrayList<>(Arrays.asList(property("leasehold.it.wildfly.jvm").trim().split("\\s+")));
        jvm.add("-Dleasehold.crash.markers=" + markers);
        jvm.add("-DRecoveryEnvironmentBean.periodicRecoveryPeriod=5");
        jvm.add("-DRecoveryEnvironmentBean.recoveryBackoffPeriod=1");
        return WildFlyProcess.start(Path.of(property("leasehold.it.wildfly.home")), base, log, jvm, startup);
    }

    private String get(ServerProcess m, String path) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.port() + "/crash/" + path))
                .timeout(Duration.ofSeconds(120)).build();
        return http.send(r, HttpResponse.BodyHandlers.ofString()).body();
    }

    /** Starts transactions that stop at the gate; the server dies with them, so their responses never come. */
    private List<CompletableFuture<HttpResponse<String>>> startGated(ServerProcess m, List<String> texts,
            CrashGate.Phase phase, List<Boolean> gateFirst, boolean halt) {
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < texts.size(); i++) {
            String q = "tx?text=" + texts.get(i) + "&gate=" + phase + "&gateFirst=" + gateFirst.get(i) + "&expected="
                    + texts.size() + "&halt=" + halt;
            answers.add(http.sendAsync(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.port() + "/crash/" + q))
                    .timeout(Duration.ofSeconds(300)).build(), HttpResponse.BodyHandlers.ofString()));
        }
        return answers;
    }

    /** Waits for the server to halt; fails at once if a gated transaction answered (it never reached the gate). */
    private static int awaitHalt(ServerProcess m, List<CompletableFuture<HttpResponse<String>>> answers)
            throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (m.isAlive() && System.nanoTime() < deadline) {
            for (CompletableFuture<HttpResponse<String>> a : answers) {
                if (a.isDone() && !a.isCompletedExceptionally()) {
                    fail("a transaction answered '" + a.join().body() + "' instead of stopping at the gate; see "
                            + m.log());
                }
            }
            Thread.sleep(200);
        }
        if (!m.isAlive()) {
            return m.awaitExit(Duration.ofSeconds(10));
        }
        fail("the server did not halt within 120 s; see " + m.log());
        return -1;
    }

    private static LogChecker.Result stored() throws IOException {
        LogChecker.Result r = Stored.log(store, LOG);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        return r;
    }

    private static JournalReader.Journal journal() throws IOException {
        return JournalReader.read(JournalReader.dir(store, LOG, WRITER));
    }

    private static JournalReader.Branch branch(JournalReader.Journal j, String text) {
        List<JournalReader.Branch> b = j.promising(text);
        assertTrue(b.size() <= 1, () -> "more than one branch promised " + text + ": " + b);
        return b.isEmpty() ? null : b.get(0);
    }

    /** What the stored data say about each transaction while the server is down. */
    private Map<String, JournalReader.Branch> atCrash(String round, List<String> texts) throws IOException {
        JournalReader.Journal j = journal();
        LogChecker.Result r = stored();
        Map<String, JournalReader.Branch> out = new LinkedHashMap<>();
        for (String t : texts) {
            JournalReader.Branch b = branch(j, t);
            int copies = Stored.withText(r, t).size();
            assertTrue(copies <= 1, () -> t + " stored " + copies + " times");
            String state = b == null ? "not prepared" : b.state().toString();
            if (b != null && b.state() == JournalReader.Type.PREPARED && copies == 0) {
                sawInDoubt = true;
                state = "IN DOUBT (prepared, not written)";
            }
            report.add(String.format("%s: %s at the crash: adapter branch %s, message stored %d time(s), gate %s",
                    round, t, state, copies, Files.exists(markers.resolve(t)) ? "reached" : "not reached"));
            out.put(t, b);
        }
        return out;
    }

    /** Waits until recovery decided every branch that was prepared and undecided at the crash. */
    private static void awaitResolved(Map<String, JournalReader.Branch> atCrash) throws Exception {
        long deadline = System.nanoTime() + RESOLVE_TIMEOUT.toNanos();
        while (true) {
            JournalReader.Journal j = journal();
            List<String> open = new ArrayList<>();
            for (Map.Entry<String, JournalReader.Branch> e : atCrash.entrySet()) {
                JournalReader.Branch now = branch(j, e.getKey());
                if (now != null && now.state() == JournalReader.Type.PREPARED) {
                    open.add(e.getKey());
                }
            }
            if (open.isEmpty()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                fail("recovery left " + open + " in doubt for " + RESOLVE_TIMEOUT.toSeconds() + " s");
            }
            Thread.sleep(500);
        }
    }

    /** Checks that each transaction ended committed once or rolled back (reported if heuristic); never half. */
    private void verifyOutcomes(String round, ServerProcess m, List<String> texts) throws Exception {
        JournalReader.Journal j = journal();
        LogChecker.Result r = stored();
        for (String t : texts) {
            JournalReader.Branch b = branch(j, t);
            int copies = Stored.withText(r, t).size();
            int rows = Integer.parseInt(get(m, "rows?text=" + t).trim());
            List<JournalReader.Type> types = b == null ? List.of() : b.records().stream().map(JournalReader.Record::type)
                    .toList();
            String outcome;
            // Embedded mode: the restarted server holds the leases of every branch prepared at the crash again before
            // it grants anything, so recovery commits what the transaction manager decided to commit.
            assertTrue(!types.contains(JournalReader.Type.HEURISTIC_ROLLBACK) && !types.contains(
                    JournalReader.Type.HEURISTIC_COMMIT), () -> t + ": a heuristic outcome after a restart in doubt in "
                            + "embedded mode (journal " + types + "; see " + m.log() + ")");
            if (types.contains(JournalReader.Type.COMMITTED)) {
                assertEquals(1, copies, () -> t + ": a committed branch must be stored exactly once");
                assertEquals(1, rows, () -> t + ": committed branch, but the row is missing: half a transaction");
                assertTrue(!types.contains(JournalReader.Type.HEURISTIC_COMMIT), () -> t + ": " + types);
                outcome = "COMMITTED (message once, row committed; journal " + types + ")";
            } else {
                assertTrue(b == null || b.state() == JournalReader.Type.ROLLED_BACK, () -> t + ": ended " + types);
                assertEquals(0, copies, () -> t + ": rolled back, yet its message is stored");
                assertEquals(0, rows, () -> t + ": rolled back, yet its row is committed: half a transaction");
                outcome = "ROLLED BACK (nothing stored, no row; journal " + types + ")";
            }
            report.add(String.format("%s: %s after recovery: %s", round, t, outcome));
        }
    }

    /**
     * Commits one transaction, retrying while the restarted lease service waits out the previous run's leases (it
     * grants nothing until they are over).
     */
    private String commit(ServerProcess m, String text) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        String answer = get(m, "tx?text=" + text);
        while (answer.contains("LeaseServiceUnavailableException") && System.nanoTime() < deadline) {
            Thread.sleep(500);
            answer = get(m, "tx?text=" + text);
        }
        String last = answer;
        assertEquals("committed", answer, () -> "transaction " + text + " failed: " + last + "; see " + m.log());
        assertEquals(1, Stored.withText(stored(), text).size(), () -> text + " should be stored once");
        return answer;
    }

    private void awaitMarkers(List<String> texts, ServerProcess m) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!texts.stream().allMatch(t -> Files.exists(markers.resolve(t)))) {
            if (System.nanoTime() > deadline) {
                fail("the transactions " + texts + " did not all reach the gate; see " + m.log());
            }
            Thread.sleep(200);
        }
    }

    @Test
    void everyTransactionInDoubtAtACrashEndsCommittedOnceOrRolledBackAndReported() throws Exception {
        String run = Lookups.uid();
        long started = System.nanoTime();
        try {
            // Boot 1: a transaction commits, then four stop in the commit phase and the server halts.
            List<String> a = List.of(run + "-a0", run + "-a1", run + "-a2", run + "-a3");
            Map<String, JournalReader.Branch> crashA;
            try (ServerProcess m = boot()) {
                commit(m, run + "-warm");
                int code = awaitHalt(m, startGated(m, a, CrashGate.Phase.COMMIT, List.of(true, false, true, false), true));
                assertEquals(77, code, "the server should have halted in the gate");
                crashA = atCrash("halt in commit", a);
            }
            // Boot 2: recovery; then two stop in the prepare phase (after the adapter prepared) and it halts.
            List<String> b = List.of(run + "-b0", run + "-b1");
            Map<String, JournalReader.Branch> crashB;
            try (ServerProcess m = boot()) {
                awaitResolved(crashA);
                verifyOutcomes("halt in commit", m, a);
                commit(m, run + "-warm2");
                assertEquals(77, awaitHalt(m, startGated(m, b, CrashGate.Phase.PREPARE, List.of(false, false), true)),
                        "the server should have halted in the gate");
                crashB = atCrash("halt in prepare", b);
            }
            // Boot 3: recovery; then two stop in the commit phase and the test kills the server (kill -9).
            List<String> c = List.of(run + "-c0", run + "-c1");
            Map<String, JournalReader.Branch> crashC;
            try (ServerProcess m = boot()) {
                awaitResolved(crashB);
                verifyOutcomes("halt in prepare", m, b);
                commit(m, run + "-warm3");
                startGated(m, c, CrashGate.Phase.COMMIT, List.of(true, false), false);
                awaitMarkers(c, m);
                assertEquals(137, m.kill(), "SIGKILL");
                crashC = atCrash("kill -9 in commit", c);
            }
            // Boot 4: recovery; the server works as before.
            try (ServerProcess m = boot()) {
                awaitResolved(crashC);
                verifyOutcomes("kill -9 in commit", m, c);
                commit(m, run + "-after");
            }
            assertTrue(sawInDoubt, "no crash landed between the adapter's prepare and its commit");
        } finally {
            report.add(String.format("total %d s for %d boots", (System.nanoTime() - started) / 1_000_000_000L, boots));
            System.out.println(String.join("\n", report));
        }
    }
}
