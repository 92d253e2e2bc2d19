package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;

/**
 * The edges of the time mark: the horizon when the clock steps back between two records, the refusal before the
 * first record and when a record is late, the horizon itself, the bound an earlier incarnation recorded, and close.
 * The mark runs its records only when the test says so.
 */
class TimeMarkEdgesTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final Instant T0 = EmbeddedFixture.START;
    private static final EngineConfig CONFIG = EngineConfig.defaults().withMaxLeaseDuration(Duration.ofSeconds(10))
            .withGrace(Duration.ofSeconds(2)).withQuietPeriod(Duration.ZERO).withIdleRetention(Duration.ofMinutes(1));

    /** A mark in memory whose records run when {@link #runQueued} is called (the first one runs at once). */
    private static final class QueuedMark implements TimeMark {
        final List<Recorded> records = new ArrayList<>();
        final ArrayDeque<Runnable> queued = new ArrayDeque<>();
        final Recorded previous;
        boolean failing;

        QueuedMark(Recorded previous) {
            this.previous = previous;
        }

        @Override
        public Recorded previous() {
            return previous;
        }

        @Override
        public void record(Recorded r) throws IOException {
            if (failing) {
                throw new IOException("disk full");
            }
            records.add(r);
        }

        @Override
        public Executor executor() {
            return queued::add;
        }

        void runQueued() {
            Runnable r;
            while ((r = queued.poll()) != null) {
                r.run();
            }
        }

        Recorded last() {
            return records.get(records.size() - 1);
        }
    }

    private static long micros(Instant t) {
        return Micros.of(t);
    }

    @Test
    void theHorizonDoesNotMoveBackWhenTheClockStepsBackBetweenTwoRecords() {
        ManualTimeSource time = new ManualTimeSource(T0);
        QueuedMark mark = new QueuedMark(null);
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG, time, mark)) {
            assertEquals(micros(T0.plusSeconds(6)), mark.last().horizon(), "the first record, at the start");
            time.advance(Duration.ofSeconds(2));
            mark.runQueued();
            assertEquals(micros(T0.plusSeconds(8)), mark.last().horizon());
            time.advance(Duration.ofSeconds(2));
            time.set(T0.plusSeconds(1));
            mark.runQueued();
            assertEquals(3, mark.records.size());
            assertEquals(micros(T0.plusSeconds(1)), mark.last().writtenAt());
            assertEquals(micros(T0.plusSeconds(8)), mark.last().horizon(),
                    "a clock stepped back 3 s keeps the horizon already recorded, not now plus 6 s");
            assertEquals(T0.plusSeconds(8), engine.markHorizon());
        }
    }

    @Test
    void beforeTheFirstRecordNothingIsGrantedYetAndALateRecordIsSaidToBeLate() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        QueuedMark failing = new QueuedMark(null);
        failing.failing = true;
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withServiceId("svc-f"), time, failing)) {
            assertEquals(Instant.MIN, engine.markHorizon());
            assertEquals("java.io.IOException: disk full", engine.markFailure());
            assertFalse(engine.granting());
            assertEquals("the lease service svc-f grants, renews and upgrades nothing yet: it could not record its time "
                    + "mark, which must stay ahead of everything it grants (java.io.IOException: disk full); retry "
                    + "shortly, and see the log of the service", assertThrows(LeaseServiceUnavailableException.class,
                            () -> engine.acquire(LeaseRequest.builder(A, "yet").build())).getMessage());
        }
        QueuedMark late = new QueuedMark(null);
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withServiceId("svc-l"), time, late)) {
            Instant horizon = time.now().plusSeconds(6);
            time.advance(Duration.ofSeconds(6));
            assertEquals(1, late.queued.size(), "the second record waits on the mark's executor");
            assertEquals("the lease service svc-l grants, renews and upgrades nothing since " + horizon + ": it could "
                    + "not record its time mark, which must stay ahead of everything it grants (the record is late); "
                    + "retry shortly, and see the log of the service", assertThrows(
                            LeaseServiceUnavailableException.class,
                            () -> engine.acquire(LeaseRequest.builder(A, "late").build())).getMessage());
        }
    }

    @Test
    void grantsStopExactlyAtTheHorizon() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        QueuedMark mark = new QueuedMark(null);
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG, time, mark)) {
            Instant horizon = T0.plusSeconds(6);
            assertEquals(horizon, engine.markHorizon());
            time.set(horizon.minusNanos(1_000));
            assertTrue(engine.granting(), "one microsecond before the horizon");
            Lease l = engine.acquire(LeaseRequest.builder(A, "edge/1").build());
            assertEquals(horizon.minusNanos(1_000), l.grantedAt());
            time.set(horizon);
            assertFalse(engine.granting(), "at the horizon");
            assertThrows(LeaseServiceUnavailableException.class,
                    () -> engine.acquire(LeaseRequest.builder(A, "edge/2").build()));
            assertThrows(LeaseServiceUnavailableException.class,
                    () -> engine.renew(l, horizon.plusSeconds(5), null));
        }
    }

    @Test
    void aBoundAnEarlierIncarnationRecordedWithLongerLeasesRaisesTheFirstFloorUpToTheEndOfTheQuietPeriod()
            throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        // The earlier incarnation granted leases of up to 100 s; this one grants 10 s ones after a quiet period of 30.
        QueuedMark mark = new QueuedMark(new TimeMark.Recorded(micros(T0.minusSeconds(1)),
                micros(T0.plusSeconds(100)), micros(T0.minusSeconds(7))));
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withQuietPeriod(Duration.ofSeconds(30)),
                time, mark)) {
            assertEquals(micros(T0.plusSeconds(100)), mark.last().bound(), "the bound never goes back");
            time.advance(Duration.ofSeconds(30));
            mark.runQueued();
            Lease l = engine.acquire(LeaseRequest.builder(A, "first").build());
            assertEquals(T0.plusSeconds(30), l.grant("first").floor(),
                    "the previous bound, capped at the end of the quiet period; not the start plus 10 s");
        }
    }

    @Test
    void closeCancelsTheNextRecordOfTheMark() {
        ManualTimeSource time = new ManualTimeSource(T0);
        QueuedMark mark = new QueuedMark(null);
        EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG, time, mark);
        assertEquals(2, time.pendingTimers(), "the first sweep and the next record");
        engine.close();
        assertEquals(0, time.pendingTimers());
        time.advance(Duration.ofSeconds(10));
        assertTrue(mark.queued.isEmpty());
        assertEquals(1, mark.records.size());
    }
}
