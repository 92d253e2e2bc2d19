package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseMode;

/**
 * The prepare journal on a real directory: what a branch recorded at its prepare comes back whole after a reopen,
 * every outcome leaves the branch resolved or heuristic as it says, and a torn or damaged tail ends the file.
 */
class PrepareJournalTest {
    private static final Instant T0 = Instant.parse("2026-03-01T10:00:00.000001Z");

    private static XidKey xid(int n) {
        return new XidKey(77, ("g-" + n).getBytes(StandardCharsets.UTF_8), new byte[] {(byte) n, 2});
    }

    private static PrepareJournal open(Path root) throws IOException {
        return new PrepareJournal(new NfsSafeFiles(), root, "ledger", "writer-a");
    }

    private static Path dir(Path root) {
        return root.resolve(".leasehold").resolve("journal").resolve("ledger").resolve("writer-a");
    }

    private static LeaseStamp stamp(String name, long generation, Instant predecessorExpiredAt) {
        return new LeaseStamp(name, generation, T0.minusSeconds(1), T0.plusSeconds(9), T0.plusMillis(3),
                predecessorExpiredAt, null);
    }

    private static final PrepareJournal.Holding HOLDING = new PrepareJournal.Holding(
            new HolderId("proc-1", "tx/abc"), List.of(LeaseMode.SHARED, LeaseMode.semaphore(3)),
            List.of(new CorrelationId(5, 6), CorrelationId.NONE));

    private static void assertSameEntry(PrepareJournal.Entry want, PrepareJournal.Entry got) {
        assertEquals(want.xid(), got.xid());
        assertEquals(want.state(), got.state());
        assertEquals(want.preparedAt(), got.preparedAt());
        assertEquals(want.leases().size(), got.leases().size());
        for (int i = 0; i < want.leases().size(); i++) {
            LeaseStamp w = want.leases().get(i);
            LeaseStamp g = got.leases().get(i);
            assertEquals(List.of(w.name(), w.generation(), w.floor(), w.deadline(), w.writableFrom()),
                    List.of(g.name(), g.generation(), g.floor(), g.deadline(), g.writableFrom()));
            assertEquals(w.predecessorExpiredAt(), g.predecessorExpiredAt());
        }
        assertEquals(want.payloads().size(), got.payloads().size());
        for (int i = 0; i < want.payloads().size(); i++) {
            assertArrayEquals(want.payloads().get(i), got.payloads().get(i));
        }
        assertEquals(want.holding(), got.holding());
    }

    @Test
    void aPreparedBranchComesBackWholeAfterAReopenInANewFile() throws Exception {
        Path root = AdapterFixture.freshRoot("journal-whole");
        List<LeaseStamp> stamps = List.of(stamp("a/1", 7, null), stamp("b/ü", 1L << 40, T0.minusMillis(250)));
        List<byte[]> payloads = List.of("first".getBytes(StandardCharsets.UTF_8), new byte[0], new byte[] {-1, 0, 1});
        PrepareJournal.Entry written;
        try (PrepareJournal j = open(root)) {
            assertEquals(dir(root).resolve("journal.1"), j.file());
            j.prepared(xid(1), T0, stamps, payloads, HOLDING);
            written = j.get(xid(1));
            assertEquals(PrepareJournal.Type.PREPARED, written.state());
            assertEquals(List.of(written), j.unresolved());
        }
        try (PrepareJournal j = open(root)) {
            assertEquals(dir(root).resolve("journal.2"), j.file(), "a new file at each open");
            assertSameEntry(written, j.get(xid(1)));
            assertEquals(1, j.unresolved().size());
        }
    }

    @Test
    void aHoldingOfEmptyIdsAndNoLeaseIsReadBackNotTakenForTheEarlierLayout() throws Exception {
        Path root = AdapterFixture.freshRoot("journal-empty-holding");
        PrepareJournal.Holding empty = new PrepareJournal.Holding(new HolderId("", ""), List.of(), List.of());
        try (PrepareJournal j = open(root)) {
            j.prepared(xid(1), T0, List.of(), List.of(), empty);
            j.prepared(xid(2), T0, List.of(), List.of(), null);
        }
        try (PrepareJournal j = open(root)) {
            assertEquals(empty, j.get(xid(1)).holding(), "four bytes of holding are a holding");
            assertNull(j.get(xid(2)).holding(), "a record of the earlier layout has none");
        }
    }

    @Test
    void everyOutcomeResolvesOrKeepsTheBranchAsItSaysBeforeAndAfterAReopen() throws Exception {
        Path root = AdapterFixture.freshRoot("journal-outcomes");
        Instant later = T0.plusSeconds(5);
        List<LeaseStamp> stamps = List.of(stamp("n", 3, null), stamp("o", 4, null));
        List<byte[]> payloads = List.of("m".getBytes(StandardCharsets.UTF_8));
        try (PrepareJournal j = open(root)) {
            for (int n = 1; n <= 6; n++) {
                j.prepared(xid(n), T0, stamps, payloads, HOLDING);
            }
            j.outcome(xid(1), PrepareJournal.Type.COMMITTED, later);
            j.outcome(xid(2), PrepareJournal.Type.ROLLED_BACK, later);
            j.outcome(xid(3), PrepareJournal.Type.HEURISTIC_ROLLBACK, later);
            j.outcome(xid(4), PrepareJournal.Type.HEURISTIC_COMMIT, later);
            j.outcome(xid(5), PrepareJournal.Type.HEURISTIC_ROLLBACK, later);
            j.outcome(xid(5), PrepareJournal.Type.FORGOTTEN, later);
            // xid(6) stays prepared; xid(7) was never prepared here: a heuristic outcome alone.
            j.outcome(xid(7), PrepareJournal.Type.HEURISTIC_COMMIT, later);
            assertOutcomes(j, later);
        }
        try (PrepareJournal j = open(root)) {
            assertOutcomes(j, later);
        }
    }

    private static void assertOutcomes(PrepareJournal j, Instant later) {
        assertNull(j.get(xid(1)), "committed: resolved");
        assertNull(j.get(xid(2)), "rolled back: resolved");
        assertNull(j.get(xid(5)), "forgotten: resolved");
        PrepareJournal.Entry hr = j.get(xid(3));
        assertEquals(PrepareJournal.Type.HEURISTIC_ROLLBACK, hr.state());
        assertEquals(T0, hr.preparedAt(), "a heuristic outcome keeps what the prepare recorded");
        assertEquals("n", hr.leases().get(0).name());
        assertEquals(1, hr.payloads().size());
        assertEquals(HOLDING, hr.holding());
        assertEquals(PrepareJournal.Type.HEURISTIC_COMMIT, j.get(xid(4)).state());
        assertEquals(PrepareJournal.Type.PREPARED, j.get(xid(6)).state());
        PrepareJournal.Entry alone = j.get(xid(7));
        assertEquals(PrepareJournal.Type.HEURISTIC_COMMIT, alone.state());
        assertEquals(later, alone.preparedAt());
        assertEquals(List.of(), alone.leases());
        assertNull(alone.holding());
        assertEquals(List.of(xid(3), xid(4), xid(6), xid(7)), j.unresolved().stream().map(PrepareJournal.Entry::xid)
                .toList());
    }

    @Test
    void theFilesAreReadInTheOrderTheyWereWrittenTwelveAndMore() throws Exception {
        Path root = AdapterFixture.freshRoot("journal-order");
        // Each file prepares a branch; the next one commits it (journal.10 comes after journal.9, not after journal.1).
        for (int n = 1; n <= 12; n++) {
            try (PrepareJournal j = open(root)) {
                assertEquals(dir(root).resolve("journal." + n), j.file());
                if (n > 1) {
                    j.outcome(xid(n - 1), PrepareJournal.Type.COMMITTED, T0);
                }
                j.prepared(xid(n), T0, List.of(), List.of(), null);
            }
        }
        try (PrepareJournal j = open(root)) {
            assertEquals(List.of(xid(12)), j.unresolved().stream().map(PrepareJournal.Entry::xid).toList());
        }
    }

    @Test
    void aTornOrDamagedTailEndsTheFileAndOtherFilesAreIgnored() throws Exception {
        Path root = AdapterFixture.freshRoot("journal-torn");
        try (PrepareJournal j = open(root)) {
            j.prepared(xid(1), T0, List.of(stamp("kept", 1, null)), List.of(), null);
        }
        Path first = dir(root).resolve("journal.1");
        long good = Files.size(first);
        // Journal 2: one good record, then the same record with its last body byte changed (checksum mismatch).
        try (PrepareJournal j = open(root)) {
            j.prepared(xid(2), T0, List.of(), List.of(), null);
            j.prepared(xid(3), T0, List.of(), List.of(), null);
        }
        Path second = dir(root).resolve("journal.2");
        byte[] two = Files.readAllBytes(second);
        two[two.length - 1] ^= 1;
        Files.write(second, two);
        // Journal 1: a torn record after the good one (a header whose length runs past the end).
        Files.write(first, new byte[] {0x4c, 0x48, 0x4a, 0x31, 0, 0, 0, 100, 1, 2, 3, 4, 5}, StandardOpenOption.APPEND);
        Files.write(dir(root).resolve("journal.notes"), "an operator's note".getBytes(StandardCharsets.UTF_8));
        Files.write(dir(root).resolve("README"), "x".getBytes(StandardCharsets.UTF_8));
        try (PrepareJournal j = open(root)) {
            assertEquals(dir(root).resolve("journal.3"), j.file());
            assertEquals("kept", j.get(xid(1)).leases().get(0).name());
            assertEquals(PrepareJournal.Type.PREPARED, j.get(xid(2)).state());
            assertNull(j.get(xid(3)), "a record whose checksum does not match is not read");
        }
        assertEquals(good + 13, Files.size(first), "an earlier file is never appended to");
        // A record whose magic is wrong ends the file too, records after it included.
        byte[] one = Files.readAllBytes(first);
        one[0] = 0;
        Files.write(first, one);
        // And a header whose length is negative.
        Files.write(dir(root).resolve("journal.3"), new byte[] {0x4c, 0x48, 0x4a, 0x31, -1, -1, -1, -1, 0, 0, 0, 0});
        try (PrepareJournal j = open(root)) {
            assertNull(j.get(xid(1)));
            assertEquals(PrepareJournal.Type.PREPARED, j.get(xid(2)).state());
            assertEquals(dir(root).resolve("journal.4"), j.file());
        }
    }
}
