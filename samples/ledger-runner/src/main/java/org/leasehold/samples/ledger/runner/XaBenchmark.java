package org.leasehold.samples.ledger.runner;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.HdrHistogram.Histogram;

/**
 * The XA benchmark: one exclusive lease plus one 256-byte message with Leasehold, beside the same operation done the
 * way applications do it today, a PostgreSQL row lock ({@code SELECT ... FOR UPDATE}) plus an insert, both in
 * container-managed JTA transactions of the same server, through the same HTTP endpoint and EJB path (the ledger's
 * {@code /api/bench}). For every workload (clients × keys) it warms both up, then alternates measured runs of the
 * two (the order flips every run) and reports transactions per second, latency percentiles of the HTTP round trip
 * and of the server-side transaction (HdrHistogram), errors, and the ratio Leasehold / PostgreSQL. At the end it
 * counts what each side stored (messages read back from the bag store, rows in PostgreSQL) against what committed.
 * It also measures the CPU time each transaction costs the processes that do the work (the server's JVM,
 * PostgreSQL's processes when they run on this machine, and the client): on a small shared machine that is steadier
 * than throughput, which other processes' load moves.
 *
 * <p>The clients are closed-loop: each sends its next request when the previous answer arrives, so the latencies
 * are those of a loaded server at the throughput it reached (no coordinated-omission correction is applied).
 */
final class XaBenchmark {

    /** The two ways of doing the operation. */
    enum Side {
        LEASEHOLD("Leasehold", "leasehold"),
        POSTGRES("PostgreSQL", "postgres"),
        /** The floor: the same path and a JTA transaction with no resource. */
        EMPTY("No resource", "empty");

        final String title;
        final String path;

        Side(String title, String path) {
            this.title = title;
            this.path = path;
        }
    }

    /** Concurrent clients, each picking a key uniformly at random among {@code keys} for every transaction. */
    record Workload(int threads, int keys) {
        String label() {
            return threads + (threads == 1 ? " client" : " clients") + ", " + keys + (keys == 1 ? " key" : " keys");
        }
    }

    /**
     * What to run.
     *
     * @param workloads the workloads, in order
     * @param warmup    warm-up per side and workload (not reported)
     * @param duration  one measured run
     * @param runs      measured runs per side and workload
     * @param postgres  whether the PostgreSQL side is configured (otherwise Leasehold runs alone)
     * @param empty     whether to measure the floor too: the same path with a transaction that enlists nothing
     */
    record Settings(List<Workload> workloads, Duration warmup, Duration duration, int runs, boolean postgres,
            boolean empty) {
        Settings {
            workloads = List.copyOf(workloads);
        }

        List<Side> sides() {
            List<Side> sides = new ArrayList<>(List.of(Side.LEASEHOLD));
            if (postgres) {
                sides.add(Side.POSTGRES);
            }
            if (empty) {
                sides.add(Side.EMPTY);
            }
            return sides;
        }

        int maxKeys() {
            return workloads.stream().mapToInt(Workload::keys).max().orElse(0);
        }
    }

    /** Outcomes after which the transaction certainly did not commit. */
    private static final List<String> NOT_COMMITTED = List.of("BUSY", "LOST", "ROLLED_BACK", "NOT_CONFIGURED");

    /** One run (or one client's part of it). */
    static final class Result {
        final Side side;
        final Workload workload;
        /** 1.. for measured runs, 0 for the warm-up. */
        final int run;
        long committed;
        double seconds;
        final Histogram http = new Histogram(3);
        final Histogram server = new Histogram(3);
        final Map<String, Long> errors = new TreeMap<>();
        final Map<String, String> examples = new TreeMap<>();
        /** CPU time spent during the run by the server's JVM, PostgreSQL's processes and the client (-1: unknown). */
        long serverCpuNanos = -1;
        long postgresCpuNanos = -1;
        long clientCpuNanos = -1;
        /** The machine's one-minute load average at the end of the run (other processes included), or -1. */
        double loadAverage = -1;

        Result(Side side, Workload workload, int run) {
            this.side = side;
            this.workload = workload;
            this.run = run;
        }

        double perSecond() {
            return seconds > 0 ? committed / seconds : 0;
        }

        long errorCount() {
            return errors.values().stream().mapToLong(Long::longValue).sum();
        }

        long unknownOutcomes() {
            return errors.entrySet().stream().filter(e -> !NOT_COMMITTED.contains(e.getKey()))
                    .mapToLong(Map.Entry::getValue).sum();
        }

        void error(String outcome, String reason) {
            errors.merge(outcome, 1L, Long::sum);
            examples.putIfAbsent(outcome, reason.length() > 300 ? reason.substring(0, 300) + "..." : reason);
        }

        /** CPU microseconds per committed transaction, or NaN. */
        double cpuMicrosPerTx(long nanos) {
            return nanos < 0 || committed == 0 ? Double.NaN : nanos / 1000.0 / committed;
        }

        void addCpu(Result r) {
            serverCpuNanos = sum(serverCpuNanos, r.serverCpuNanos);
            postgresCpuNanos = sum(postgresCpuNanos, r.postgresCpuNanos);
            clientCpuNanos = sum(clientCpuNanos, r.clientCpuNanos);
        }

        private static long sum(long a, long b) {
            return b < 0 ? a : Math.max(a, 0) + b;
        }

        void add(Result part) {
            committed += part.committed;
            http.add(part.http);
            server.add(part.server);
            part.errors.forEach((k, v) -> errors.merge(k, v, Long::sum));
            part.examples.forEach(examples::putIfAbsent);
        }
    }

    private final HttpClient http;
    private final URI base;
    private final ProcessHandle server;
    /** PostgreSQL's postmaster, when it runs on this machine and can be seen. */
    private ProcessHandle postmaster;
    private final PrintStream out;
    private final ObjectMapper json = new ObjectMapper();
    private final List<Result> results = new ArrayList<>();

    XaBenchmark(HttpClient http, URI serverBase, long serverPid, PrintStream out) {
        this.http = http;
        this.base = URI.create(serverBase + "/ledger/api/");
        this.server = ProcessHandle.of(serverPid).orElse(null);
        this.out = out;
    }

    /** Runs everything, prints the results, writes them as JSON to {@code resultsFile}; 0 if every check passed. */
    int run(Settings s, Path resultsFile) throws IOException, InterruptedException, ExecutionException {
        long leaseholdBefore = storedLeasehold();
        long postgresBefore = 0;
        Map<String, String> pgSettings = Map.of();
        if (s.postgres()) {
            JsonNode stored = getJson("bench/postgres/stored?keys=" + s.maxKeys());
            if (stored.path("lockRows").asLong() != s.maxKeys()) {
                out.printf("PostgreSQL's bench_lock has %d of the rows 0..%d the workloads need: create them first "
                        + "(samples/ledger-runner/bench/postgres-schema.sql; run-postgres-bench.sh does)%n",
                        stored.path("lockRows").asLong(), s.maxKeys() - 1);
                return 1;
            }
            postgresBefore = stored.path("messages").asLong();
            pgSettings = json.convertValue(getJson("bench/postgres/settings"),
                    json.getTypeFactory().constructMapType(TreeMap.class, String.class, String.class));
            out.println("PostgreSQL: " + pgSettings);
            postmaster = ProcessHandle.of(Long.parseLong(pgSettings.getOrDefault("backend_pid", "-1")))
                    .flatMap(ProcessHandle::parent).filter(p -> cpuNanos(p) >= 0).orElse(null);
            out.println(postmaster != null ? "PostgreSQL's processes: the postmaster (pid " + postmaster.pid()
                    + ") and its children, for CPU time" : "PostgreSQL's processes are not visible from here: its CPU "
                    + "time is not measured");
        } else {
            out.println("No --pg-url: Leasehold runs alone, without its PostgreSQL baseline.");
        }
        Duration perWorkload = s.warmup().plus(s.duration().multipliedBy(s.runs())).multipliedBy(s.sides().size());
        out.printf("%d workload(s); each: %s warm-up then %d run(s) of %s per side; about %s in all%n",
                s.workloads().size(), s.warmup(), s.runs(), s.duration(),
                perWorkload.multipliedBy(s.workloads().size()));

        for (Workload w : s.workloads()) {
            out.printf("%n== %s ==%n", w.label());
            for (Side side : s.sides()) {
                if (!s.warmup().isZero()) {
                    Result r = measure(side, w, s.warmup(), 0);
                    out.printf("  warm-up %-10s %8.1f tx/s%s%n", side.title, r.perSecond(), errorText(r));
                    results.add(r);
                }
            }
            for (int run = 1; run <= s.runs(); run++) {
                List<Side> order = new ArrayList<>(s.sides());
                if (run % 2 == 0) {
                    Collections.reverse(order);
                }
                for (Side side : order) {
                    Result r = measure(side, w, s.duration(), run);
                    results.add(r);
                    out.printf("  run %d %-10s %8.1f tx/s (%d in %.1f s); HTTP %s; server %s; CPU us/tx %s/%s/%s; "
                            + "load %.1f%s%n", run, side.title, r.perSecond(), r.committed, r.seconds,
                            percentiles(r.http), percentiles(r.server), cpuText(r.cpuMicrosPerTx(r.serverCpuNanos)),
                            cpuText(r.cpuMicrosPerTx(r.postgresCpuNanos)), cpuText(r.cpuMicrosPerTx(r.clientCpuNanos)),
                            r.loadAverage, errorText(r));
                }
            }
        }

        out.printf("%n");
        boolean ok = true;
        ok &= checkStored(Side.LEASEHOLD, storedLeasehold() - leaseholdBefore);
        if (s.postgres()) {
            long after = getJson("bench/postgres/stored?keys=" + s.maxKeys()).path("messages").asLong();
            ok &= checkStored(Side.POSTGRES, after - postgresBefore);
        }
        JsonNode adapter = getJson("ledger/stats");
        out.printf("Adapter figures, all runs: %d lease acquisitions (wait p99 %d us), %d prepares, %d commits, "
                + "%d rollbacks, %d heuristic outcomes, %d messages written%n", adapter.path("Acquires").asLong(),
                adapter.path("AcquireWaitP99Micros").asLong(), adapter.path("Prepares").asLong(),
                adapter.path("Commits").asLong(), adapter.path("Rollbacks").asLong(),
                adapter.path("HeuristicRollbacks").asLong() + adapter.path("HeuristicCommits").asLong()
                        + adapter.path("HeuristicHazards").asLong(), adapter.path("MessagesWritten").asLong());

        List<Map<String, Object>> summary = summarize(s);
        writeJson(resultsFile, s, pgSettings, summary);
        out.println("Results (JSON): " + resultsFile);
        return ok ? 0 : 1;
    }

    /** One run of {@code side} under {@code w} for {@code d}. */
    private Result measure(Side side, Workload w, Duration d, int run) throws InterruptedException, ExecutionException {
        String uri = base + "bench/" + side.path + "?key=";
        ExecutorService pool = Executors.newFixedThreadPool(w.threads());
        try {
            long serverCpu = cpuNanos(server);
            long postgresCpu = side == Side.POSTGRES ? postgresCpuNanos() : -1;
            long clientCpu = cpuNanos(ProcessHandle.current());
            long start = System.nanoTime();
            long end = start + d.toNanos();
            List<Future<Result>> parts = new ArrayList<>();
            long[] finished = new long[w.threads()];
            for (int i = 0; i < w.threads(); i++) {
                int client = i;
                parts.add(pool.submit(() -> {
                    Result part = new Result(side, w, run);
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    while (System.nanoTime() < end) {
                        transaction(uri + rnd.nextInt(w.keys()), part);
                    }
                    finished[client] = System.nanoTime();
                    return part;
                }));
            }
            Result total = new Result(side, w, run);
            for (Future<Result> f : parts) {
                total.add(f.get());
            }
            long last = start;
            for (long t : finished) {
                last = Math.max(last, t);
            }
            total.seconds = (last - start) / 1e9;
            total.serverCpuNanos = delta(serverCpu, cpuNanos(server));
            total.postgresCpuNanos = side == Side.POSTGRES ? delta(postgresCpu, postgresCpuNanos()) : -1;
            total.clientCpuNanos = delta(clientCpu, cpuNanos(ProcessHandle.current()));
            total.loadAverage = ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
            return total;
        } finally {
            pool.shutdownNow();
        }
    }

    /** Total CPU time of a process so far, or -1 if it cannot be had. */
    private static long cpuNanos(ProcessHandle p) {
        return p == null ? -1 : p.info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
    }

    /** CPU time of PostgreSQL's postmaster and every process under it (backends, WAL writer...), or -1. */
    private long postgresCpuNanos() {
        if (postmaster == null) {
            return -1;
        }
        long total = cpuNanos(postmaster);
        for (ProcessHandle p : (Iterable<ProcessHandle>) postmaster.descendants()::iterator) {
            total += Math.max(0, cpuNanos(p));
        }
        return total;
    }

    private static long delta(long before, long after) {
        return before < 0 || after < 0 ? -1 : after - before;
    }

    /** One transaction over HTTP, recorded in {@code r}. */
    private void transaction(String uri, Result r) throws InterruptedException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(uri)).POST(HttpRequest.BodyPublishers.noBody())
                .timeout(Duration.ofSeconds(60)).build();
        long t0 = System.nanoTime();
        HttpResponse<String> answer;
        try {
            answer = http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            r.error("IO_ERROR", e.toString());
            return;
        }
        long micros = Math.max(1, (System.nanoTime() - t0) / 1_000);
        JsonNode body;
        try {
            body = json.readTree(answer.body());
        } catch (JsonProcessingException e) {
            r.error("HTTP_" + answer.statusCode(), answer.body());
            return;
        }
        String outcome = body.path("outcome").asText("HTTP_" + answer.statusCode());
        if (answer.statusCode() == 200 && outcome.equals("COMMITTED")) {
            r.committed++;
            r.http.recordValue(micros);
            r.server.recordValue(Math.max(1, body.path("micros").asLong()));
        } else {
            r.error(outcome, body.path("reason").asText(answer.body()));
        }
    }

    private boolean checkStored(Side side, long stored) {
        long committed = 0;
        long unknown = 0;
        for (Result r : results) {
            if (r.side == side) {
                committed += r.committed;
                unknown += r.unknownOutcomes();
            }
        }
        boolean ok = committed > 0 && stored >= committed && stored <= committed + unknown;
        String where = side == Side.LEASEHOLD ? "messages read back from the bag store" : "rows in bench_message";
        out.printf("Check %s: %d committed transactions (warm-ups included), %d %s%s: %s%n", side.title, committed,
                stored, where, unknown > 0 ? " (" + unknown + " answers left the outcome unknown)" : "",
                ok ? "OK" : "MISMATCH");
        return ok;
    }

    /**
     * Per workload and side, over the measured runs: prints the table and the ratios. Throughput is the median of
     * the runs; the throughput ratio is the median of the ratios of runs taken one after the other (run i of each
     * side), which other processes' load changes least; latency percentiles are over all runs together; CPU time per
     * transaction is over all runs together.
     */
    private List<Map<String, Object>> summarize(Settings s) {
        List<Map<String, Object>> rows = new ArrayList<>();
        out.printf("%n| workload | resource | tx/s (median) | tx/s per run | HTTP p50 / p99 / p99.9 ms "
                + "| server p50 / p99 / p99.9 ms | CPU us per tx: server JVM / PostgreSQL / client | errors |%n"
                + "|---|---|---:|---|---|---|---|---|%n");
        List<String> ratios = new ArrayList<>();
        List<String> floors = new ArrayList<>();
        for (Workload w : s.workloads()) {
            Map<Side, Result> merged = new LinkedHashMap<>();
            Map<Side, List<Double>> perRun = new LinkedHashMap<>();
            for (Side side : s.sides()) {
                Result m = new Result(side, w, -1);
                List<Double> rates = new ArrayList<>();
                for (Result r : results) {
                    if (r.side == side && r.workload.equals(w) && r.run > 0) {
                        m.add(r);
                        m.addCpu(r);
                        m.seconds += r.seconds;
                        rates.add(r.perSecond());
                    }
                }
                merged.put(side, m);
                perRun.put(side, rates);
                out.printf("| %s | %s | %.0f | %s | %s | %s | %s / %s / %s | %s |%n", w.label(), side.title,
                        median(rates), joined(rates, "%.0f"), msTriple(m.http), msTriple(m.server),
                        cpuText(m.cpuMicrosPerTx(m.serverCpuNanos)), cpuText(m.cpuMicrosPerTx(m.postgresCpuNanos)),
                        cpuText(m.cpuMicrosPerTx(m.clientCpuNanos)),
                        m.errorCount() == 0 ? "0" : m.errorCount() + " " + m.errors);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("threads", w.threads());
                row.put("keys", w.keys());
                row.put("resource", side.title);
                row.put("txPerSecondMedian", orNull(median(rates)));
                row.put("txPerSecondRuns", rates);
                row.put("committed", m.committed);
                row.put("http", percentileMap(m.http));
                row.put("server", percentileMap(m.server));
                row.put("cpuMicrosPerTx", cpuMap(m));
                row.put("errors", m.errors);
                rows.add(row);
            }
            if (s.postgres()) {
                List<Double> l = perRun.get(Side.LEASEHOLD);
                List<Double> p = perRun.get(Side.POSTGRES);
                List<Double> paired = new ArrayList<>();
                for (int i = 0; i < Math.min(l.size(), p.size()); i++) {
                    if (p.get(i) > 0) {
                        paired.add(l.get(i) / p.get(i));
                    }
                }
                Result lm = merged.get(Side.LEASEHOLD);
                Result pm = merged.get(Side.POSTGRES);
                double lCpu = lm.cpuMicrosPerTx(lm.serverCpuNanos);
                double pCpu = pm.cpuMicrosPerTx(pm.serverCpuNanos) + Math.max(0, pm.cpuMicrosPerTx(pm.postgresCpuNanos));
                ratios.add(String.format("%s: tx/s x%.2f (per run: %s); HTTP p99 x%.2f; server p99 x%.2f; "
                        + "server-side CPU per tx x%.2f", w.label(), median(paired),
                        joined(paired, "%.2f"),
                        ratio(lm.http.getValueAtPercentile(99), pm.http.getValueAtPercentile(99)),
                        ratio(lm.server.getValueAtPercentile(99), pm.server.getValueAtPercentile(99)), lCpu / pCpu));
            }
            if (s.empty()) {
                Result e = merged.get(Side.EMPTY);
                StringBuilder b = new StringBuilder(String.format("%s: the floor (no resource) does %.0f tx/s, server "
                        + "p50 %s ms, server JVM CPU %s us/tx; above it", w.label(), median(perRun.get(Side.EMPTY)),
                        ms(e.server.getValueAtPercentile(50)), cpuText(e.cpuMicrosPerTx(e.serverCpuNanos))));
                for (Side side : s.sides()) {
                    if (side != Side.EMPTY) {
                        Result r = merged.get(side);
                        double cpu = r.cpuMicrosPerTx(r.serverCpuNanos) + (side == Side.POSTGRES
                                ? Math.max(0, r.cpuMicrosPerTx(r.postgresCpuNanos)) : 0);
                        b.append(String.format(" %s adds %s ms server p50 and %s us server-side CPU per tx;",
                                side.title, ms(r.server.getValueAtPercentile(50) - e.server.getValueAtPercentile(50)),
                                cpuText(cpu - e.cpuMicrosPerTx(e.serverCpuNanos))));
                    }
                }
                floors.add(b.substring(0, b.length() - 1));
            }
        }
        if (!floors.isEmpty()) {
            out.printf("%nAbove the floor (the same HTTP, EJB and JTA path without a resource):%n");
            floors.forEach(f -> out.println("  " + f));
        }
        if (!ratios.isEmpty()) {
            out.printf("%nLeasehold / PostgreSQL (tx/s: above 1 favours Leasehold; p99 and CPU: below 1 does; "
                    + "server-side CPU: the server JVM, plus PostgreSQL's processes for PostgreSQL):%n");
            ratios.forEach(r -> out.println("  " + r));
        }
        return rows;
    }

    private static double median(List<Double> xs) {
        if (xs.isEmpty()) {
            return Double.NaN;
        }
        List<Double> sorted = xs.stream().sorted().toList();
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static String joined(List<Double> xs, String format) {
        return xs.stream().map(x -> String.format(format, x)).collect(Collectors.joining(", "));
    }

    private static String cpuText(double micros) {
        return Double.isNaN(micros) ? "-" : String.format("%.0f", micros);
    }

    private static Map<String, Object> cpuMap(Result r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("serverJvm", orNull(r.cpuMicrosPerTx(r.serverCpuNanos)));
        m.put("postgres", orNull(r.cpuMicrosPerTx(r.postgresCpuNanos)));
        m.put("client", orNull(r.cpuMicrosPerTx(r.clientCpuNanos)));
        return m;
    }

    /** JSON has no NaN: unknown values are null. */
    private static Double orNull(double x) {
        return Double.isNaN(x) ? null : x;
    }

    private static double ratio(long a, long b) {
        return b == 0 ? Double.NaN : (double) a / b;
    }

    private void writeJson(Path file, Settings s, Map<String, String> pgSettings, List<Map<String, Object>> summary)
            throws IOException {
        List<Map<String, Object>> runs = new ArrayList<>();
        for (Result r : results) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("threads", r.workload.threads());
            m.put("keys", r.workload.keys());
            m.put("resource", r.side.title);
            m.put("run", r.run == 0 ? "warm-up" : String.valueOf(r.run));
            m.put("committed", r.committed);
            m.put("seconds", r.seconds);
            m.put("txPerSecond", r.perSecond());
            m.put("http", percentileMap(r.http));
            m.put("server", percentileMap(r.server));
            m.put("cpuMicrosPerTx", cpuMap(r));
            m.put("loadAverage1m", r.loadAverage);
            m.put("errors", r.errors);
            m.put("errorExamples", r.examples);
            runs.add(m);
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("warmup", s.warmup().toString());
        doc.put("duration", s.duration().toString());
        doc.put("runs", s.runs());
        doc.put("availableProcessors", Runtime.getRuntime().availableProcessors());
        doc.put("postgresSettings", pgSettings);
        doc.put("summary", summary);
        doc.put("measurements", runs);
        json.writerWithDefaultPrettyPrinter().writeValue(file.toFile(), doc);
    }

    private static Map<String, Object> percentileMap(Histogram h) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("count", h.getTotalCount());
        m.put("p50Micros", h.getValueAtPercentile(50));
        m.put("p99Micros", h.getValueAtPercentile(99));
        m.put("p999Micros", h.getValueAtPercentile(99.9));
        m.put("maxMicros", h.getMaxValue());
        return m;
    }

    private static String percentiles(Histogram h) {
        return "p50 " + ms(h.getValueAtPercentile(50)) + " p99 " + ms(h.getValueAtPercentile(99)) + " p99.9 "
                + ms(h.getValueAtPercentile(99.9)) + " ms";
    }

    private static String msTriple(Histogram h) {
        return ms(h.getValueAtPercentile(50)) + " / " + ms(h.getValueAtPercentile(99)) + " / "
                + ms(h.getValueAtPercentile(99.9));
    }

    private static String ms(long micros) {
        return String.format(micros < 10_000 ? "%.2f" : "%.1f", micros / 1000.0);
    }

    private static String errorText(Result r) {
        if (r.errors.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("; errors:");
        r.errors.forEach((k, v) -> b.append(' ').append(k).append(' ').append(v));
        b.append(" (first ").append(r.examples.entrySet().iterator().next()).append(')');
        return b.toString();
    }

    private long storedLeasehold() throws IOException, InterruptedException {
        return getJson("bench/leasehold/stored").path("messages").asLong();
    }

    private JsonNode getJson(String path) throws IOException, InterruptedException {
        URI uri = base.resolve(path);
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(300)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET " + uri + " answered " + r.statusCode() + ": " + r.body());
        }
        return json.readTree(r.body());
    }
}
