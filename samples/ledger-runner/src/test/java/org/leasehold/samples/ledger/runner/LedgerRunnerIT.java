package org.leasehold.samples.ledger.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/** The README's run command, end to end for a few seconds: Payara Micro, the adapter, the ledger, the check. */
class LedgerRunnerIT {

    @Test
    void theSampleRunsAndItsBalancesCheckOut() {
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
    }
}
