package org.leasehold.samples.ledger.runner;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * Runs the ledger end to end on the embedded defaults: starts Payara Micro (127.0.0.1, a free port, everything under
 * the work directory) with the Leasehold resource adapter and a connection pool that sets only the bag store root,
 * deploys the ledger, opens accounts, drives concurrent transfers over HTTP, prints what happened, asks the
 * application to replay and check the whole log (and compare it with its balances view), and stops the server. Then
 * it starts the server again on the same bag store and checks that the restarted ledger's first transfer read its
 * balances from the view: the latest snapshot and the entries after it, not the whole log. With {@code --workload=bench} it runs the XA
 * benchmark instead ({@link XaBenchmark}): Leasehold beside PostgreSQL in the same server.
 */
@Command(name = "ledger-runner", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Runs the Leasehold ledger sample on Payara Micro and checks the balances (--workload=ledger, "
                + "the default), or the XA benchmark (--workload=bench).",
            "",
            "The benchmark: one JTA transaction per HTTP request (POST /ledger/api/bench/{leasehold|postgres}?key=K, "
                + "a @Stateless bean, container-managed transaction). Leasehold: one exclusive lease bench/K and one "
                + "256-byte message, through a connector pool of the adapter on the embedded defaults (log 'bench'). "
                + "PostgreSQL: SELECT ... FROM bench_lock WHERE k = ? FOR UPDATE plus one 256-byte INSERT into "
                + "bench_message, through an XA JDBC pool (org.postgresql.xa.PGXADataSource, jdbc/BenchPostgres). "
                + "For every workload (--bench-threads[i] clients over --bench-keys[i] keys): a warm-up of each side, "
                + "then --runs runs of each, alternating (the order flips every run), in one server process. It "
                + "prints tx/s, p50/p99/p99.9 latency of the HTTP round trip and of the server-side transaction "
                + "(HdrHistogram), CPU time per transaction of the server JVM, of PostgreSQL's processes (when local) "
                + "and of the client, errors, the ratios Leasehold/PostgreSQL, checks what each side stored against "
                + "what committed, and writes bench-results.json into the run directory. Without --pg-url, Leasehold "
                + "runs alone. samples/ledger-runner/bench/run-postgres-bench.sh installs and starts PostgreSQL on "
                + "loopback and runs this mode (see bench/README.md).",
            ""})
public final class LedgerRunner implements Callable<Integer> {

    /** What the runner does. */
    enum Workload { ledger, bench }

    @Option(names = "--sample-dir", required = true,
            description = "Directory holding payara-micro.jar, leasehold.rar and ledger.war (the build puts them in "
                    + "samples/ledger-runner/target/sample); runs are written under it.")
    Path sampleDir;

    @Option(names = "--workload", defaultValue = "ledger",
            description = "ledger: the sample's transfers and check; bench: the XA benchmark (default "
                    + "${DEFAULT-VALUE}).")
    Workload workload;

    @Option(names = "--accounts", defaultValue = "16", description = "Ledger: accounts (default ${DEFAULT-VALUE}).")
    int accounts;

    @Option(names = "--threads", defaultValue = "16",
            description = "Ledger: concurrent clients (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--duration",
            description = "Ledger: workload duration (default PT8S). Bench: one measured run (default PT20S).")
    Duration duration;

    @Option(names = "--bench-threads", split = ",", defaultValue = "16,16,1",
            description = "Bench: concurrent clients of each workload, comma-separated (default ${DEFAULT-VALUE}).")
    List<Integer> benchThreads;

    @Option(names = "--bench-keys", split = ",", defaultValue = "100000,4,100000",
            description = "Bench: keys of each workload, paired with --bench-threads by position; every transaction "
                    + "picks one at random. Many keys: uncontended; few: contended (default ${DEFAULT-VALUE}).")
    List<Integer> benchKeys;

    @Option(names = "--warmup", defaultValue = "PT20S",
            description = "Bench: warm-up of each side before each workload's runs, not reported (default "
                    + "${DEFAULT-VALUE}).")
    Duration warmup;

    @Option(names = "--runs", defaultValue = "3",
            description = "Bench: measured runs of each side per workload (default ${DEFAULT-VALUE}).")
    int runs;

    @Option(names = "--bench-empty",
            description = "Bench: also measure the floor, the same HTTP and EJB path with a JTA transaction that "
                    + "enlists no resource (POST /ledger/api/bench/empty).")
    boolean benchEmpty;

    @Option(names = "--bench-lease-service", paramLabel = "SPEC",
            description = "Bench: the adapter's LeaseService for the Leasehold side (default: embedded), e.g. "
                    + "remote:127.0.0.1:PORT for a lease server started beforehand, to measure the adapter in remote "
                    + "mode as a fleet runs it.")
    String benchLeaseService;

    @Option(names = "--pg-url",
            description = "Bench: JDBC URL of the PostgreSQL baseline (jdbc:postgresql://127.0.0.1:PORT/DB); its "
                    + "bench_lock rows must exist (bench/postgres-schema.sql). Without it Leasehold runs alone.")
    String pgUrl;

    @Option(names = "--pg-user", defaultValue = "bench", description = "Bench: PostgreSQL user (default "
            + "${DEFAULT-VALUE}).")
    String pgUser;

    @Option(names = "--pg-password", defaultValue = "${env:PGPASSWORD:-}",
            description = "Bench: PostgreSQL password (default: the environment variable PGPASSWORD).")
    String pgPassword;

    @Option(names = "--pg-driver",
            description = "Bench: the PostgreSQL JDBC driver jar, added to the server's class path with --addLibs "
                    + "(default: postgresql.jar in the sample directory, where the build copies it).")
    Path pgDriver;

    @Option(names = "--server-jvm-option",
            description = "JVM option of the Payara Micro process; repeat for several. Default for the ledger: "
                    + "-Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData (quick start); for the "
                    + "benchmark: -Xms1g -Xmx1g -XX:-UsePerfData (the JVM's default GC and full JIT).")
    List<String> serverJvmOptions;

    @Option(names = "--opening-balance", defaultValue = "1000", description = "Each account's opening balance.")
    long openingBalance;

    @Option(names = "--no-restart",
            description = "Ledger: stop after the check instead of restarting the server and checking that its first "
                    + "transfer reads the balances from the view.")
    boolean noRestart;

    @Option(names = "--startup-timeout", defaultValue = "PT180S",
            description = "How long to wait for the server (default ${DEFAULT-VALUE}).")
    Duration startupTimeout;

    @Spec
    CommandSpec spec;

    private final PrintStream out;
    private final ObjectMapper json = new ObjectMapper();

    LedgerRunner(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new LedgerRunner(System.out)).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        for (String f : List.of("payara-micro.jar", "leasehold.rar", "ledger.war")) {
            if (!Files.isRegularFile(sampleDir.resolve(f))) {
                throw new CommandLine.ParameterException(spec.commandLine(), sampleDir.resolve(f) + " is missing: "
                        + "build first (mvn -Psample -DskipTests verify does both)");
            }
        }
        if (workload == Workload.bench) {
            return bench();
        }
        if (duration == null) {
            duration = Duration.ofSeconds(8);
        }
        if (accounts < 2 || threads < 1 || duration.isNegative() || duration.isZero()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "need at least 2 accounts, 1 thread and a positive duration");
        }
        Path run = sampleDir.resolve("run-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        PayaraMicro.Options options = PayaraMicro.Options.defaults();
        if (serverJvmOptions != null) {
            options = new PayaraMicro.Options(serverJvmOptions, List.of(), List.of());
        }
        long logged;
        Instant built;
        try (PayaraMicro server = PayaraMicro.start(sampleDir, run, freePort(), startupTimeout, options, out)) {
            int result = drive(server);
            if (result != 0 || noRestart) {
                return result;
            }
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            String base = server.baseUri() + "/ledger/api/ledger";
            // A snapshot folds the buckets that can be sealed: those older than the grace and the clock error. Right
            // after a short run none of the transfers may be in them yet; build again until the snapshot holds some.
            long buildUntil = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            JsonNode after;
            while (true) {
                built = Instant.parse(json.readTree(post(http, base + "/view/build")).path("snapshotBoundary").asText());
                after = json.readTree(get(http, base + "/check"));
                if (after.path("viewTailMessages").asLong() < after.path("messages").asLong()
                        || System.nanoTime() > buildUntil) {
                    break;
                }
                Thread.sleep(500);
            }
            logged = after.path("messages").asLong();
            out.printf("Published a snapshot of the balances view at %s; stopping the server%n", built);
        }
        try (PayaraMicro server = PayaraMicro.start(sampleDir, run, freePort(), startupTimeout, options, out)) {
            return afterRestart(server, built, logged);
        }
    }

    /**
     * The restarted server's first transfer (retried while the embedded lease service waits out the previous run's
     * leases) must have started the balances from the view: a snapshot at or after {@code built}, and only the entries
     * after it, fewer than the {@code logged} messages of the log.
     */
    private int afterRestart(PayaraMicro server, Instant built, long logged) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        String base = server.baseUri() + "/ledger/api/ledger";
        long until = System.nanoTime() + startupTimeout.toNanos();
        String outcome = "";
        int tries = 0;
        while (!outcome.equals("DONE") && !outcome.equals("DECLINED") && System.nanoTime() < until) {
            if (tries++ > 0) {
                Thread.sleep(500);
            }
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/transfer?from=0&to=1&amount=1"))
                    .POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(60)).build(),
                    HttpResponse.BodyHandlers.ofString());
            try {
                outcome = json.readTree(r.body()).path("outcome").asText("?");
            } catch (IOException e) {
                outcome = "?";
            }
        }
        JsonNode started = json.readTree(get(http, base + "/view"));
        JsonNode check = json.readTree(get(http, base + "/check"));
        String boundary = started.path("snapshotBoundary").asText(null);
        long tail = started.path("tailMessages").asLong();
        boolean fromView = started.path("started").asBoolean() && boundary != null
                && !Instant.parse(boundary).isBefore(built) && tail < logged;
        out.printf("Restarted: the first transfer (%s after %d tries) read the balances from the view: the snapshot at "
                + "%s plus %d entries after it, of the %d in the log: %s%n", outcome, tries, boundary, tail, logged,
                fromView ? "OK" : "NOT from the snapshot");
        boolean ok = fromView && check.path("ok").asBoolean() && check.path("viewMatches").asBoolean()
                && (outcome.equals("DONE") || outcome.equals("DECLINED"));
        out.printf("Check after the restart: %d messages; balances rebuilt from the log add up to %d and equal the "
                + "view's: %s%n", check.path("messages").asLong(), check.path("total").asLong(),
                ok ? "OK" : "FAILED " + check.path("problems"));
        return ok ? 0 : 1;
    }

    /** The XA benchmark: checks the options, starts the server with the benchmark's pools, runs it. */
    private int bench() throws Exception {
        XaBenchmark.Settings settings = benchSettings();
        Path driver = pgDriver != null ? pgDriver : sampleDir.resolve("postgresql.jar");
        if (pgUrl != null && !Files.isRegularFile(driver)) {
            throw new CommandLine.ParameterException(spec.commandLine(), driver + " is missing: build first (mvn -pl "
                    + "samples/ledger-runner -am package copies the PostgreSQL driver there) or give --pg-driver");
        }
        Path run = sampleDir.resolve("bench-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        Files.createDirectories(run);
        List<String> commands = new ArrayList<>(List.of(benchPoolCommand(run),
                "create-connector-resource --poolname BenchLeasePool leasehold/Bench"));
        List<Path> libs = new ArrayList<>();
        if (pgUrl != null) {
            libs.add(driver);
            commands.add("create-jdbc-connection-pool --datasourceclassname org.postgresql.xa.PGXADataSource "
                    + "--restype javax.sql.XADataSource --property " + pgProperties() + " BenchPostgresPool");
            commands.add("create-jdbc-resource --connectionpoolid BenchPostgresPool jdbc/BenchPostgres");
        }
        List<String> jvm = serverJvmOptions != null ? serverJvmOptions : List.of("-Xms1g", "-Xmx1g", "-XX:-UsePerfData");
        PayaraMicro.Options options = new PayaraMicro.Options(jvm, libs, commands);
        try (PayaraMicro server = PayaraMicro.start(sampleDir, run, freePort(), startupTimeout, options, out)) {
            out.printf("Server: pid %d, JVM options %s; client: this JVM, %d processors; Leasehold's LeaseService: %s%n",
                    server.pid(), jvm, Runtime.getRuntime().availableProcessors(),
                    benchLeaseService == null ? "embedded" : benchLeaseService);
            HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
            return new XaBenchmark(http, server.baseUri(), server.pid(), out).run(settings, run.resolve("bench-results.json"));
        }
    }

    /** The post-boot command that creates the adapter's pool of the Leasehold side, its store under {@code run}. */
    String benchPoolCommand(Path run) {
        return "create-connector-connection-pool --raname leasehold --connectiondefinition "
                + "org.leasehold.connector.LeaseConnectionFactory --transactionsupport XATransaction "
                + "--property BagStoreRoot=" + PayaraMicro.escape(PayaraMicro.bagStore(run).toString())
                + ":Log=bench" + (benchLeaseService == null ? ""
                        : ":LeaseService=" + PayaraMicro.escape(benchLeaseService)) + " BenchLeasePool";
    }

    /** The benchmark's settings from the options; a clear error for bad ones, before anything starts. */
    XaBenchmark.Settings benchSettings() {
        Duration d = duration != null ? duration : Duration.ofSeconds(20);
        if (benchLeaseService != null && !benchLeaseService.equals("embedded")
                && !benchLeaseService.matches("(remote|etcd):\\S+")) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--bench-lease-service '" + benchLeaseService
                    + "' is no LeaseService of the adapter: give embedded, remote:HOST:PORT[,...] or etcd:HOST:PORT");
        }
        if (benchThreads.size() != benchKeys.size()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--bench-threads has " + benchThreads.size()
                    + " value(s) and --bench-keys " + benchKeys.size() + ": give one key count per thread count");
        }
        List<XaBenchmark.Workload> workloads = new ArrayList<>();
        for (int i = 0; i < benchThreads.size(); i++) {
            if (benchThreads.get(i) < 1 || benchKeys.get(i) < 1) {
                throw new CommandLine.ParameterException(spec.commandLine(),
                        "every workload needs at least 1 client and 1 key");
            }
            workloads.add(new XaBenchmark.Workload(benchThreads.get(i), benchKeys.get(i)));
        }
        if (runs < 1 || d.isNegative() || d.isZero() || warmup.isNegative()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "need at least 1 run, a positive --duration and a --warmup of zero or more");
        }
        if (pgUrl != null && !pgUrl.startsWith("jdbc:postgresql:")) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--pg-url must be a PostgreSQL JDBC URL (jdbc:postgresql://HOST:PORT/DATABASE), not " + pgUrl);
        }
        return new XaBenchmark.Settings(workloads, warmup, d, runs, pgUrl != null, benchEmpty);
    }

    /** The XA datasource's properties, in asadmin's syntax. */
    private String pgProperties() {
        String p = "URL=" + PayaraMicro.escape(pgUrl) + ":user=" + PayaraMicro.escape(pgUser);
        return pgPassword == null || pgPassword.isEmpty() ? p : p + ":password=" + PayaraMicro.escape(pgPassword);
    }

    private int drive(PayaraMicro server) throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        String base = server.baseUri() + "/ledger/api/ledger";
        post(http, base + "/open?accounts=" + accounts + "&balance=" + openingBalance);
        out.printf("Opened %d accounts with %d each; %d clients transfer for %s...%n", accounts, openingBalance,
                threads, duration);

        AtomicLong done = new AtomicLong();
        AtomicLong declined = new AtomicLong();
        AtomicLong busy = new AtomicLong();
        AtomicLong rolledBack = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        Recorder latency = new Recorder(3);
        long end = System.nanoTime() + duration.toNanos();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<?>> clients = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            clients.add(pool.submit(() -> {
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                while (System.nanoTime() < end) {
                    int from = rnd.nextInt(accounts);
                    int to = (from + 1 + rnd.nextInt(accounts - 1)) % accounts;
                    long amount = 1 + rnd.nextInt(100);
                    long t0 = System.nanoTime();
                    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/transfer?from=" + from
                            + "&to=" + to + "&amount=" + amount)).POST(HttpRequest.BodyPublishers.noBody())
                            .timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
                    latency.recordValue(Math.max(1, (System.nanoTime() - t0) / 1_000));
                    String outcome = r.statusCode() < 600 ? json.readTree(r.body()).path("outcome").asText("?") : "?";
                    switch (outcome) {
                        case "DONE" -> done.incrementAndGet();
                        case "DECLINED" -> declined.incrementAndGet();
                        case "BUSY" -> busy.incrementAndGet();
                        case "ROLLED_BACK", "LOST" -> rolledBack.incrementAndGet();
                        default -> {
                            failed.incrementAndGet();
                            if (failed.get() <= 3) {
                                out.println("  unexpected answer " + r.statusCode() + ": " + r.body());
                            }
                        }
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : clients) {
            f.get();
        }
        pool.shutdown();
        Histogram h = latency.getIntervalHistogram();
        double seconds = duration.toMillis() / 1000.0;
        out.printf("Transactions: %d committed (%.0f/s), %d declined for funds, %d gave up waiting for a lease, "
                + "%d rolled back, %d failed%n", done.get(), done.get() / seconds, declined.get(), busy.get(),
                rolledBack.get(), failed.get());
        out.printf("Latency per transfer (HTTP round trip): p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
                h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0, h.getMaxValue() / 1000.0);

        JsonNode stats = json.readTree(get(http, base + "/stats"));
        long onePhase = stats.path("OnePhaseCommits").asLong();
        long twoPhase = stats.path("TwoPhaseCommits").asLong();
        long written = stats.path("MessagesWritten").asLong();
        long readOnly = stats.path("ReadOnlyBranches").asLong();
        out.printf("Adapter: %d lease acquisitions (wait p50 %.2f ms, p99 %.2f ms, max %.2f ms); %d commits that "
                + "wrote (%d one-phase, %d two-phase; commit p99 %.2f ms), %d read-only, %d rollbacks, %d heuristic; "
                + "%d messages written; %d renewals%n",
                stats.path("Acquires").asLong(), ms(stats.path("AcquireWaitP50Micros")),
                ms(stats.path("AcquireWaitP99Micros")), ms(stats.path("AcquireWaitMaxMicros")), onePhase + twoPhase,
                onePhase, twoPhase, ms(stats.path("CommitP99Micros")), readOnly, stats.path("Rollbacks").asLong(),
                stats.path("HeuristicRollbacks").asLong() + stats.path("HeuristicCommits").asLong()
                        + stats.path("HeuristicHazards").asLong(),
                written, stats.path("Renewals").asLong());
        // Every committed transfer and the opening of the accounts wrote one frame; declined transfers and those that
        // gave up waiting committed a transaction that wrote nothing.
        boolean reconciled = onePhase + twoPhase == done.get() + 1 && written == done.get() + accounts;
        out.printf("Reconciled: %d commits that wrote = %d transfers + 1 opening; %d messages = %d transfers + %d "
                + "opening entries; %d read-only = %d declined + %d that gave up waiting: %s%n", onePhase + twoPhase,
                done.get(), written, done.get(), accounts, readOnly, declined.get(), busy.get(),
                reconciled && readOnly == declined.get() + busy.get() ? "OK" : "they do NOT add up");

        String metrics = get(http, server.baseUri() + "/metrics");
        String published = metrics.lines().filter(l -> l.startsWith("leasehold_commits")).findFirst()
                .orElse("(no leasehold_commits gauge)");
        out.println("MicroProfile Metrics (/metrics): " + published);

        JsonNode check = json.readTree(get(http, base + "/check"));
        long expected = (long) accounts * openingBalance;
        boolean ok = check.path("ok").asBoolean() && check.path("total").asLong() == expected
                && check.path("messages").asLong() == accounts + done.get() && failed.get() == 0 && done.get() > 0
                && reconciled;
        out.printf("Log: %d messages (%d in buckets not sealed yet); balances rebuilt from the log add up to %d "
                + "(opened %d); the balances view (snapshot at %s plus %d entries) gives the same balances: %s%n",
                check.path("messages").asLong(), check.path("tentativeMessages").asLong(),
                check.path("total").asLong(), expected, check.path("viewSnapshotBoundary").asText("none"),
                check.path("viewTailMessages").asLong(), check.path("viewMatches").asBoolean() ? "OK" : "NO");
        if (ok) {
            out.println("Check: every committed transfer is in the log once, money is conserved, no account went "
                    + "below zero, each account's entries are in lease order: OK");
            return 0;
        }
        out.println("Check FAILED: " + check.path("problems") + (check.path("messages").asLong() != accounts + done.get()
                ? " (the log holds " + check.path("messages").asLong() + " messages, expected " + (accounts + done.get())
                        + ")" : "") + (done.get() == 0 ? " (no transfer committed)" : "")
                + (reconciled ? "" : " (the adapter's commits and messages do not match the transfers)"));
        return 1;
    }

    /** A figure the adapter gives in microseconds, in milliseconds. */
    private static double ms(JsonNode micros) {
        return micros.asLong() / 1000.0;
    }

    private static String get(HttpClient http, String uri) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri)).timeout(Duration.ofSeconds(120))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET " + uri + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    private static String post(HttpClient http, String uri) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri))
                .POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("POST " + uri + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
