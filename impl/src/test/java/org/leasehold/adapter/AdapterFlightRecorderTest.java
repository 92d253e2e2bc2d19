package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.SealReport;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;

/**
 * The adapter's and the bag store's flight recorder events, recorded for real: a JFR recording around a two-phase
 * transaction (a second XA resource beside ours), a refused acquisition, a seal and a read, dumped under
 * {@code target/} and read back field by field.
 */
class AdapterFlightRecorderTest {
    private static final List<String> EVENTS = List.of("org.leasehold.Acquire", "org.leasehold.Prepare",
            "org.leasehold.Commit", "org.leasehold.Rollback", "org.leasehold.Seal", "org.leasehold.Read");

    private AdapterFixture fx;

    @BeforeEach
    void start() throws Exception {
        fx = new AdapterFixture("jfr", mcf -> { });
    }

    @AfterEach
    void stop() {
        fx.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private Recording recording;

    @AfterEach
    void closeRecording() {
        if (recording != null) {
            recording.close();
        }
    }

    private Recording record(List<String> enabled) {
        recording = new Recording();
        EVENTS.forEach(recording::disable);
        enabled.forEach(recording::enable);
        recording.start();
        return recording;
    }

    private List<RecordedEvent> dump(Recording r, String name) throws Exception {
        r.stop();
        Path file = fx.root.resolve(name + ".jfr");
        r.dump(file);
        assertTrue(Files.size(file) > 0, "the recording was written to " + file);
        return RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().startsWith("org.leasehold."))
                .sorted(Comparator.comparing(RecordedEvent::getStartTime)).toList();
    }

    private static List<RecordedEvent> named(List<RecordedEvent> events, String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }

    @Test
    void aTwoPhaseTransactionASealAndAReadAreRecordedWithWhatHappened() throws Exception {
        Recording r = record(EVENTS);

        AdapterTransactionTest.OtherResource other = new AdapterTransactionTest.OtherResource();
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        Lease lease;
        try (LeaseConnection c = fx.connection()) {
            lease = c.acquire("account/1", "account/2");
            c.append(bytes("debit 1 by 5"), bytes("credit 2 by 5"));
        }
        fx.tm.commit();
        Lease intruder = fx.mcf.runtime().leases().acquire(LeaseRequest.builder(new HolderId("intruder", "t"),
                "account/9").build());
        try (LeaseConnection c = fx.connection()) {
            assertThrows(LeaseBusyException.class, () -> c.acquire(LeaseOptions.of("account/9").waitFor(Duration.ZERO)));
        }
        fx.mcf.runtime().leases().release(intruder, null, null);
        assertEquals(List.of("start", "end", "prepare", "commit"), other.calls, "two phases ran");

        Message m = fx.messages().get(0);
        fx.time.advance(Duration.ofHours(1));
        String log = fx.rm().log();
        SealReport sealed = fx.mcf.runtime().store().sealThrough(log, m.timestamp(), m.timestamp().plusNanos(1_000));
        SealReport.BucketSeal bucket = sealed.buckets().get(0);
        fx.mcf.runtime().store().sealThrough(log, m.timestamp(), m.timestamp().plusNanos(1_000));
        List<Message> read = fx.messages();
        assertEquals(2, read.size());

        List<RecordedEvent> events = dump(r, "two-phase");

        List<RecordedEvent> acquires = named(events, "org.leasehold.Acquire");
        assertEquals(2, acquires.size(), "two acquisitions: " + acquires);
        RecordedEvent granted = acquires.get(0);
        assertEquals("ledger", granted.getString("log"));
        assertEquals("account/1,account/2", granted.getString("names"));
        assertEquals("exclusive", granted.getString("mode"));
        assertEquals("TENTATIVE", granted.getString("kind"));
        assertEquals("granted", granted.getString("outcome"));
        assertEquals(lease.grant("account/1").generation(), granted.getLong("generation"));
        assertEquals(0L, granted.getLong("waitedMicros"), "granted at once on the manual clock");
        assertEquals(lease.holder().toString(), granted.getString("holder"));
        RecordedEvent busy = acquires.get(1);
        assertEquals("account/9", busy.getString("names"));
        assertEquals("FULL", busy.getString("kind"), "outside the transaction the lease is full");
        assertEquals("busy", busy.getString("outcome"));
        assertEquals(-1L, busy.getLong("generation"));

        List<RecordedEvent> prepares = named(events, "org.leasehold.Prepare");
        assertEquals(1, prepares.size());
        RecordedEvent prepare = prepares.get(0);
        assertEquals("ok", prepare.getString("vote"));
        assertEquals(1, prepare.getInt("leaseCount"), "one lease holding both names");
        assertEquals(2, prepare.getInt("messageCount"));
        assertFalse(prepare.getString("branch").isEmpty());

        List<RecordedEvent> commits = named(events, "org.leasehold.Commit");
        assertEquals(1, commits.size());
        RecordedEvent commit = commits.get(0);
        assertEquals("committed", commit.getString("outcome"));
        assertFalse(commit.getBoolean("onePhase"));
        assertEquals(prepare.getString("branch"), commit.getString("branch"));
        assertEquals(1, commit.getInt("leaseCount"));
        assertEquals(2, commit.getInt("messageCount"));
        assertTrue(named(events, "org.leasehold.Rollback").isEmpty(), "nothing rolled back");

        List<RecordedEvent> seals = named(events, "org.leasehold.Seal").stream()
                .filter(e -> e.getString("bucket").equals(bucket.path())).toList();
        List<RecordedEvent> won = seals.stream().filter(e -> e.getString("outcome").equals("sealed")).toList();
        assertEquals(1, won.size(), "the bucket was sealed once: " + seals);
        assertEquals(bucket.bucket(), Instant.parse(won.get(0).getString("bucketStart")));
        assertEquals("ledger", won.get(0).getString("log"));
        assertEquals(1, won.get(0).getInt("files"));
        assertEquals(bucket.bytes(), won.get(0).getLong("bytes"));
        assertTrue(won.get(0).getLong("bytes") > 0);
        assertEquals("already sealed", seals.get(seals.size() - 1).getString("outcome"), "the second seal found it sealed");

        List<RecordedEvent> reads = named(events, "org.leasehold.Read");
        RecordedEvent lastRead = reads.get(reads.size() - 1);
        assertEquals("ledger", lastRead.getString("log"));
        assertEquals(2L, lastRead.getLong("messages"));
        assertEquals(1, lastRead.getInt("buckets"));
        assertEquals("", lastRead.getString("from"));
        assertEquals(0, lastRead.getInt("problems"));
    }

    @Test
    void aBranchRolledBackBecauseTheOtherResourceVotedSoIsRecorded() throws Exception {
        Recording r = record(EVENTS);
        AdapterTransactionTest.OtherResource other = new AdapterTransactionTest.OtherResource();
        other.failPrepare = true;
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/1");
            c.append(bytes("debit 1 by 5"));
        }
        assertThrows(jakarta.transaction.RollbackException.class, () -> fx.tm.commit());
        assertTrue(fx.messages().isEmpty());

        List<RecordedEvent> events = dump(r, "rollback");

        List<RecordedEvent> rollbacks = named(events, "org.leasehold.Rollback");
        assertEquals(1, rollbacks.size(), "one rollback: " + events);
        RecordedEvent rollback = rollbacks.get(0);
        assertEquals("rolled back", rollback.getString("outcome"));
        assertEquals("ledger", rollback.getString("log"));
        assertEquals(1, rollback.getInt("leaseCount"));
        assertEquals(1, rollback.getInt("messageCount"));
        assertEquals(!named(events, "org.leasehold.Prepare").isEmpty(), rollback.getBoolean("prepared"),
                "prepared exactly when our branch was prepared before the other resource voted");
        assertTrue(named(events, "org.leasehold.Commit").isEmpty(), "nothing committed");
    }

    @Test
    void disabledEventsAreNotRecorded() throws Exception {
        Recording r = record(List.of("org.leasehold.Commit"));
        AdapterTransactionTest.OtherResource other = new AdapterTransactionTest.OtherResource();
        fx.tm.begin();
        fx.tm.getTransaction().enlistResource(other);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/1");
            c.append(bytes("debit 1 by 5"));
        }
        fx.tm.commit();
        assertEquals(1, fx.messages().size());

        List<RecordedEvent> events = dump(r, "only-commit");

        assertEquals(List.of("org.leasehold.Commit"), events.stream().map(e -> e.getEventType().getName()).toList(),
                "only the enabled event was recorded");
        assertEquals("committed", events.get(0).getString("outcome"));
    }
}
