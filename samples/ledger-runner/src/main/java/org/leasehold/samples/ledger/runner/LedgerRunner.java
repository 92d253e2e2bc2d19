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
 * application to replay and check the whole log, and stops the server.
 */
@Command(name = "ledger-runner", mixinStandardHelpOptions = true,
        description = "Runs the Leasehold ledger sample on Payara Micro and checks the balances.")
public final class LedgerRunner implements Callable<Integer> {

    @Option(names = "--sample-dir", required = true,
            description = "Directory holding payara-micro.jar, leasehold.rar and ledger.war (the build puts them in "
                    + "samples/ledger-runner/target/sample); runs are written under it.")
    Path sampleDir;

    @Option(names = "--accounts", defaultValue = "16", description = "Accounts (default ${DEFAULT-VALUE}).")
    int accounts;

    @Option(names = "--threads", defaultValue = "16", description = "Concurrent clients (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--duration", defaultValue = "PT8S", description = "Workload duration (default ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--opening-balance", defaultValue = "1000", description = "Each account's opening balance.")
    long openingBalance;

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
        if (accounts < 2 || threads < 1 || duration.isNegative() || duration.isZero()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "need at least 2 accounts, 1 thread and a positive duration");
        }
        Path run = sampleDir.resolve("run-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        try (PayaraMicro server = PayaraMicro.start(sampleDir, run, freePort(), startupTimeout, out)) {
            return drive(server);
        }
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
        out.printf("Adapter: %d lease acquisitions (wait p50 %d us, p99 %d us, max %d us), %d prepares, %d commits "
                + "(p99 %d us), %d read-only, %d rollbacks, %d heuristic, %d messages written, %d renewals%n",
                stats.path("Acquires").asLong(), stats.path("AcquireWaitP50Micros").asLong(),
                stats.path("AcquireWaitP99Micros").asLong(), stats.path("AcquireWaitMaxMicros").asLong(),
                stats.path("Prepares").asLong(), stats.path("Commits").asLong(), stats.path("CommitP99Micros").asLong(),
                stats.path("ReadOnlyBranches").asLong(), stats.path("Rollbacks").asLong(),
                stats.path("HeuristicRollbacks").asLong() + stats.path("HeuristicCommits").asLong()
                        + stats.path("HeuristicHazards").asLong(),
                stats.path("MessagesWritten").asLong(), stats.path("Renewals").asLong());

        String metrics = get(http, server.baseUri() + "/metrics");
        String published = metrics.lines().filter(l -> l.startsWith("leasehold_commits")).findFirst()
                .orElse("(no leasehold_commits gauge)");
        out.println("MicroProfile Metrics (/metrics): " + published);

        JsonNode check = json.readTree(get(http, base + "/check"));
        long expected = (long) accounts * openingBalance;
        boolean ok = check.path("ok").asBoolean() && check.path("total").asLong() == expected
                && check.path("messages").asLong() == accounts + done.get() && failed.get() == 0 && done.get() > 0;
        out.printf("Log: %d messages (%d in buckets not sealed yet); balances rebuilt from the log add up to %d "
                + "(opened %d)%n", check.path("messages").asLong(), check.path("tentativeMessages").asLong(),
                check.path("total").asLong(), expected);
        if (ok) {
            out.println("Check: every committed transfer is in the log once, money is conserved, no account went "
                    + "below zero, each account's entries are in lease order: OK");
            return 0;
        }
        out.println("Check FAILED: " + check.path("problems") + (check.path("messages").asLong() != accounts + done.get()
                ? " (the log holds " + check.path("messages").asLong() + " messages, expected " + (accounts + done.get())
                        + ")" : "") + (done.get() == 0 ? " (no transfer committed)" : ""));
        return 1;
    }

    private static String get(HttpClient http, String uri) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri)).timeout(Duration.ofSeconds(120))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET " + uri + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    private static void post(HttpClient http, String uri) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(uri))
                .POST(HttpRequest.BodyPublishers.noBody()).timeout(Duration.ofSeconds(60)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("POST " + uri + " answered " + r.statusCode() + ": " + r.body());
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
