package org.leasehold.samples.ledger.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

/**
 * The README's run command, end to end for a few seconds: Payara Micro, the adapter, the ledger, the check (the log
 * replayed and compared with the balances view); then the server restarted on the same store, whose first transfer
 * reads the balances from the view's snapshot and the entries after it.
 */
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
        assertTrue(text.matches("(?s).*the balances view \\(snapshot at \\S+ plus [0-9]+ entries\\) gives the same "
                + "balances: OK.*"), text);
        assertTrue(text.matches("(?s).*Restarted: the first transfer \\((DONE|DECLINED) after [0-9]+ tries\\) read the "
                + "balances from the view: the snapshot at [0-9T:.-]+Z plus [0-9]+ entries after it, of the [0-9]+ in the "
                + "log: OK.*"), text);
        assertTrue(text.contains("equal the view's: OK"), text);
    }
}
