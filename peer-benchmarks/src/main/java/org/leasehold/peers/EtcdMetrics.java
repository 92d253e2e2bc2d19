package org.leasehold.peers;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What the etcd systems cost etcd, from etcd's own Prometheus counters ({@code /metrics} on its client URL), read when
 * a trial's measured window opens and when it closes: Raft proposals, key-value operations of its store (puts,
 * deletes and ranges, the comparisons of transactions among them, whoever made them: the client or etcd's lock
 * service on its behalf), WAL
 * {@code fsync}s, gRPC calls handled (by method), the bytes its clients sent and received, and the CPU time of etcd and
 * of this process. Divided by the cycles of the window, so a figure is per acquire + release.
 */
final class EtcdMetrics {
    /** etcd's CPU time (user + system, all its threads), in µs. */
    static final String ETCD_CPU = "etcd CPU µs";
    /** The harness's own CPU time (every thread of this JVM: the client library, its callers, the collector), in µs. */
    static final String CLIENT_CPU = "client CPU µs";

    /**
     * The counters read, in the order the tables show them: label, metric name (null: this JVM's CPU time), gRPC method
     * or null.
     */
    static final List<String[]> COUNTERS = List.of(
            new String[] {"proposals", "etcd_server_proposals_committed_total", null},
            new String[] {"fsyncs", "etcd_disk_wal_fsync_duration_seconds_count", null},
            new String[] {"puts", "etcd_mvcc_put_total", null},
            new String[] {"deletes", "etcd_mvcc_delete_total", null},
            new String[] {"ranges", "etcd_mvcc_range_total", null},
            new String[] {"rpcs", "grpc_server_handled_total", null},
            new String[] {"Txn rpcs", "grpc_server_handled_total", "Txn"},
            new String[] {"Range rpcs", "grpc_server_handled_total", "Range"},
            new String[] {"Lock rpcs", "grpc_server_handled_total", "Lock"},
            new String[] {"Unlock rpcs", "grpc_server_handled_total", "Unlock"},
            new String[] {"bytes in", "etcd_network_client_grpc_received_bytes_total", null},
            new String[] {"bytes out", "etcd_network_client_grpc_sent_bytes_total", null},
            new String[] {ETCD_CPU, "process_cpu_seconds_total", null},
            new String[] {CLIENT_CPU, null, null});

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final URI uri;

    EtcdMetrics(String endpoint) {
        this.uri = URI.create(endpoint.endsWith("/") ? endpoint + "metrics" : endpoint + "/metrics");
    }

    /** The counters now, by label; empty if etcd did not answer (the trial then has no cost figures). */
    Map<String, Double> read() {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                System.err.println("etcd metrics at " + uri + " answered HTTP " + r.statusCode() + ": no cost figures");
                return Map.of();
            }
            Map<String, Double> m = parse(r.body());
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                m.put(CLIENT_CPU, os.getProcessCpuTime() / 1_000.0);
            }
            return m;
        } catch (IOException e) {
            System.err.println("etcd metrics at " + uri + " could not be read (" + e + "): no cost figures");
            return Map.of();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Map.of();
        }
    }

    /** Sums every series of each counter in Prometheus's text format (of one gRPC method where one is named). */
    static Map<String, Double> parse(String text) {
        Map<String, Double> out = new LinkedHashMap<>();
        for (String[] c : COUNTERS) {
            out.put(c[0], 0.0);
        }
        for (String line : text.split("\n")) {
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int brace = line.indexOf('{');
            int space = line.lastIndexOf(' ');
            if (space < 0) {
                continue;
            }
            String name = brace >= 0 && brace < space ? line.substring(0, brace) : line.substring(0, space);
            String labels = brace >= 0 && brace < space ? line.substring(brace, line.lastIndexOf('}', space) + 1) : "";
            double value;
            try {
                value = Double.parseDouble(line.substring(space + 1).trim());
            } catch (NumberFormatException e) {
                continue;
            }
            for (String[] c : COUNTERS) {
                if (name.equals(c[1]) && (c[2] == null || labels.contains("grpc_method=\"" + c[2] + "\""))) {
                    out.merge(c[0], c[0].equals(ETCD_CPU) ? value * 1e6 : value, Double::sum);
                }
            }
        }
        return out;
    }

    /** One system under one workload: the counters' growth over its measured windows and the cycles in them. */
    static final class Cost {
        final String workload;
        final String system;
        final Map<String, Double> growth = new LinkedHashMap<>();
        long cycles;

        Cost(String workload, String system) {
            this.workload = workload;
            this.system = system;
        }

        void add(Map<String, Double> before, Map<String, Double> after, long windowCycles) {
            if (before.isEmpty() || after.isEmpty()) {
                return;
            }
            for (String[] c : COUNTERS) {
                growth.merge(c[0], after.get(c[0]) - before.get(c[0]), Double::sum);
            }
            cycles += windowCycles;
        }

        double perCycle(String label) {
            return cycles == 0 ? Double.NaN : growth.getOrDefault(label, 0.0) / cycles;
        }
    }

    /** The costs as a markdown table, one row per system and workload, each figure per cycle. */
    static String markdown(List<Cost> costs) {
        List<Cost> measured = new ArrayList<>();
        for (Cost c : costs) {
            if (c.cycles > 0) {
                measured.add(c);
            }
        }
        if (measured.isEmpty()) {
            return "";
        }
        StringBuilder b = new StringBuilder("etcd's counters per cycle (acquire + release), over the measured windows:\n\n"
                + "| workload | system |");
        StringBuilder rule = new StringBuilder("|---|---|");
        for (String[] c : COUNTERS) {
            b.append(' ').append(c[0]).append(" |");
            rule.append("---:|");
        }
        b.append('\n').append(rule).append('\n');
        for (Cost c : measured) {
            b.append("| ").append(c.workload).append(" | ").append(c.system).append(" |");
            for (String[] counter : COUNTERS) {
                double v = c.perCycle(counter[0]);
                b.append(' ').append(String.format(Locale.ROOT, v >= 100 ? "%.0f" : "%.2f", v)).append(" |");
            }
            b.append('\n');
        }
        return b.toString();
    }

    /** The costs as CSV. */
    static String csv(List<Cost> costs) {
        StringBuilder b = new StringBuilder("workload,system,cycles");
        for (String[] c : COUNTERS) {
            b.append(',').append(c[0].replace(' ', '_')).append("_per_cycle");
        }
        b.append('\n');
        for (Cost c : costs) {
            b.append(c.workload).append(',').append(c.system).append(',').append(c.cycles);
            for (String[] counter : COUNTERS) {
                b.append(',').append(String.format(Locale.ROOT, "%.3f", c.perCycle(counter[0])));
            }
            b.append('\n');
        }
        return b.toString();
    }
}
