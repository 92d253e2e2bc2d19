package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.fs.TimeMarkFiles;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;

/**
 * Generations that cannot be guessed across names and never go back, and the time mark that keeps them (and floors)
 * from going back when the clock steps back across a restart: a manual clock and a real directory.
 */
class GenerationsAndTimeMarkTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");
    private static final Instant T0 = EmbeddedFixture.START;
    private static final EngineConfig CONFIG = EngineConfig.defaults().withMaxLeaseDuration(Duration.ofSeconds(10))
            .withGrace(Duration.ofSeconds(2)).withIdleRetention(Duration.ofMinutes(1));

    @TempDir
    Path dir;

    private static long first(EmbeddedLeaseService engine, String name) throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, name).build());
        engine.release(l, null, null);
        return l.grant(name).generation();
    }

    @Test
    void firstGenerationsOfFreshNamesDifferAndSayNothingOfEachOther() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        long base = T0.toEpochMilli() << 20;
        Map<String, Long> one = new HashMap<>();
        Set<Long> distinct = new HashSet<>();
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withQuietPeriod(Duration.ZERO), time)) {
            for (int i = 0; i < 2_000; i++) {
                String name = "public/n" + i;
                long g = first(engine, name);
                assertTrue(g > base && g <= base + EmbeddedLeaseService.OFFSET_RANGE, name + ": " + g);
                one.put(name, g);
                distinct.add(g);
            }
        }
        assertTrue(distinct.size() >= 1_980, "2000 fresh names, first generations spread over 2^19 values: "
                + distinct.size() + " distinct");
        // The same names on a second engine started at the same instant: other offsets (a key per start), so knowing
        // a name's generation on one start says nothing of the same difference on the next.
        int sameDifference = 0;
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withQuietPeriod(Duration.ZERO),
                new ManualTimeSource(T0))) {
            long g0 = first(engine, "public/n0");
            for (int i = 1; i < 200; i++) {
                long g = first(engine, "public/n" + i);
                if (g - g0 == one.get("public/n" + i) - one.get("public/n0")) {
                    sameDifference++;
                }
            }
        }
        assertTrue(sameDifference <= 2, sameDifference + " of 199 differences repeated across starts");
    }

    @Test
    void generationsStrictlyIncreasePerNameAcrossGrantsForgettingAndRestarts() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
            names.add("g/" + i);
        }
        Map<String, Long> last = new HashMap<>();
        EngineConfig config = CONFIG.withQuietPeriod(Duration.ZERO).withShards(4);
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(config, time)) {
            for (int round = 0; round < 3; round++) {
                for (String n : names.subList(0, 500 + round * 250)) {
                    for (int k = 0; k < 2; k++) {
                        long g = first(engine, n);
                        Long before = last.put(n, g);
                        assertTrue(before == null || g > before, n + ": " + g + " after " + before);
                    }
                }
                time.advance(Duration.ofMinutes(2));
                assertEquals(0, engine.rememberedNames(), "every idle name forgotten");
            }
        }
        time.advance(Duration.ofSeconds(1));
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(config, time)) {
            for (String n : names) {
                long g = first(engine, n);
                Long before = last.get(n);
                assertTrue(before == null || g > before, n + " after a restart: " + g + " after " + before);
            }
        }
    }

    /** A mark whose records can be made to fail, in memory, to see the engine stop at its horizon. */
    private static final class FlakyMark implements TimeMark {
        final List<Recorded> records = new ArrayList<>();
        boolean failing;

        @Override
        public Recorded previous() {
            return null;
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
            return Runnable::run;
        }
    }

    @Test
    void theMarkStaysAboveEverythingGrantedAndTheEngineStopsAtItsHorizonWhenRecordsFail() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        FlakyMark mark = new FlakyMark();
        try (EmbeddedLeaseService engine = new EmbeddedLeaseService(CONFIG.withQuietPeriod(Duration.ZERO), time, mark)) {
            for (int i = 0; i < 40; i++) {
                Lease l = engine.acquire(LeaseRequest.builder(A, "m/" + (i % 5)).build());
                TimeMark.Recorded r = mark.records.get(mark.records.size() - 1);
                long genMillis = l.grant(l.names().get(0)).generation() >> 20;
                assertTrue(Micros.of(l.grantedAt()) < r.horizon());
                assertTrue(genMillis * 1_000 < r.horizon(), "generation's time part below the horizon");
                assertTrue(Micros.of(l.deadline()) < r.bound(), "deadline below the bound");
                assertTrue(Micros.of(l.floor()) < r.bound(), "floor below the bound");
                Lease renewed = engine.renew(l, l.deadline().plusSeconds(60), null);
                assertTrue(Micros.of(renewed.deadline()) < r.bound(), "renewed deadline below the bound");
                engine.release(renewed, renewed.grantedAt(), null);
                time.advance(Duration.ofMillis(700));
            }
            assertTrue(mark.records.size() >= 12 && mark.records.size() <= 16, "a record every 2 s: "
                    + mark.records.size() + " in 28 s");
            mark.failing = true;
            Instant horizon = engine.markHorizon();
            time.advance(Duration.ofSeconds(3));
            assertNotNull(engine.markFailure());
            engine.acquire(LeaseRequest.builder(A, "before-horizon").build());
            time.set(horizon);
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> engine.acquire(LeaseRequest.builder(B, "after-horizon").build()));
            assertTrue(e.getMessage().contains("time mark") && e.getMessage().contains("disk full"), e.getMessage());
            assertFalse(engine.granting());
            mark.failing = false;
            time.advance(Duration.ofSeconds(2));
            assertNull(engine.markFailure());
            assertTrue(engine.granting());
            engine.acquire(LeaseRequest.builder(B, "after-horizon").build());
        }
    }

    @Test
    void aClockSteppedBackAcrossARestartDelaysGrantsAndTakesNoGenerationOrFloorBack() throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        EngineConfig config = CONFIG;
        Duration quiet = config.effectiveQuietPeriod();
        NfsSafeFiles fs = new NfsSafeFiles();
        Map<String, Long> gens = new HashMap<>();
        Instant highestFloor;
        Instant lastDeadline;
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, dir.resolve("marks"), false);
                EmbeddedLeaseService engine = new EmbeddedLeaseService(config, time, mark)) {
            time.advance(quiet);
            Lease held = null;
            for (int i = 0; i < 20; i++) {
                String n = "step/" + (i % 4);
                Lease l = engine.acquire(LeaseRequest.builder(A, n).build());
                gens.put(n, l.grant(n).generation());
                time.advance(Duration.ofMillis(300));
                if (i < 19) {
                    engine.release(l, Instant.ofEpochSecond(0, Micros.of(l.grantedAt()) * 1_000 + 5_000), null);
                } else {
                    held = l;
                }
            }
            highestFloor = engine.inspect("step/", 10).stream().map(s -> s.floor()).max(Instant::compareTo).get();
            lastDeadline = held.deadline();
        }
        Instant stopped = time.now();
        // The restart, with the clock 60 s behind where it was.
        ManualTimeSource stepped = new ManualTimeSource(stopped.minusSeconds(60));
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, dir.resolve("marks"), false);
                EmbeddedLeaseService engine = new EmbeddedLeaseService(config, stepped, mark)) {
            TimeMark.Recorded previous = mark.previous();
            assertNotNull(previous);
            assertTrue(previous.horizon() > Micros.of(stopped), "the mark was recorded ahead of the clock");
            assertTrue(previous.bound() > Micros.of(lastDeadline), "the bound covers the last deadline");
            Duration behind = engine.clockBehind();
            assertTrue(behind.compareTo(Duration.ofSeconds(58)) >= 0 && behind.compareTo(Duration.ofSeconds(60)) <= 0,
                    "the clock is behind the last record by the step less the time since that record: " + behind);
            Instant from = Micros.toInstant(previous.horizon()).plus(quiet);
            assertEquals(from, engine.availableFrom(), "grants wait for the clock to pass the mark plus the quiet period");
            stepped.advance(quiet);
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> engine.acquire(LeaseRequest.builder(B, "step/0").build()));
            assertEquals(from, e.availableAt());
            assertTrue(e.getMessage().contains("time mark"), e.getMessage());
            stepped.set(from.minusNanos(1_000));
            assertThrows(LeaseServiceUnavailableException.class,
                    () -> engine.acquire(LeaseRequest.builder(B, "step/1").build()));
            stepped.set(from);
            assertEquals(Duration.ZERO, engine.clockBehind());
            for (int i = 0; i < 4; i++) {
                String n = "step/" + i;
                Lease l = engine.acquire(LeaseRequest.builder(B, n).build());
                assertTrue(l.grant(n).generation() > gens.get(n), n + ": generation " + l.grant(n).generation()
                        + " after " + gens.get(n) + " before the restart");
                assertTrue(l.floor().isAfter(highestFloor), n + ": floor " + l.floor() + " after " + highestFloor);
                assertFalse(l.floor().isBefore(lastDeadline), n + ": floor " + l.floor() + " below the last deadline "
                        + lastDeadline + " granted before the restart");
                assertTrue(l.grantedAt().isAfter(lastDeadline));
            }
        }
    }

    @Test
    void aTornLastRecordFallsBackToTheOneBeforeAndTwoDamagedRecordsAreRefused() throws Exception {
        NfsSafeFiles fs = new NfsSafeFiles();
        Path marks = dir.resolve("marks");
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, marks, false)) {
            assertNull(mark.previous());
            mark.record(new TimeMark.Recorded(100, 200, 50));
            mark.record(new TimeMark.Recorded(300, 400, 250));
        }
        Path file = marks.resolve("mark.1");
        // A record torn short by a crash: ignored.
        append(file, new byte[] {0x4C, 0x48, 0x4D, 0x31, 0, 0, 0});
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, marks, false)) {
            assertEquals(new TimeMark.Recorded(300, 400, 250), mark.previous());
        }
        // mark.2, made by that open, is empty (it recorded nothing): the newest records are still those of mark.1.
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, marks, false)) {
            assertEquals(new TimeMark.Recorded(300, 400, 250), mark.previous());
            mark.record(new TimeMark.Recorded(500, 600, 450));
            mark.record(new TimeMark.Recorded(700, 800, 650));
        }
        Path third = marks.resolve("mark.3");
        corrupt(third, TimeMarkFiles.RECORD_BYTES + 10);
        try (TimeMarkFiles mark = TimeMarkFiles.open(fs, marks, false)) {
            assertEquals(new TimeMark.Recorded(500, 600, 450), mark.previous(), "a damaged last record: the one before");
        }
        corrupt(third, 10);
        IOException e = assertThrows(IOException.class, () -> TimeMarkFiles.open(fs, marks, false));
        assertTrue(e.getMessage().contains(third.toString()) && e.getMessage().contains("damaged")
                && e.getMessage().contains("move the directory"), e.getMessage());
        Set<NfsSafeFiles.Op> allowed = Set.of(NfsSafeFiles.Op.MKDIR, NfsSafeFiles.Op.LIST, NfsSafeFiles.Op.CREATE_NEW,
                NfsSafeFiles.Op.OPEN_READ);
        fs.counts().forEach((op, n) -> assertTrue(n == 0 || allowed.contains(op), op + " used"));
    }

    private static void append(Path f, byte[] bytes) throws IOException {
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            ch.write(ByteBuffer.wrap(bytes));
        }
    }

    private static void corrupt(Path f, long at) throws IOException {
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer b = ByteBuffer.allocate(1);
            ch.read(b, at);
            b.put(0, (byte) (b.get(0) ^ 0x5a)).rewind();
            ch.write(b, at);
        }
        assertTrue(Files.size(f) > at);
    }
}
