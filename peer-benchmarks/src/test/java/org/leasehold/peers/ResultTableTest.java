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
        t.add(run("etcd-lease-lock", "uncontended", 1, 5_000, 1200));
        t.add(run("leasehold-etcd", "single", 1, 1_000, 500));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        String session = "jetcd Lock, session lease (etcd)";
        String perLock = "jetcd Lock, a lease per lock (etcd-lease-lock)";
        ResultTable.Goal uncontended = goals.get("leasehold-etcd: uncontended ≥ 1.5× " + session);
        assertTrue(uncontended.met(), uncontended.figures());
        assertTrue(uncontended.figures().endsWith("= ×1.60"), uncontended.figures());
        assertTrue(goals.get("leasehold-etcd: uncontended: acquire p99 below " + session).met());
        ResultTable.Goal leasePerLock = goals.get("leasehold-etcd: uncontended ≥ 1.5× " + perLock);
        assertTrue(leasePerLock.figures().endsWith("= ×3.20"), leasePerLock.figures());
        assertTrue(goals.get("leasehold-etcd: uncontended: acquire p99 below " + perLock).met());
        assertTrue(goals.get("leasehold-etcd: contended ≥ 1.5× " + session).met());
        ResultTable.Goal p99 = goals.get("leasehold-etcd: contended: acquire p99 below " + session);
        assertFalse(p99.met(), p99.figures());
        assertFalse(goals.containsKey("leasehold-etcd: contended ≥ 1.5× " + perLock), "no lease-per-lock row, no goal");
        assertFalse(goals.containsKey("leasehold-etcd: single ≥ 1.5× " + session), "no Lock row, no goal");
        // Below 1.5× is not met even when faster than the Lock.
        ResultTable close = new ResultTable();
        close.add(run("leasehold-etcd", "single", 1, 14_000, 900));
        close.add(run("etcd", "single", 1, 10_000, 1000));
        assertFalse(goalsByName(close).get("leasehold-etcd: single ≥ 1.5× " + session).met());
        // The etcd backend is not judged against Redis, and the plain transaction is no goal of its own.
        assertTrue(goals.keySet().stream().allMatch(g -> g.startsWith("leasehold-etcd: ")), goals.keySet().toString());
        assertTrue(goals.keySet().stream().noneMatch(g -> g.contains("etcd-txn")), goals.keySet().toString());
        assertEquals(List.of("| workload | system | cycles/s | / Lock | acquire p50 | / Lock | p99 | / Lock |",
                "|---|---|---:|---:|---:|---:|---:|---:|",
                "| uncontended | leasehold-etcd | 1 600 | ×1.60 | 900 µs | ×0.90 | 900 µs | ×0.90 |",
                "| uncontended | etcd | 1 000 | ×1.00 | 1.00 ms | ×1.00 | 1.00 ms | ×1.00 |",
                "| uncontended | etcd-txn | 3 000 | ×3.00 | 300 µs | ×0.30 | 300 µs | ×0.30 |",
                "| uncontended | etcd-lease-lock | 500 | ×0.50 | 1.20 ms | ×1.20 | 1.20 ms | ×1.20 |",
                "| contended | leasehold-etcd | 2 000 | ×2.00 | 2.00 ms | ×1.33 | 2.00 ms | ×1.33 |",
                "| contended | etcd | 1 000 | ×1.00 | 1.50 ms | ×1.00 | 1.50 ms | ×1.00 |"),
                t.markdownEtcdBackend().lines().toList());
        assertEquals("", new ResultTable().markdownEtcdBackend());
    }

    @Test
    void signingIsJudgedAgainstTheSameTransportWithoutSigning() {
        ResultTable t = new ResultTable();
        t.add(run("leasehold", "uncontended", 1, 450_000, 700));
        t.add(run("leasehold-nosign", "uncontended", 1, 500_000, 650));
        t.add(run("leasehold-socket", "uncontended", 1, 440_000, 600));
        t.add(run("leasehold-socket-nosign", "uncontended", 1, 500_000, 600));
        t.add(run("leasehold-socket", "single", 1, 400_000, 22));
        t.add(run("leasehold-socket-nosign", "single", 1, 450_000, 11));
        t.add(run("leasehold", "single", 1, 60_000, 80));
        t.add(run("leasehold-nosign", "single", 1, 62_000, 75));
        t.add(run("redis-lettuce", "uncontended", 1, 600_000, 500));
        Map<String, ResultTable.Goal> goals = goalsByName(t);
        ResultTable.Goal grpc = goals.get("leasehold: uncontended with signing ≥ 90 % of leasehold-nosign");
        assertTrue(grpc.met(), grpc.figures());
        assertTrue(grpc.figures().endsWith("= ×0.90"), grpc.figures());
        ResultTable.Goal socket = goals.get("leasehold-socket: uncontended with signing ≥ 90 % of leasehold-socket-nosign");
        assertFalse(socket.met(), socket.figures());
        ResultTable.Goal p50 = goals.get("leasehold-socket: single-thread acquire p50 with signing ≤ "
                + "leasehold-socket-nosign's + 10 µs");
        assertFalse(p50.met(), p50.figures());
        assertEquals("22 µs vs 11 µs (+11.0 µs)", p50.figures());
        assertTrue(goals.get("leasehold: single-thread acquire p50 with signing ≤ leasehold-nosign's + 10 µs").met());
        // The servers without signing are neither judged against Redis nor peers.
        assertTrue(goals.keySet().stream().noneMatch(g -> g.startsWith("leasehold-nosign")
                || g.startsWith("leasehold-socket-nosign") || g.contains("lowest: leasehold")), goals.keySet().toString());
        assertEquals(6, goals.keySet().stream().filter(g -> g.contains("with signing")).count(), goals.keySet().toString());
        List<String> lines = t.markdownSigning().lines().toList();
        assertEquals(6, lines.size(), t.markdownSigning());
        assertEquals("| uncontended | leasehold | 45 000 | leasehold-nosign | 50 000 | 90.0 % | 700 µs | 650 µs | +50.2 µs "
                + "| 700 µs | 650 µs |", lines.get(2));
        assertEquals("| single | leasehold-socket | 40 000 | leasehold-socket-nosign | 45 000 | 88.9 % | 22 µs | 11 µs "
                + "| +11.0 µs | 22 µs | 11 µs |", lines.get(4));
        ResultTable alone = new ResultTable();
        alone.add(run("leasehold", "single", 1, 60_000, 80));
        assertEquals("", alone.markdownSigning(), "no server without signing, no table");
        assertTrue(alone.goals().stream().noneMatch(g -> g.goal().contains("signing")));
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
