package org.leasehold.samples.ledger.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** The benchmark mode's options, checked before anything starts (no server here). */
class BenchOptionsTest {

    private static XaBenchmark.Settings settings(String... args) {
        LedgerRunner runner = new LedgerRunner(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        new CommandLine(runner).parseArgs(args);
        return runner.benchSettings();
    }

    @Test
    void theDefaultsAreTheDocumentedWorkloads() {
        XaBenchmark.Settings s = settings("--sample-dir=x", "--workload=bench");
        assertEquals(List.of(new XaBenchmark.Workload(16, 100_000), new XaBenchmark.Workload(16, 4),
                new XaBenchmark.Workload(1, 100_000)), s.workloads());
        assertEquals(Duration.ofSeconds(20), s.warmup());
        assertEquals(Duration.ofSeconds(20), s.duration());
        assertEquals(3, s.runs());
        assertFalse(s.postgres());
        assertFalse(s.empty());
        assertEquals(List.of(XaBenchmark.Side.LEASEHOLD), s.sides());
        assertEquals(100_000, s.maxKeys());
    }

    @Test
    void givenListsReplaceTheDefaultsAndPairByPosition() {
        XaBenchmark.Settings s = settings("--sample-dir=x", "--workload=bench", "--bench-threads=8,2",
                "--bench-keys=1000,1", "--duration=PT5S", "--runs=1", "--pg-url=jdbc:postgresql://127.0.0.1:5/b",
                "--bench-empty");
        assertEquals(List.of(new XaBenchmark.Workload(8, 1000), new XaBenchmark.Workload(2, 1)), s.workloads());
        assertEquals(Duration.ofSeconds(5), s.duration());
        assertTrue(s.postgres());
        assertEquals(List.of(XaBenchmark.Side.LEASEHOLD, XaBenchmark.Side.POSTGRES, XaBenchmark.Side.EMPTY), s.sides());
    }

    @Test
    void theLeaseholdSideTakesTheLeaseServiceGiven() {
        LedgerRunner runner = new LedgerRunner(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        new CommandLine(runner).parseArgs("--sample-dir=x", "--workload=bench");
        runner.benchSettings();
        assertFalse(runner.benchPoolCommand(java.nio.file.Path.of("run")).contains("LeaseService"),
                "embedded by default: the adapter's own default");
        runner = new LedgerRunner(new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        new CommandLine(runner).parseArgs("--sample-dir=x", "--workload=bench",
                "--bench-lease-service=remote:127.0.0.1:7420");
        runner.benchSettings();
        String pool = runner.benchPoolCommand(java.nio.file.Path.of("run"));
        assertTrue(pool.contains(":Log=bench:LeaseService=remote\\:127.0.0.1\\:7420 BenchLeasePool"), pool);
        CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class, () -> settings(
                "--sample-dir=x", "--workload=bench", "--bench-lease-service=127.0.0.1:7420"));
        assertTrue(e.getMessage().contains("remote:HOST:PORT"), e.getMessage());
    }

    @Test
    void badOptionsAreRefusedWithAReason() {
        CommandLine.ParameterException e = assertThrows(CommandLine.ParameterException.class,
                () -> settings("--sample-dir=x", "--workload=bench", "--bench-threads=16"));
        assertTrue(e.getMessage().contains("one key count per thread count"), e.getMessage());
        assertThrows(CommandLine.ParameterException.class,
                () -> settings("--sample-dir=x", "--workload=bench", "--bench-threads=0", "--bench-keys=4"));
        assertThrows(CommandLine.ParameterException.class,
                () -> settings("--sample-dir=x", "--workload=bench", "--runs=0"));
        e = assertThrows(CommandLine.ParameterException.class,
                () -> settings("--sample-dir=x", "--workload=bench", "--pg-url=postgres://h/db"));
        assertTrue(e.getMessage().contains("jdbc:postgresql:"), e.getMessage());
    }
}
