package org.leasehold.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class EtcdMetricsTest {

    private static final String SCRAPE = String.join("\n",
            "# HELP etcd_server_proposals_committed_total The total number of consensus proposals committed.",
            "# TYPE etcd_server_proposals_committed_total gauge",
            "etcd_server_proposals_committed_total 1000",
            "etcd_disk_wal_fsync_duration_seconds_bucket{le=\"0.001\"} 10",
            "etcd_disk_wal_fsync_duration_seconds_count 400",
            "etcd_mvcc_put_total 700",
            "etcd_mvcc_delete_total 300",
            "etcd_mvcc_range_total 2.5e+03",
            "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 600",
            "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Range\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 50",
            "grpc_server_handled_total{grpc_code=\"Canceled\",grpc_method=\"Lock\",grpc_service=\"v3lockpb.Lock\",grpc_type=\"unary\"} 2",
            "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Lock\",grpc_service=\"v3lockpb.Lock\",grpc_type=\"unary\"} 98",
            "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"Unlock\",grpc_service=\"v3lockpb.Lock\",grpc_type=\"unary\"} 100",
            "grpc_server_started_total{grpc_method=\"Txn\",grpc_service=\"etcdserverpb.KV\",grpc_type=\"unary\"} 601",
            "etcd_network_client_grpc_received_bytes_total 12345",
            "etcd_network_client_grpc_sent_bytes_total 54321",
            "# TYPE process_cpu_seconds_total counter",
            "process_cpu_seconds_total 12.5",
            "");

    @Test
    void sumsEachCounterOverItsSeriesAndSplitsCallsByMethod() {
        Map<String, Double> m = EtcdMetrics.parse(SCRAPE);
        assertEquals(1000.0, m.get("proposals"));
        assertEquals(400.0, m.get("fsyncs"), "the count of the fsync histogram, not its buckets");
        assertEquals(2500.0, m.get("ranges"));
        assertEquals(850.0, m.get("rpcs"), "every handled call, whatever its code; started calls are not counted");
        assertEquals(600.0, m.get("Txn rpcs"));
        assertEquals(100.0, m.get("Lock rpcs"));
        assertEquals(100.0, m.get("Unlock rpcs"));
        assertEquals(54321.0, m.get("bytes out"));
        assertEquals(12_500_000.0, m.get(EtcdMetrics.ETCD_CPU), "seconds become µs");
        assertEquals(0.0, m.get(EtcdMetrics.CLIENT_CPU), "the harness's CPU is not in etcd's text");
    }

    @Test
    void costsAreTheGrowthOverTheWindowsPerCycle() {
        Map<String, Double> before = EtcdMetrics.parse(SCRAPE);
        Map<String, Double> after = EtcdMetrics.parse(SCRAPE.replace("proposals_committed_total 1000",
                "proposals_committed_total 1400").replace("etcd_mvcc_put_total 700", "etcd_mvcc_put_total 900"));
        EtcdMetrics.Cost cost = new EtcdMetrics.Cost("single", "etcd-txn");
        cost.add(before, after, 100);
        cost.add(before, Map.of(), 1_000);
        assertEquals(100, cost.cycles, "a window whose counters could not be read is left out");
        assertEquals(4.0, cost.perCycle("proposals"));
        assertEquals(2.0, cost.perCycle("puts"));
        assertEquals(0.0, cost.perCycle("deletes"));
        List<String> md = EtcdMetrics.markdown(List.of(cost)).lines().toList();
        assertTrue(md.get(4).startsWith("| single | etcd-txn | 4.00 | 0.00 | 2.00 | 0.00 |"), md.get(4));
        assertEquals("", EtcdMetrics.markdown(List.of(new EtcdMetrics.Cost("single", "etcd"))));
    }
}
