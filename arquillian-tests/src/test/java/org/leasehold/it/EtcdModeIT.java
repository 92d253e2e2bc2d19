package org.leasehold.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.jboss.shrinkwrap.api.ShrinkWrap;
import org.jboss.shrinkwrap.api.asset.EmptyAsset;
import org.jboss.shrinkwrap.api.exporter.ZipExporter;
import org.jboss.shrinkwrap.api.spec.WebArchive;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.etcd.EtcdCluster;
import org.leasehold.it.app.ParentWatchdog;
import org.leasehold.it.check.JournalReader;
import org.leasehold.it.check.Stored;
import org.leasehold.it.crash.CrashEjb;
import org.leasehold.it.crash.CrashGate;
import org.leasehold.it.crash.CrashServlet;
import org.leasehold.it.crash.ModeServlet;
import org.leasehold.store.check.LogChecker;

/**
 * The adapter in etcd mode on Payara Micro, as users deploy it: {@code leasehold-etcd.rar} with
 * {@code LeaseService=etcd:http://127.0.0.1:<port>?prefix=<unique>/} against a one-member etcd this test starts on
 * loopback (the etcd module's {@link EtcdCluster}), and the crash test's application. One boot sequence of two
 * servers on one persistent domain checks what embedded mode's tests check: a commit writes its message once and
 * releases its lease with a watermark (the next grant's floor is the message's timestamp); a rollback writes nothing
 * and releases the lease without one; the health text names etcd and its endpoints, never lease servers; a bad
 * specification fails the connection factory with the part that is wrong; an etcd that does not answer makes the
 * factory not ready with a text that says so. Then transactions stopped between the adapter's prepare and its
 * commit die with the server ({@code kill -9}); the restarted server takes their leases back from etcd, which held
 * them in doubt, and commits each message exactly once, with its database row; and the next grant of a name
 * continues from the state etcd kept across the restart.
 */
class EtcdModeIT {
    private static final String LOG = "crash";
    private static final String WRITER = "etcd-it";
    private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(120);

    private static EtcdCluster etcd;
    private static Path micro;
    private static Path dir;
    private static Path store;
    private static Path markers;
    private static Path war;
    private static Path postboot;
    private static Duration startup;
    private static String endpoint;
    private static String prefix;
    private static int silentPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<String> report = new ArrayList<>();
    private int boots;

    @BeforeAll
    static void prepare() throws IOException {
        micro = Path.of(property("leasehold.it.micro.dir"));
        dir = Path.of(property("leasehold.it.etcd.dir"));
        startup = Duration.ofSeconds(Long.parseLong(property("leasehold.it.etcd.startupTimeout")));
        store = dir.resolve("store");
        markers = dir.resolve("markers");
        Files.createDirectories(store);
        Files.createDirectories(markers);
        etcd = EtcdCluster.start("payara", 1);
        endpoint = etcd.endpoints().get(0).toString();
        prefix = "it-" + Lookups.uid() + "/";
        // Nothing listens there: the factory of an etcd that does not answer.
        silentPort = ServerProcess.freePort();
        war = dir.resolve("etcd-mode.war");
        ShrinkWrap.create(WebArchive.class, "etcd-mode.war")
                .addClasses(CrashEjb.class, CrashGate.class, CrashServlet.class, ModeServlet.class, ParentWatchdog.class)
                .addAsWebInfResource(EmptyAsset.INSTANCE, "beans.xml")
                .as(ZipExporter.class).exportTo(war.toFile(), true);
        postboot = dir.resolve("etcd-postboot.asadmin");
        Files.writeString(postboot, String.join("\n",
                "deploy --name leasehold " + micro.resolve("leasehold-etcd.rar"),
                pool("leasehold-etcd", CrashEjb.FACTORY, LOG, WRITER, "etcd:" + endpoint + "?prefix=" + prefix,
                        ":MaxLeaseMillis=3000:GraceMillis=500:MaxClockErrorMillis=100:BucketMillis=100"
                                + ":MinTimeLeftAtPrepareMillis=500"),
                pool("leasehold-etcd-bad", "eis/leasehold/etcd-bad", "bad", "etcd-bad",
                        "etcd:" + etcd.endpoints().get(0).getAuthority() + "?tsl=true", ""),
                pool("leasehold-etcd-silent", "eis/leasehold/etcd-silent", "silent", "etcd-silent",
                        "etcd:127.0.0.1:" + silentPort + "?callTimeout=1s", ""),
                "create-jdbc-connection-pool --datasourceclassname org.h2.jdbcx.JdbcDataSource --restype "
                        + "javax.sql.XADataSource --steadypoolsize 0 --property url=" + escape("jdbc:h2:" + dir.resolve(
                                "h2/crash")) + ":user=sa:password=sa leasehold-crash-h2",
                "create-jdbc-resource --connectionpoolid leasehold-crash-h2 " + CrashEjb.DATABASE, ""),
                StandardCharsets.UTF_8);
    }

    /** The asadmin commands of one connection definition in etcd mode, its property values escaped for asadmin. */
    private static String pool(String pool, String jndi, String log, String writer, String leaseService, String more) {
        return "create-connector-connection-pool --raname leasehold --connectiondefinition "
                + "org.leasehold.connector.LeaseConnectionFactory --transactionsupport XATransaction --steadypoolsize 0 "
                + "--property BagStoreRoot=" + escape(store.toString()) + ":Log=" + log + ":WriterId=" + writer
                + ":LeaseService=" + escape(leaseService) + more + " " + pool + "\n"
                + "create-connector-resource --poolname " + pool + " " + jndi;
    }

    /** asadmin separates properties with {@code :} and names from values with {@code =}: both escaped in a value. */
    private static String escape(String value) {
        return value.replace(":", "\\:").replace("=", "\\=");
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    private static String property(String name) {
        String v = System.getProperty(name);
        if (v == null) {
            throw new IllegalStateException("the system property " + name + " is not set: run the tests through Maven");
        }
        return v;
    }

    /**
     * Payara Micro on a persistent domain (the crash test's server settings, automatic recovery on) with the etcd
     * flavour of the adapter, its connection definitions and the database defined after boot, and the test application.
     */
    private ServerProcess boot() throws Exception {
        boots++;
        Path log = dir.resolve("server-" + boots + ".log");
        List<String> jvm = new ArrayList<>(Arrays.asList(property("leasehold.it.micro.jvm").trim().split("\\s+")));
        jvm.add("-Dleasehold.crash.markers=" + markers);
        List<String> options = List.of("--rootdir", dir.resolve("domain").toString(),
                "--addLibs", micro.resolve("h2.jar").toString(),
                "--prebootcommandfile", micro.resolve("crash-preboot.asadmin").toString(),
                "--postbootcommandfile", postboot.toString(),
                "--deploy", war.toString());
        ServerProcess m = MicroProcess.start(micro.resolve("payara-micro.jar"), dir, log, jvm, options, startup);
        report.add(String.format("boot %d: ready in %d ms (server), %d ms from launch", boots, m.readyMillis(),
                m.wallMillis()));
        return m;
    }

    private String get(ServerProcess m, String path) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + m.port() + "/etcd-mode/" + path))
                .timeout(Duration.ofSeconds(120)).build();
        return http.send(r, HttpResponse.BodyHandlers.ofString()).body();
    }

    private String status(ServerProcess m, String factory) throws Exception {
        return get(m, "status?factory=" + URLEncoder.encode(factory, StandardCharsets.UTF_8));
    }

    /** One grant as the application saw it. */
    private record Grant(long generation, long floorMicros) {
    }

    /** Writes {@code text} under the lease {@code name} in one transaction; it must commit. */
    private Grant commit(ServerProcess m, String name, String text) throws Exception {
        String answer = get(m, "lease?name=" + name + "&text=" + text);
        assertTrue(answer.startsWith("committed "), () -> text + ": " + answer + "; see " + m.log());
        String[] parts = answer.split(" ");
        assertEquals(1, Stored.withText(stored(), text).size(), () -> text + " should be stored exactly once");
        return new Grant(Long.parseLong(parts[1]), Long.parseLong(parts[2]));
    }

    private static LogChecker.Result stored() throws IOException {
        LogChecker.Result r = Stored.log(store, LOG);
        assertEquals(List.of(), r.violations(), "the log breaks the format");
        return r;
    }

    private static long timestamp(String text) throws IOException {
        List<LogChecker.Msg> found = Stored.withText(stored(), text);
        assertEquals(1, found.size(), () -> text + " should be stored exactly once: " + found);
        return found.get(0).timestamp();
    }

    private static JournalReader.Journal journal() throws IOException {
        return JournalReader.read(JournalReader.dir(store, LOG, WRITER));
    }

    private static JournalReader.Branch branch(JournalReader.Journal j, String text) {
        List<JournalReader.Branch> b = j.promising(text);
        assertTrue(b.size() <= 1, () -> "more than one branch promised " + text + ": " + b);
        return b.isEmpty() ? null : b.get(0);
    }

    @Test
    void commitsRollsBackAndRecoversAsInEmbeddedModeAndSaysEtcd() throws Exception {
        String run = Lookups.uid();
        String name = "account/" + run;
        long started = System.nanoTime();
        try {
            List<String> crash = List.of(run + "-k0", run + "-k1");
            Grant beforeCrash;
            try (ServerProcess m = boot()) {
                String health = status(m, CrashEjb.FACTORY);
                report.add("status: " + health);
                assertTrue(health.contains("leaseService=etcd:" + endpoint + "?prefix=" + prefix), health);
                assertTrue(health.contains("name=leases, up=true, detail=etcd at " + endpoint + " answers"), health);
                assertTrue(health.contains("name=clocks, up=true, detail=nothing to compare: etcd keeps no clock"),
                        health);
                assertFalse(health.contains("lease server"), health);

                // Commit: each message once; the lease is released with a watermark, so the next grant of the
                // name comes at once, from a floor that is the previous message's timestamp.
                Grant first = commit(m, name, run + "-c1");
                Grant second = commit(m, name, run + "-c2");
                assertTrue(second.generation() > first.generation(), "generations increase");
                assertEquals(timestamp(run + "-c1"), second.floorMicros(), "the floor is the last commit's watermark");

                // Rollback: nothing written, nothing prepared, the lease released without a watermark.
                String rolledBack = get(m, "lease?name=" + name + "&text=" + run + "-r&fail=true");
                assertTrue(rolledBack.startsWith("rolled back:") && rolledBack.contains("forced failure"), rolledBack);
                beforeCrash = commit(m, name, run + "-c3");
                assertEquals(timestamp(run + "-c2"), beforeCrash.floorMicros(), "a rollback publishes no watermark");
                assertEquals(List.of(), Stored.withText(stored(), run + "-r"), "the rolled back message");
                assertTrue(journal().promising(run + "-r").isEmpty(), "a rollback before prepare journals nothing");

                // A bad specification: the connection factory fails with the part that is wrong.
                String bad = status(m, "eis/leasehold/etcd-bad");
                report.add("bad specification: " + bad);
                assertTrue(bad.contains("could not be set up: etcd option is tsl; known options are prefix, user, "
                        + "password, tls"), bad);
                assertTrue(m.logLines("LEASEHOLD-4008").stream().anyMatch(l -> l.contains("etcd option is tsl")),
                        "the server log says why: " + m.logLines("LEASEHOLD-4008"));

                // An etcd that does not answer: not ready, and the text and the log say which etcd.
                String silent = status(m, "eis/leasehold/etcd-silent");
                report.add("silent etcd: " + silent);
                assertTrue(silent.contains("name=leases, up=false, detail=etcd at 127.0.0.1:" + silentPort
                        + " does not answer ("), silent);
                assertFalse(silent.contains("lease server"), silent);
                assertTrue(m.logLines("LEASEHOLD-4701").stream().anyMatch(l -> l.contains("etcd at 127.0.0.1:"
                        + silentPort + " does not answer")), "logged: " + m.logLines("LEASEHOLD-4701"));

                // Two transactions stop in the commit phase (the gate before and after the adapter's branch), and
                // the server dies with them.
                startGated(m, crash, List.of(true, false));
                awaitMarkers(crash, m);
                assertEquals(137, m.kill(), "SIGKILL");
                int inDoubt = 0;
                for (String t : crash) {
                    JournalReader.Branch b = branch(journal(), t);
                    int copies = Stored.withText(stored(), t).size();
                    report.add(String.format("%s at the crash: adapter branch %s, message stored %d time(s)", t,
                            b == null ? "not prepared" : b.state(), copies));
                    if (b != null && b.state() == JournalReader.Type.PREPARED && copies == 0) {
                        inDoubt++;
                    }
                }
                assertTrue(inDoubt > 0, "no crash landed between the adapter's prepare and its commit");
            }
            try (ServerProcess m = boot()) {
                awaitResolved(crash);
                JournalReader.Journal j = journal();
                for (String t : crash) {
                    List<JournalReader.Type> types = branch(j, t).records().stream().map(JournalReader.Record::type)
                            .toList();
                    report.add(t + " after recovery: journal " + types);
                    assertEquals(JournalReader.Type.COMMITTED, types.get(types.size() - 1), () -> t + ": " + types
                            + "; see " + m.log());
                    assertEquals(1, Stored.withText(stored(), t).size(), () -> t + ": committed exactly once");
                    assertEquals("1", get(m, "rows?text=" + t).trim(), () -> t + ": its row committed too");
                }
                assertFalse(m.logLines("LEASEHOLD-4012").isEmpty(), "recovery took the leases back from etcd: see "
                        + m.log());
                // The name's state outlived the server in etcd: the next grant continues from the last watermark.
                Grant after = commit(m, name, run + "-after");
                assertTrue(after.generation() > beforeCrash.generation(), "generations increase across the restart");
                assertEquals(timestamp(run + "-c3"), after.floorMicros(), "the floor is the last watermark before");
            }
        } finally {
            report.add(String.format("total %d s for %d boots", (System.nanoTime() - started) / 1_000_000_000L, boots));
            System.out.println(String.join("\n", report));
        }
    }

    /** Starts transactions that stop at the gate in the commit phase; the server dies with them. */
    private void startGated(ServerProcess m, List<String> texts, List<Boolean> gateFirst) {
        for (int i = 0; i < texts.size(); i++) {
            String q = "tx?text=" + texts.get(i) + "&gate=" + CrashGate.Phase.COMMIT + "&gateFirst=" + gateFirst.get(i)
                    + "&expected=" + texts.size() + "&halt=false";
            http.sendAsync(HttpRequest.newBuilder(URI.create(
                    "http://127.0.0.1:" + m.port() + "/etcd-mode/" + q)).timeout(Duration.ofSeconds(300)).build(),
                    HttpResponse.BodyHandlers.ofString());
        }
    }

    private static void awaitMarkers(List<String> texts, ServerProcess m) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        while (!texts.stream().allMatch(t -> Files.exists(markers.resolve(t)))) {
            if (System.nanoTime() > deadline) {
                fail("the transactions " + texts + " did not all reach the gate; see " + m.log());
            }
            Thread.sleep(200);
        }
    }

    /** Waits until recovery decided every branch still prepared. */
    private static void awaitResolved(List<String> texts) throws Exception {
        long deadline = System.nanoTime() + RESOLVE_TIMEOUT.toNanos();
        while (true) {
            JournalReader.Journal j = journal();
            List<String> open = texts.stream().filter(t -> {
                JournalReader.Branch b = branch(j, t);
                return b != null && b.state() == JournalReader.Type.PREPARED;
            }).toList();
            if (open.isEmpty()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                fail("recovery left " + open + " in doubt for " + RESOLVE_TIMEOUT.toSeconds() + " s");
            }
            Thread.sleep(500);
        }
    }
}
