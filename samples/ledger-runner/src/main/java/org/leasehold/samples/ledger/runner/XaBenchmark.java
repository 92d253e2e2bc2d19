package org.leasehold.samples.ledger.runner;

import java.io.IOException;
import java.io.PrintStream;
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
 *
 * <p>The clients are closed-loop: each sends its next request when the previous answer arrives, so the latencies
 * are those of a loaded server at the throughput it reached (no coordinated-omission correction is applied).
 */
final class XaBenchmark {

    /** The two ways of doing the operation. */
    enum Side {
        LEASEHOLD("Leasehold", "leasehold"),
        POSTGRES("PostgreSQL", "postgres");

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
     */
    record Settings(List<Workload> workloads, Duration warmup, Duration duration, int runs, boolean postgres) {
        Settings {
            workloads = List.copyOf(workloads);
        }

        List<Side> sides() {
            return postgres ? List.of(Side.LEASEHOLD, Side.POSTGRES) : List.of(Side.LEASEHOLD);
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
    private final PrintStream out;
    private final ObjectMapper json = new ObjectMapper();
    private final List<Result> results = new ArrayList<>();

    XaBenchmark(HttpClient http, URI serverBase, PrintStream out) {
        this.http = http;
        this.base = URI.create(serverBase + "/ledger/api/");
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
                    out.printf("  run %d %-10s %8.1f tx/s (%d in %.1f s); HTTP %s; server %s%s%n", run, side.title,
                            r.perSecond(), r.committed, r.seconds, percentiles(r.http), percentiles(r.server),
                            errorText(r));
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
            return total;
        } finally {
            pool.shutdownNow();
        }
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

    /** Per workload and side, over the measured runs; prints the table and the ratios. */
    private List<Map<String, Object>> summarize(Settings s) {
        List<Map<String, Object>> rows = new ArrayList<>();
        out.printf("%n| workload | resource | tx/s (mean of runs) | runs, tx/s | HTTP p50 / p99 / p99.9 ms "
                + "| server p50 / p99 / p99.9 ms | errors |%n|---|---|---:|---|---|---|---|%n");
        List<String> ratios = new ArrayList<>();
        for (Workload w : s.workloads()) {
            Map<Side, Result> merged = new LinkedHashMap<>();
            Map<Side, Double> mean = new LinkedHashMap<>();
            for (Side side : s.sides()) {
                Result m = new Result(side, w, -1);
                List<String> perRun = new ArrayList<>();
                double sum = 0;
                int n = 0;
                for (Result r : results) {
                    if (r.side == side && r.workload.equals(w) && r.run > 0) {
                        m.add(r);
                        m.seconds += r.seconds;
                        perRun.add(String.format("%.0f", r.perSecond()));
                        sum += r.perSecond();
                        n++;
                    }
                }
                double avg = n == 0 ? 0 : sum / n;
                merged.put(side, m);
                mean.put(side, avg);
                out.printf("| %s | %s | %.0f | %s | %s | %s | %s |%n", w.label(), side.title, avg,
                        String.join(", ", perRun), msTriple(m.http), msTriple(m.server),
                        m.errorCount() == 0 ? "0" : m.errorCount() + " " + m.errors);
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("threads", w.threads());
                row.put("keys", w.keys());
                row.put("resource", side.title);
                row.put("txPerSecondMean", avg);
                row.put("txPerSecondRuns", perRun);
                row.put("committed", m.committed);
                row.put("http", percentileMap(m.http));
                row.put("server", percentileMap(m.server));
                row.put("errors", m.errors);
                rows.add(row);
            }
            if (s.postgres() && mean.get(Side.POSTGRES) > 0) {
                Result l = merged.get(Side.LEASEHOLD);
                Result p = merged.get(Side.POSTGRES);
                ratios.add(String.format("%s: tx/s x%.2f; HTTP p99 x%.2f; server p99 x%.2f", w.label(),
                        mean.get(Side.LEASEHOLD) / mean.get(Side.POSTGRES),
                        ratio(l.http.getValueAtPercentile(99), p.http.getValueAtPercentile(99)),
                        ratio(l.server.getValueAtPercentile(99), p.server.getValueAtPercentile(99))));
            }
        }
        if (!ratios.isEmpty()) {
            out.printf("%nLeasehold / PostgreSQL (tx/s: higher is better for Leasehold; p99: lower is):%n");
            ratios.forEach(r -> out.println("  " + r));
        }
        return rows;
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
