package org.leasehold.samples.ledger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import picocli.CommandLine;

class StandaloneLedgerTest {

    @Test
    void runsTransfersAndTheJournalChecksOut() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        int exit = new CommandLine(new StandaloneLedger(out)).execute("--accounts=6", "--threads=4", "--duration=PT1S",
                "--data=target/ledger-test-data");
        String text = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, text);
        assertTrue(text.contains(": OK"), text);
        assertTrue(text.matches("(?s).*transfers committed: [1-9][0-9]*.*"), text);
        assertTrue(text.contains("entries read back"), text);
        assertTrue(text.contains("replay and view equal live balances: OK"), text);
        assertTrue(text.matches("(?s).*view 'balances': snapshot at \\S+ plus [0-9]+ entries after it.*"), text);
    }

    @Test
    void theCheckCatchesAJournalOutOfLeaseOrder() {
        StandaloneLedger ledger = new StandaloneLedger(System.out);
        ledger.accounts = 2;
        ledger.openingBalance = 10;
        List<StandaloneLedger.Entry> journal = new ArrayList<>();
        journal.add(new StandaloneLedger.Entry(100, 0, 1, 5, 2, 2, "t1"));
        journal.add(new StandaloneLedger.Entry(200, 0, 1, 8, 1, 3, "t2"));
        List<String> problems = ledger.check(journal, new long[] {-3, 23});
        assertTrue(problems.stream().anyMatch(p -> p.contains("below zero")), problems.toString());
        assertTrue(problems.stream().anyMatch(p -> p.contains("follows one at")), problems.toString());
    }

    @Test
    void badArgumentsAreExplained() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        CommandLine cmd = new CommandLine(new StandaloneLedger(System.out));
        cmd.setErr(new java.io.PrintWriter(err, true, StandardCharsets.UTF_8));
        int exit = cmd.execute("--accounts=1");
        assertEquals(2, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("at least 2 accounts"), err.toString(StandardCharsets.UTF_8));
    }
}
