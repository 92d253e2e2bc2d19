package org.leasehold.peers;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResultTableTest {

    private static TrialResult run(String system, String workload, int run, long cycles, long... latenciesMicros) {
        Histogram h = new Histogram(3);
        for (long l : latenciesMicros) {
            h.recordValue(l * 1000);
        }
        return new TrialResult(system, workload, run, cycles, 10.0, h, 0, null);
    }

    private static Map<String, ResultTable.Goal> goalsByName(ResultTable t) {
        return t.goals().stream().collect(Collectors.toMap(ResultTable.Goal::goal, Function.identity()));
    }

    @Test
    void medianOfRunsAndPercentilesOfAllSamples() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "uncontended", 1, 1000, 100, 100));
        t.add(run("leasehold", "uncontended", 2, 3000, 100, 100));
        t.add(run("leasehold", "uncontended", 3, 2000, 100, 5000));
        ResultTable.Row row = t.rows().get(0);
        assertEquals(3, row.runs());
        assertEquals(200.0, row.medianCyclesPerSecond(), 1e-9);
        assertEquals(100.0, row.minCyclesPerSecond(), 1e-9);
        assertEquals(300.0, row.maxCyclesPerSecond(), 1e-9);
        assertEquals(6, row.samples());
        assertEquals(100.0, row.p50(), 0.1);
        assertEquals(5000.0, row.p99(), 5.0);
        assertEquals(2.5, ResultTable.median(new double[] {1, 2, 3, 4}), 1e-9);
    }

    @Test
    void goalsAreJudgedAgainstTheBestRedisAndEveryPeer() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "uncontended", 1, 50_000, 300));
        t.add(run("redis-jedis", "uncontended", 1, 20_000, 400));
        t.add(run("redis-lettuce", "uncontended", 1, 30_000, 200));
        t.add(run("etcd", "uncontended", 1, 1_000, 9000));
        t.add(run("leasehold-echo", "uncontended", 1, 90_000, 10));
        t.add(run("leasehold", "single", 1, 5_000, 50));
        t.add(run("redis-jedis", "single", 1, 6_000, 40));
        t.add(run("redis-lettuce", "single", 1, 4_000, 60));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        ResultTable.Goal redis = goals.get("uncontended ≥ 2× best Redis (redis-lettuce)");
        assertFalse(redis.met(), redis.figures());
        assertTrue(redis.figures().contains("×1.67"), redis.figures());
        assertTrue(goals.get("uncontended ≥ 30× etcd").met());
        assertFalse(goals.get("single-thread acquire p50 ≤ best Redis (redis-jedis)").met());
        // p99 is compared with the lowest peer p99 (redis-lettuce, 200 µs), never with the echo ceiling.
        ResultTable.Goal p99 = goals.get("uncontended: acquire p99 below every peer's (lowest: redis-lettuce)");
        assertFalse(p99.met(), p99.figures());
        assertTrue(goals.get("single: acquire p99 below every peer's (lowest: redis-jedis)") != null);
        assertFalse(goals.containsKey("uncontended ≥ 30× zookeeper"), "a system not measured is not judged");
    }

    @Test
    void eachLeaseholdTransportIsJudgedOnItsOwn() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "single", 1, 5_000, 90));
        t.add(run("leasehold-socket", "single", 1, 18_000, 25));
        t.add(run("leasehold-socket-echo", "single", 1, 25_000, 18));
        t.add(run("redis-jedis", "single", 1, 8_000, 60));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        assertFalse(goals.get("single-thread acquire p50 ≤ best Redis (redis-jedis)").met());
        ResultTable.Goal socket = goals.get("leasehold-socket: single-thread acquire p50 ≤ best Redis (redis-jedis)");
        assertTrue(socket.met(), socket.figures());
        assertEquals("25 µs vs 60 µs", socket.figures());
        assertTrue(goals.get("leasehold-socket: single: acquire p99 below every peer's (lowest: redis-jedis)").met());
        // The socket echo is a ceiling, neither judged nor a peer.
        assertTrue(goals.keySet().stream().noneMatch(g -> g.contains("echo")), goals.keySet().toString());
        assertEquals("| ≤ redis-jedis | 60 µs | leasehold-socket-echo | 18 µs |",
                t.markdownCeilings().lines().toList().get(2));
    }

    @Test
    void ceilingsAreNeverPeersAndAreSetBesideWhatTheGoalAsks() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "uncontended", 1, 300_000, 900));
        t.add(run("redis-lettuce", "uncontended", 1, 400_000, 700));
        t.add(run("redis-lettuce-ping", "uncontended", 1, 550_000, 100));
        t.add(run("local-handoff", "uncontended", 1, 880_000, 50));
        t.add(run("etcd", "uncontended", 1, 40_000, 7000));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        // The p99 goal is judged against the lock (700 µs), not the PING (100 µs) or the hand-off (50 µs).
        ResultTable.Goal p99 = goals.get("uncontended: acquire p99 below every peer's (lowest: redis-lettuce)");
        assertFalse(p99.met(), p99.figures());
        assertTrue(p99.figures().endsWith("vs 700 µs"), p99.figures());
        // And the best Redis is the lock client, not its PING.
        assertTrue(goals.containsKey("uncontended ≥ 2× best Redis (redis-lettuce)"), goals.keySet().toString());
        List<String> lines = t.markdownCeilings().lines().toList();
        assertEquals(4, lines.size(), t.markdownCeilings());
        assertEquals("| 2× redis-lettuce | 80 000 | redis-lettuce-ping | 55 000 | ×0.69 | 88 000 | ×1.10 |", lines.get(2));
        assertEquals("| 30× etcd | 120 000 | redis-lettuce-ping | 55 000 | ×0.46 | 88 000 | ×0.73 |", lines.get(3));
        assertEquals("", new ResultTable().markdownCeilings(), "nothing measured, no table");

        ResultTable single = new ResultTable();
        single.add(run("redis-jedis", "single", 1, 7_000, 62));
        single.add(run("redis-lettuce", "single", 1, 6_000, 74));
        single.add(run("java-socket-echo", "single", 1, 8_000, 63));
        single.add(run("local-handoff", "single", 1, 11_000, 43));
        assertEquals(List.of("| single-thread goal | asks (acquire p50) | lowest over loopback, no lock | p50 |",
                "|---|---:|---|---:|", "| ≤ redis-jedis | 62 µs | java-socket-echo | 63 µs |"),
                single.markdownCeilings().lines().toList());
    }

    @Test
    void theEtcdBackendIsJudgedAgainstJetcdsLockInEachWorkload() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold-etcd", "uncontended", 1, 16_000, 900));
        t.add(run("etcd", "uncontended", 1, 10_000, 1000));
        t.add(run("etcd-txn", "uncontended", 1, 30_000, 300));
        t.add(run("leasehold-etcd", "contended", 1, 20_000, 2000));
        t.add(run("etcd", "contended", 1, 10_000, 1500));
        t.add(run("leasehold-etcd", "single", 1, 1_000, 500));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        ResultTable.Goal uncontended = goals.get("leasehold-etcd: uncontended ≥ 1.5× jetcd Lock (etcd)");
        assertTrue(uncontended.met(), uncontended.figures());
        assertTrue(uncontended.figures().endsWith("= ×1.60"), uncontended.figures());
        assertTrue(goals.get("leasehold-etcd: uncontended: acquire p99 below jetcd Lock's").met());
        assertTrue(goals.get("leasehold-etcd: contended ≥ 1.5× jetcd Lock (etcd)").met());
        ResultTable.Goal p99 = goals.get("leasehold-etcd: contended: acquire p99 below jetcd Lock's");
        assertFalse(p99.met(), p99.figures());
        assertFalse(goals.containsKey("leasehold-etcd: single ≥ 1.5× jetcd Lock (etcd)"), "no Lock row, no goal");
        // Below 1.5× is not met even when faster than the Lock.
        ResultTable close = new ResultTable();
        close.add(run("leasehold-etcd", "single", 1, 14_000, 900));
        close.add(run("etcd", "single", 1, 10_000, 1000));
        assertFalse(goalsByName(close).get("leasehold-etcd: single ≥ 1.5× jetcd Lock (etcd)").met());
        // The etcd backend is not judged against Redis, and the plain transaction is no goal of its own.
        assertTrue(goals.keySet().stream().allMatch(g -> g.startsWith("leasehold-etcd: ")), goals.keySet().toString());
        assertTrue(goals.keySet().stream().noneMatch(g -> g.contains("etcd-txn")), goals.keySet().toString());
        assertEquals(List.of("| workload | system | cycles/s | / Lock | acquire p50 | / Lock | p99 | / Lock |",
                "|---|---|---:|---:|---:|---:|---:|---:|",
                "| uncontended | leasehold-etcd | 1 600 | ×1.60 | 900 µs | ×0.90 | 900 µs | ×0.90 |",
                "| uncontended | etcd | 1 000 | ×1.00 | 1.00 ms | ×1.00 | 1.00 ms | ×1.00 |",
                "| uncontended | etcd-txn | 3 000 | ×3.00 | 300 µs | ×0.30 | 300 µs | ×0.30 |",
                "| contended | leasehold-etcd | 2 000 | ×2.00 | 2.00 ms | ×1.33 | 2.00 ms | ×1.33 |",
                "| contended | etcd | 1 000 | ×1.00 | 1.50 ms | ×1.00 | 1.50 ms | ×1.00 |"),
                t.markdownEtcdBackend().lines().toList());
        assertEquals("", new ResultTable().markdownEtcdBackend());
    }

    @Test
    void writesCsvMarkdownAndChart(@TempDir Path dir) throws Exception {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "uncontended", 1, 50_000, 300));
        t.add(run("redis-jedis", "uncontended", 1, 20_000, 400));
        t.add(run("leasehold", "single", 1, 5_000, 50));
        List<String> csv = t.summaryCsv().lines().toList();
        assertEquals(4, csv.size());
        assertTrue(csv.get(1).startsWith("uncontended,leasehold,1,5000.0,"), csv.get(1));
        assertTrue(t.markdownTable().contains("| uncontended | redis-jedis | 2 000 |"), t.markdownTable());
        Path png = dir.resolve("chart.png");
        Charts.write(t, "test", png);
        byte[] bytes = Files.readAllBytes(png);
        assertTrue(bytes.length > 1000 && bytes[1] == 'P' && bytes[2] == 'N' && bytes[3] == 'G', "a PNG file");
    }
}
