package org.leasehold.peers;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.HdrHistogram.Histogram;

/**
 * The runs of every system and workload, aggregated: median cycles/s over the runs (with the lowest and highest),
 * acquire percentiles of all the runs' samples together; written as CSV and markdown, with the goals judged.
 */
public final class ResultTable {
    /** Leasehold's label; its other rows (the echo ceiling, variants) start with it and are not peers in the goals. */
    static final String LEASEHOLD = "leasehold";

    /**
     * The Leasehold rows the goals are judged for, one per transport a user can choose: gRPC ({@code leasehold}) and
     * the socket transport ({@code leasehold-socket}).
     */
    static final List<String> JUDGED = List.of(LEASEHOLD, "leasehold-socket");

    /** The lock services Leasehold is judged against. */
    static final List<String> PEERS = List.of("redis-jedis", "redis-lettuce", "etcd", "zookeeper", "postgresql");

    /** Rows that take no lock: the transports' ceilings (an echo, a PING) and the in-process hand-off floor. */
    static final List<String> CEILINGS = List.of("leasehold-echo", "leasehold-socket-echo", "redis-jedis-ping",
            "redis-lettuce-ping", "java-socket-echo", "local-handoff");

    /** The ceilings that cross the network (loopback): all but the in-process hand-offs. */
    private static final List<String> OVER_LOOPBACK = CEILINGS.stream().filter(c -> !c.equals("local-handoff")).toList();

    private static final List<String> REDIS = List.of("redis-jedis", "redis-lettuce");

    /** Leasehold's etcd backend in the harness's process; judged against jetcd's {@code Lock} on the same etcd. */
    static final String ETCD_BACKEND = "leasehold-etcd";
    /** jetcd's {@code Lock} and {@code Unlock} (etcd's lock service): the peer the etcd backend must beat. */
    static final String ETCD_LOCK = "etcd";
    /** One plain etcd transaction to take a name and one to release it: the floor of a lock kept in etcd. */
    static final String ETCD_TXN = "etcd-txn";
    /**
     * jetcd's {@code Lock} with a lease of its own per lock (granted at acquire, revoked at release): the recipe as issue
     * 23 states it, each lock ending by a deadline of its own as a Leasehold lease does.
     */
    static final String ETCD_LEASE_LOCK = "etcd-lease-lock";
    /** The etcd backend's goal against {@link #ETCD_LOCK}: this many times its cycles/s, and a lower acquire p99. */
    static final double ETCD_BACKEND_RATIO = 1.5;
    /**
     * The signing server's rows, each with the row of the same transport on the server started with
     * {@code --no-signing}: the pair the signing goals compare.
     */
    static final Map<String, String> SIGNING_PAIRS = Map.of(LEASEHOLD, "leasehold-nosign", "leasehold-socket",
            "leasehold-socket-nosign");
    /** Signing's goal on throughput: at least this share of the cycles/s without signing, in every workload. */
    static final double SIGNING_RATIO = 0.9;
    /** Signing's goal on the single-thread acquire p50: at most this many microseconds above it without signing. */
    static final double SIGNING_P50_GROWTH_MICROS = 10;
    private static final Comparator<Row> HIGHEST_RATE = Comparator.comparingDouble(Row::medianCyclesPerSecond).reversed();
    private static final Comparator<Row> LOWEST_P50 = Comparator.comparingDouble(Row::p50);

    private final List<TrialResult> runs = new ArrayList<>();

    public void add(TrialResult r) {
        runs.add(r);
    }

    public List<TrialResult> runs() {
        return List.copyOf(runs);
    }

    /** One system under one workload over all its runs. */
    public record Row(String workload, String system, int runs, double medianCyclesPerSecond, double minCyclesPerSecond,
                      double maxCyclesPerSecond, double p50, double p99, double p999, long samples, long errors) {
    }

    /** Aggregated rows, workloads and systems in the order they were first run. */
    public List<Row> rows() {
        Map<String, Map<String, List<TrialResult>>> byWorkload = new LinkedHashMap<>();
        for (TrialResult r : runs) {
            byWorkload.computeIfAbsent(r.workload(), k -> new LinkedHashMap<>())
                    .computeIfAbsent(r.system(), k -> new ArrayList<>()).add(r);
        }
        List<Row> rows = new ArrayList<>();
        byWorkload.forEach((workload, bySystem) -> bySystem.forEach((system, list) -> {
            double[] rates = list.stream().mapToDouble(TrialResult::cyclesPerSecond).sorted().toArray();
            Histogram all = new Histogram(3);
            long errors = 0;
            for (TrialResult r : list) {
                all.add(r.acquire());
                errors += r.errors();
            }
            rows.add(new Row(workload, system, list.size(), median(rates), rates[0], rates[rates.length - 1],
                    TrialResult.micros(all, 50), TrialResult.micros(all, 99), TrialResult.micros(all, 99.9),
                    all.getTotalCount(), errors));
        }));
        return rows;
    }

    static double median(double[] sorted) {
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }

    /** Every run, one line each. */
    public String runsCsv() {
        StringBuilder b = new StringBuilder("workload,system,run,cycles,seconds,cycles_per_s,acquire_p50_us,acquire_p99_us,"
                + "acquire_p999_us,errors\n");
        for (TrialResult r : runs) {
            b.append(String.format(Locale.ROOT, "%s,%s,%d,%d,%.3f,%.1f,%.1f,%.1f,%.1f,%d%n", r.workload(), r.system(), r.run(),
                    r.cycles(), r.seconds(), r.cyclesPerSecond(), r.acquireMicros(50), r.acquireMicros(99),
                    r.acquireMicros(99.9), r.errors()));
        }
        return b.toString();
    }

    /** The aggregated table as CSV. */
    public String summaryCsv() {
        StringBuilder b = new StringBuilder("workload,system,runs,median_cycles_per_s,min_cycles_per_s,max_cycles_per_s,"
                + "acquire_p50_us,acquire_p99_us,acquire_p999_us,samples,errors\n");
        for (Row r : rows()) {
            b.append(String.format(Locale.ROOT, "%s,%s,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%d,%d%n", r.workload(), r.system(),
                    r.runs(), r.medianCyclesPerSecond(), r.minCyclesPerSecond(), r.maxCyclesPerSecond(), r.p50(), r.p99(),
                    r.p999(), r.samples(), r.errors()));
        }
        return b.toString();
    }

    /** The aggregated table as markdown. */
    public String markdownTable() {
        StringBuilder b = new StringBuilder();
        b.append("| workload | system | cycles/s (median) | min–max | acquire p50 | p99 | p99.9 | errors |\n");
        b.append("|---|---|---:|---:|---:|---:|---:|---:|\n");
        for (Row r : rows()) {
            b.append(String.format(Locale.ROOT, "| %s | %s | %s | %s–%s | %s | %s | %s | %d |%n", r.workload(), r.system(),
                    count(r.medianCyclesPerSecond()), count(r.minCyclesPerSecond()), count(r.maxCyclesPerSecond()),
                    latency(r.p50()), latency(r.p99()), latency(r.p999()), r.errors()));
        }
        return b.toString();
    }

    /** A judged goal: what was compared, the figures, and whether it was met. */
    public record Goal(String goal, String figures, boolean met) {
    }

    /**
     * The goals, judged on the medians of this run: uncontended at least 2× the best Redis client and 30× etcd
     * and ZooKeeper; contended at least the best Redis; single-thread p50 at most the best Redis p50; acquire p99 below
     * every peer's in every workload. A goal whose systems were not all measured is left out.
     */
    public List<Goal> goals() {
        Map<String, Row> byKey = byKey();
        List<Goal> goals = new ArrayList<>();
        for (String judged : JUDGED) {
            goals.addAll(goals(byKey, judged));
        }
        goals.addAll(etcdBackendGoals(byKey));
        goals.addAll(signingGoals(byKey));
        return goals;
    }

    /**
     * Signing's goals, for each transport whose signing and {@code --no-signing} rows both ran, in every workload they
     * both ran: cycles/s at least {@link #SIGNING_RATIO} of those without signing, and in the single-thread workload an
     * acquire p50 at most {@link #SIGNING_P50_GROWTH_MICROS} µs above it.
     */
    private List<Goal> signingGoals(Map<String, Row> byKey) {
        List<Goal> goals = new ArrayList<>();
        for (Row l : rows()) {
            String plain = SIGNING_PAIRS.get(l.system());
            Row off = plain == null ? null : byKey.get(l.workload() + "/" + plain);
            if (off == null) {
                continue;
            }
            goals.add(ratio(l.system() + ": " + l.workload() + " with signing ≥ " + Math.round(SIGNING_RATIO * 100)
                    + " % of " + plain, l, off, SIGNING_RATIO));
            if (l.workload().equals("single")) {
                double growth = l.p50() - off.p50();
                goals.add(new Goal(l.system() + ": single-thread acquire p50 with signing ≤ " + plain + "'s + "
                        + Math.round(SIGNING_P50_GROWTH_MICROS) + " µs", String.format(Locale.ROOT, "%s vs %s (%+.1f µs)",
                        latency(l.p50()), latency(off.p50()), growth), growth <= SIGNING_P50_GROWTH_MICROS));
            }
        }
        return goals;
    }

    /**
     * Each transport with signing beside itself without ({@code --no-signing}), one line per workload: cycles/s
     * (median) and their ratio, acquire p50 and p99 and how much signing adds to each. Empty unless a pair ran.
     */
    public String markdownSigning() {
        Map<String, Row> byKey = byKey();
        StringBuilder b = new StringBuilder();
        for (Row l : rows()) {
            String plain = SIGNING_PAIRS.get(l.system());
            Row off = plain == null ? null : byKey.get(l.workload() + "/" + plain);
            if (off == null) {
                continue;
            }
            if (b.isEmpty()) {
                b.append("| workload | signing | cycles/s | no signing | cycles/s | ratio | acquire p50 | no signing | "
                        + "growth | p99 | no signing |\n|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n");
            }
            b.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %.1f %% | %s | %s | %+.1f µs | %s | %s |%n",
                    l.workload(), l.system(), count(l.medianCyclesPerSecond()), off.system(),
                    count(off.medianCyclesPerSecond()), 100 * l.medianCyclesPerSecond() / off.medianCyclesPerSecond(),
                    latency(l.p50()), latency(off.p50()), l.p50() - off.p50(), latency(l.p99()), latency(off.p99())));
        }
        return b.toString();
    }

    /**
     * The etcd backend's goals, in every workload both it and a jetcd {@code Lock} ran: at least
     * {@link #ETCD_BACKEND_RATIO} times the cycles/s of the {@code Lock}, and a lower acquire p99; judged against the
     * {@code Lock} under a session lease ({@link #ETCD_LOCK}) and against the {@code Lock} with a lease per lock
     * ({@link #ETCD_LEASE_LOCK}), each where it ran.
     */
    private List<Goal> etcdBackendGoals(Map<String, Row> byKey) {
        List<Goal> goals = new ArrayList<>();
        for (Row l : rows()) {
            if (!l.system().equals(ETCD_BACKEND)) {
                continue;
            }
            for (String peer : List.of(ETCD_LOCK, ETCD_LEASE_LOCK)) {
                Row lock = byKey.get(l.workload() + "/" + peer);
                if (lock == null) {
                    continue;
                }
                String what = peer.equals(ETCD_LOCK) ? "jetcd Lock, session lease (" + peer + ")"
                        : "jetcd Lock, a lease per lock (" + peer + ")";
                goals.add(ratio(ETCD_BACKEND + ": " + l.workload() + " ≥ " + ETCD_BACKEND_RATIO + "× " + what, l, lock,
                        ETCD_BACKEND_RATIO));
                goals.add(new Goal(ETCD_BACKEND + ": " + l.workload() + ": acquire p99 below " + what,
                        String.format(Locale.ROOT, "%s vs %s", latency(l.p99()), latency(lock.p99())),
                        l.p99() < lock.p99()));
            }
        }
        return goals;
    }

    /**
     * The etcd systems side by side, one line per workload: the etcd backend, jetcd's {@code Lock} (session lease), the
     * plain transaction and the {@code Lock} with a lease per lock, cycles/s (median) and acquire p50/p99, each beside
     * the session-lease {@code Lock}'s as a ratio. Empty unless the backend and the {@code Lock} both ran.
     */
    public String markdownEtcdBackend() {
        Map<String, Row> byKey = byKey();
        StringBuilder b = new StringBuilder();
        for (Row l : rows()) {
            Row lock = byKey.get(l.workload() + "/" + ETCD_LOCK);
            if (!l.system().equals(ETCD_BACKEND) || lock == null) {
                continue;
            }
            if (b.isEmpty()) {
                b.append("| workload | system | cycles/s | / Lock | acquire p50 | / Lock | p99 | / Lock |\n")
                        .append("|---|---|---:|---:|---:|---:|---:|---:|\n");
            }
            for (Row r : new Row[] {l, lock, byKey.get(l.workload() + "/" + ETCD_TXN),
                    byKey.get(l.workload() + "/" + ETCD_LEASE_LOCK)}) {
                if (r == null) {
                    continue;
                }
                b.append(String.format(Locale.ROOT, "| %s | %s | %s | ×%.2f | %s | ×%.2f | %s | ×%.2f |%n", r.workload(),
                        r.system(), count(r.medianCyclesPerSecond()), r.medianCyclesPerSecond() / lock.medianCyclesPerSecond(),
                        latency(r.p50()), r.p50() / lock.p50(), latency(r.p99()), r.p99() / lock.p99()));
            }
        }
        return b.toString();
    }

    /** The goals for one Leasehold row; their names carry the row's system unless it is plain {@link #LEASEHOLD}. */
    private List<Goal> goals(Map<String, Row> byKey, String system) {
        String who = system.equals(LEASEHOLD) ? "" : system + ": ";
        List<Goal> goals = new ArrayList<>();
        Row lu = byKey.get("uncontended/" + system);
        Row ru = bestRate(byKey, "uncontended");
        if (lu != null && ru != null) {
            goals.add(ratio(who + "uncontended ≥ 2× best Redis (" + ru.system() + ")", lu, ru, 2.0));
        }
        for (String peer : List.of("etcd", "zookeeper")) {
            Row p = byKey.get("uncontended/" + peer);
            if (lu != null && p != null) {
                goals.add(ratio(who + "uncontended ≥ 30× " + peer, lu, p, 30.0));
            }
        }
        Row lc = byKey.get("contended/" + system);
        Row rc = bestRate(byKey, "contended");
        if (lc != null && rc != null) {
            goals.add(ratio(who + "contended ≥ best Redis (" + rc.system() + ")", lc, rc, 1.0));
        }
        Row ls = byKey.get("single/" + system);
        Row rs = bestP50(byKey, "single");
        if (ls != null && rs != null) {
            goals.add(new Goal(who + "single-thread acquire p50 ≤ best Redis (" + rs.system() + ")",
                    String.format(Locale.ROOT, "%s vs %s", latency(ls.p50()), latency(rs.p50())), ls.p50() <= rs.p50()));
        }
        for (Row l : rows()) {
            if (!l.system().equals(system)) {
                continue;
            }
            Row lowest = null;
            for (Row p : rows()) {
                if (p.workload().equals(l.workload()) && isPeer(p.system()) && (lowest == null || p.p99() < lowest.p99())) {
                    lowest = p;
                }
            }
            if (lowest != null) {
                goals.add(new Goal(who + l.workload() + ": acquire p99 below every peer's (lowest: " + lowest.system() + ")",
                        String.format(Locale.ROOT, "%s vs %s", latency(l.p99()), latency(lowest.p99())), l.p99() < lowest.p99()));
            }
        }
        return goals;
    }

    private static boolean isPeer(String system) {
        return PEERS.contains(system);
    }

    private Map<String, Row> byKey() {
        Map<String, Row> byKey = new LinkedHashMap<>();
        for (Row r : rows()) {
            byKey.put(r.workload() + "/" + r.system(), r);
        }
        return byKey;
    }

    private static Row bestP50(Map<String, Row> byKey, String workload) {
        return best(byKey, workload, REDIS, LOWEST_P50);
    }

    private static Row bestRate(Map<String, Row> byKey, String workload) {
        return best(byKey, workload, REDIS, HIGHEST_RATE);
    }

    /** Of {@code systems}' rows under {@code workload}, the one {@code order} puts first; null if none ran. */
    private static Row best(Map<String, Row> byKey, String workload, List<String> systems, Comparator<Row> order) {
        Row best = null;
        for (String system : systems) {
            Row r = byKey.get(workload + "/" + system);
            if (r != null && (best == null || order.compare(r, best) < 0)) {
                best = r;
            }
        }
        return best;
    }

    private static Goal ratio(String goal, Row leasehold, Row peer, double wanted) {
        double ratio = leasehold.medianCyclesPerSecond() / peer.medianCyclesPerSecond();
        return new Goal(goal, String.format(Locale.ROOT, "%s vs %s cycles/s = ×%.2f", count(leasehold.medianCyclesPerSecond()),
                count(peer.medianCyclesPerSecond()), ratio), ratio >= wanted);
    }

    /** The goals as a markdown table. */
    public String markdownGoals() {
        StringBuilder b = new StringBuilder("| goal | measured | met |\n|---|---|---|\n");
        for (Goal g : goals()) {
            b.append("| ").append(g.goal()).append(" | ").append(g.figures()).append(" | ")
                    .append(g.met() ? "met" : "**not met**").append(" |\n");
        }
        return b.toString();
    }

    /**
     * The ceilings beside the throughput goals: for each goal on cycles/s, what it asks, the highest cycles/s of a row
     * that takes no lock over loopback (an echo, a PING) and the in-process hand-off floor, each as a ratio to the
     * goal; and the single-thread p50 goal beside the lowest p50 of a row over loopback that takes no lock. A goal
     * beyond every ceiling over loopback cannot be met by any lock service on these transports and cores. Empty when no
     * ceiling was measured.
     */
    public String markdownCeilings() {
        Map<String, Row> byKey = byKey();
        Map<String, Double> asks = new LinkedHashMap<>();
        Row ru = bestRate(byKey, "uncontended");
        if (ru != null) {
            asks.put("2× " + ru.system(), 2 * ru.medianCyclesPerSecond());
        }
        for (String peer : List.of("etcd", "zookeeper")) {
            Row p = byKey.get("uncontended/" + peer);
            if (p != null) {
                asks.put("30× " + peer, 30 * p.medianCyclesPerSecond());
            }
        }
        Row top = best(byKey, "uncontended", OVER_LOOPBACK, HIGHEST_RATE);
        Row local = byKey.get("uncontended/local-handoff");
        StringBuilder b = new StringBuilder();
        if (!asks.isEmpty() && (top != null || local != null)) {
            b.append("| uncontended goal | asks (cycles/s) | highest over loopback, no lock | cycles/s "
                    + "| / goal | in-process hand-offs | / goal |\n|---|---:|---|---:|---:|---:|---:|\n");
        } else {
            asks.clear();
        }
        for (Map.Entry<String, Double> ask : asks.entrySet()) {
            double wanted = ask.getValue();
            b.append("| ").append(ask.getKey()).append(" | ").append(count(wanted)).append(" | ");
            b.append(top == null ? "– | – | – | " : top.system() + " | " + count(top.medianCyclesPerSecond()) + " | "
                    + String.format(Locale.ROOT, "×%.2f", top.medianCyclesPerSecond() / wanted) + " | ");
            b.append(local == null ? "– | – |" : count(local.medianCyclesPerSecond()) + " | "
                    + String.format(Locale.ROOT, "×%.2f", local.medianCyclesPerSecond() / wanted) + " |");
            b.append('\n');
        }
        Row rs = bestP50(byKey, "single");
        Row fastest = best(byKey, "single", OVER_LOOPBACK, LOWEST_P50);
        if (rs != null && fastest != null) {
            b.append(b.isEmpty() ? "" : "\n")
                    .append("| single-thread goal | asks (acquire p50) | lowest over loopback, no lock | p50 |\n|---|---:|---|---:|\n")
                    .append("| ≤ ").append(rs.system()).append(" | ").append(latency(rs.p50())).append(" | ")
                    .append(fastest.system()).append(" | ").append(latency(fastest.p50())).append(" |\n");
        }
        return b.toString();
    }

    static String count(double v) {
        return String.format(Locale.ROOT, "%,.0f", v).replace(',', ' ');
    }

    static String latency(double micros) {
        if (Double.isNaN(micros)) {
            return "–";
        }
        if (micros >= 10_000) {
            return String.format(Locale.ROOT, "%.1f ms", micros / 1000);
        }
        if (micros >= 1_000) {
            return String.format(Locale.ROOT, "%.2f ms", micros / 1000);
        }
        return String.format(Locale.ROOT, "%.0f µs", micros);
    }
}
