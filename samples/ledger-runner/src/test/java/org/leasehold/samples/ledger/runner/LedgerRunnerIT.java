package org.leasehold.samples.ledger.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.cli.verify.Finding;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.fs.NfsSafeFiles;

import picocli.CommandLine;

/**
 * The README's run command, end to end for a few seconds: Payara Micro, the adapter, the ledger, the check (the log
 * replayed and compared with the balances view); then the server restarted on the same store, whose first transfer
 * reads the balances from the view's snapshot and the entries after it. Last, {@code leasehold verify}'s
 * {@link LogVerifier} proves every log the two servers wrote from the stored bytes and the keys their embedded engines
 * published: every message's witnesses signed, chained, within their leases and their signed times.
 */
class LedgerRunnerIT {

    @Test
    void theSampleRunsAndItsBalancesCheckOut() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int exit = new CommandLine(new LedgerRunner(out)).execute("--sample-dir=" + System.getProperty("sample.dir"),
                "--accounts=6", "--threads=6", "--duration=PT3S");
        String text = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(text);
        assertEquals(0, exit, text);
        assertTrue(text.contains("lease order: OK"), text);
        assertTrue(text.matches("(?s).*Transactions: [1-9][0-9]* committed.*"), text);
        assertTrue(text.matches("(?s).*MicroProfile Metrics \\(/metrics\\): leasehold_commits\\S* [1-9].*"), text);
        assertTrue(text.matches("(?s).*the balances view \\(snapshot at \\S+ plus [0-9]+ entries\\) gives the same "
                + "balances: OK.*"), text);
        assertTrue(text.matches("(?s).*Restarted: the first transfer \\((DONE|DECLINED) after [0-9]+ tries\\) read the "
                + "balances from the view: the snapshot at [0-9T:.-]+Z plus [0-9]+ entries after it, of the [0-9]+ in the "
                + "log: OK.*"), text);
        assertTrue(text.contains("equal the view's: OK"), text);
        verifyTheLogs(Path.of(System.getProperty("sample.dir")));
    }

    /** The bag store of this JVM's run under {@code sampleDir}, every log of it verified. */
    private static void verifyTheLogs(Path sampleDir) throws Exception {
        Path run;
        try (Stream<Path> s = Files.list(sampleDir)) {
            run = s.filter(p -> p.getFileName().toString().startsWith("run-" + ProcessHandle.current().pid() + "-"))
                    .max(Comparator.comparing(p -> p.getFileName().toString())).orElseThrow();
        }
        Path store = PayaraMicro.bagStore(run);
        KeySet keys = PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(store));
        assertTrue(!keys.isEmpty(), "the embedded engines published their keys under " + store);
        List<Finding> findings = new ArrayList<>();
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keys, 1_000_000, true), findings::add, null);
        List<String> logs;
        try (Stream<Path> s = Files.list(store)) {
            logs = s.filter(Files::isDirectory).map(p -> p.getFileName().toString()).filter(n -> !n.startsWith("."))
                    .sorted().toList();
        }
        for (String log : logs) {
            v.verifyLog(store, log);
        }
        v.finish();
        System.out.println("leasehold verify over " + logs + ": " + v.count(LogVerifier.Counter.MESSAGES)
                + " messages, " + v.count(LogVerifier.Counter.WITNESSES) + " witnesses, " + v.grants() + " grants, "
                + findings.size() + " findings");
        assertEquals(List.of(), findings, "the logs the servers wrote verify");
        assertTrue(v.count(LogVerifier.Counter.MESSAGES) > 0, "messages were verified");
        assertEquals(0, v.count(LogVerifier.Counter.MISSING_WITNESSES), "every lease on a frame carries its witness");
    }
}
