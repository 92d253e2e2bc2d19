package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.bag.TimestampOutOfRangeException.Reason;
import org.leasehold.time.ManualTimeSource;

/**
 * The write rule at the exact edges of each of its ranges (default geometry: 1 s buckets, 2 s grace, 500 ms clock
 * error), and what its refusals say. Each case is one µs on either side of an edge.
 */
class WriteRuleEdgesTest {

    @Test
    void aFloorExactlyTheClockErrorAheadIsAcceptedAndOneMicrosecondMoreIsNot() throws Exception {
        Path root = freshDir("edge-floor-ahead");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp edge = lease("edge", 3, T0.plusMillis(500), T0.plusSeconds(5));
            assertEquals(T0.plusMillis(500).plusNanos(1_000), store.append(req("log", List.of(edge), "at edge"))
                    .timestamp(), "the floor plus 1 µs, the clock error ahead of this clock");

            LeaseStamp beyond = lease("beyond", 3, T0.plusMillis(500).plusNanos(1_000), T0.plusSeconds(5));
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(beyond), "beyond")));
            assertEquals(Reason.FLOOR_AHEAD_OF_CLOCK, e.reason());
            assertEquals(T0.plusNanos(1_000), e.retryAt(), "the floor minus the clock error");
            assertTrue(e.getMessage().contains("the floor of lease 'beyond' (" + beyond.floor() + ") is 500 ms ahead of "
                    + "this clock (" + T0 + "), more than the maximum clock error PT0.5S"), e.getMessage());
            assertTrue(e.getMessage().endsWith("retry at " + T0.plusNanos(1_000)), e.getMessage());
            assertEquals(List.of("at edge"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void aGivenTimestampExactlyTheClockErrorAheadIsAcceptedAndOneMicrosecondMoreIsNot() throws Exception {
        Path root = freshDir("edge-future");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp free = lease("free", 1, T0.minusSeconds(10), T0.plusSeconds(10));
            assertEquals(T0.plusMillis(500), store.append(req("log", List.of(free), "edge").at(T0.plusMillis(500)))
                    .timestamp());
            Instant over = T0.plusMillis(500).plusNanos(1_000);
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(free), "over").at(over)));
            assertEquals(Reason.IN_FUTURE, e.reason());
            assertEquals(over, e.timestamp());
            assertEquals(T0.plusNanos(1_000), e.retryAt(), "the timestamp minus the clock error");
            assertTrue(e.getMessage().contains("the timestamp " + over + " of the append to log 'log' is more than the "
                    + "maximum clock error (PT0.5S) ahead of this clock (" + T0 + ")"), e.getMessage());
            assertEquals(List.of("edge"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void floorAndDeadlineRefusalsNameTheLeaseTheBoundAndWhoseTimestampItWas() throws Exception {
        Path root = freshDir("edge-messages");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp l = lease("acct/9", 4, T0.minusMillis(100), T0.plusMillis(200));
            TimestampOutOfRangeException floor = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "f").at(T0.minusMillis(100))));
            assertEquals(T0.minusMillis(100), floor.timestamp());
            assertTrue(floor.getMessage().contains("the timestamp " + T0.minusMillis(100) + " of the append to log 'log' "
                    + "is not above the floor " + l.floor() + " of lease 'acct/9'"), floor.getMessage());
            assertEquals(T0.minusMillis(100).plusNanos(1_000), store.append(req("log", List.of(l), "above")
                    .at(T0.minusMillis(100).plusNanos(1_000))).timestamp(), "1 µs above the floor");

            TimestampOutOfRangeException given = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "d").at(T0.plusMillis(200))));
            assertEquals(T0.plusMillis(200), given.timestamp());
            assertTrue(given.getMessage().contains("below the deadline " + l.deadline() + " of lease 'acct/9' "
                    + "(generation 4), but the given one is " + T0.plusMillis(200) + " (this clock reads " + T0 + ")"),
                    given.getMessage());

            time.set(T0.plusMillis(200));
            TimestampOutOfRangeException chosen = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "late")));
            assertEquals(T0.plusMillis(200), chosen.timestamp());
            assertTrue(chosen.getMessage().contains("but the earliest acceptable one is " + T0.plusMillis(200)),
                    chosen.getMessage());
            assertEquals(List.of("above"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void theSuccessorOfADeadlineOnABucketEdgeWaitsForTheBucketBeforeItOnly() throws Exception {
        Path root = freshDir("edge-successor");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            // The predecessor wrote below T0 + 1 s, so bucket [T0, T0 + 1 s) is its last one.
            assertEquals(T0.plusMillis(3_500), store.successorWritableFrom("log", T0.plusSeconds(1)));
            assertEquals(T0.plusMillis(4_500), store.successorWritableFrom("log", T0.plusSeconds(1).plusNanos(1_000)));
            assertEquals(T0.plusMillis(3_500), store.successorWritableFrom("log", T0.plusNanos(1_000)));
        }
    }

    @Test
    void notYetWritableSaysUntilWhenAndWhatTheClockReads() throws Exception {
        Path root = freshDir("edge-writable");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            LeaseStamp l = new LeaseStamp("x", 2, T0.minusSeconds(1), T0.plusSeconds(9), T0.plusNanos(1_000), null,
                    null);
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(l), "early")));
            assertTrue(e.getMessage().contains("the leases of this append to log 'log' allow writing from "
                    + T0.plusNanos(1_000)), e.getMessage());
            assertTrue(e.getMessage().contains("this clock reads " + T0 + ": nothing was written"), e.getMessage());
        }
    }

    @Test
    void timestampsBeforeTheEpochAreUnrepresentableAndTheEpochIsMerelyPastGrace() throws Exception {
        Path root = freshDir("edge-epoch");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Instant before = Instant.EPOCH.minusNanos(1_000);
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(), "before").at(before)));
            assertEquals(Reason.UNREPRESENTABLE, e.reason());
            assertEquals(before, e.timestamp());
            assertTrue(e.getMessage().contains("outside the years 1970 to 9999"), e.getMessage());
            BucketSealedException past = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "epoch").at(Instant.EPOCH)));
            assertEquals(BucketSealedException.Reason.PAST_GRACE, past.reason());
            assertEquals(Instant.EPOCH, past.bucketStart());
            assertTrue(past.getMessage().startsWith("the timestamp " + Instant.EPOCH + " falls in bucket "),
                    "refused by the rule before the frame is queued: " + past.getMessage());
        }
    }

    @Test
    void theLastMicrosecondOfYear9999IsWritableAndYear10000IsNot() throws Exception {
        Path root = freshDir("edge-year-10000");
        Instant last = Instant.ofEpochSecond(LogGeometry.MAX_MICROS / 1_000_000L).minusNanos(1_000);
        ManualTimeSource time = new ManualTimeSource(last.minusMillis(100));
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            assertEquals(last, store.append(req("log", List.of(), "last").at(last)).timestamp());
            Instant year10000 = last.plusNanos(1_000);
            TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class,
                    () -> store.append(req("log", List.of(), "after").at(year10000)));
            assertEquals(Reason.UNREPRESENTABLE, e.reason());
            assertEquals(List.of("last"), texts(store, ReadRequest.all("log")));
        }
    }
}
