package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;
import org.leasehold.time.SteppedClock;
import org.leasehold.time.SystemTimeSource;

/** Who owns a log in embedded mode, as a second server reads it from the owner file. */
class EmbeddedOwnershipTest {
    private static final Instant NOW = Instant.parse("2026-03-02T10:00:00Z");

    /**
     * An owner that has lived for a day has written about 86,400 heartbeat lines (1.5 MB): its last heartbeat is at
     * the end of the file, not in its first megabyte. A second server must see it as alive.
     */
    @Test
    void aLongLivedOwnersLastHeartbeatIsReadFromTheEndOfItsFile() throws Exception {
        Path root = AdapterFixture.freshRoot("ownership-long");
        Path dir = Files.createDirectories(root.resolve(".leasehold/owners/ledger"));
        long start = Micros.of(NOW.minus(Duration.ofDays(1)));
        try (Writer w = Files.newBufferedWriter(dir.resolve("owner.1"), StandardCharsets.UTF_8)) {
            w.write("writer=first ttl=8000 claimed=" + start + "\n");
            for (long t = start; t <= Micros.of(NOW); t += 1_000_000L) {
                w.write(t + "\n");
            }
        }
        assertTrue(Files.size(dir.resolve("owner.1")) > 1 << 20, "the file is past the first megabyte");
        ManualTimeSource time = new ManualTimeSource(NOW.plusMillis(500));
        EmbeddedOwnership.OwnedElsewhereException e = assertThrows(EmbeddedOwnership.OwnedElsewhereException.class,
                () -> EmbeddedOwnership.claim(new NfsSafeFiles(), root, "ledger", "second", Duration.ofSeconds(8),
                        Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMillis(500), time));
        assertTrue(e.getMessage().contains("writer 'first' (last heartbeat " + NOW + ","), e.getMessage());
    }

    @Test
    void anOwnerWhoseHeartbeatsStoppedCanBeSucceeded() throws Exception {
        Path root = AdapterFixture.freshRoot("ownership-lapsed");
        Path dir = Files.createDirectories(root.resolve(".leasehold/owners/ledger"));
        long last = Micros.of(NOW.minusSeconds(60));
        Files.writeString(dir.resolve("owner.1"), "writer=first ttl=8000 claimed=" + last + "\n" + last + "\n");
        ManualTimeSource time = new ManualTimeSource(NOW);
        try (EmbeddedOwnership o = EmbeddedOwnership.claim(new NfsSafeFiles(), root, "ledger", "second",
                Duration.ofSeconds(8), Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMillis(500), time)) {
            assertTrue(!o.grantableFrom().isAfter(NOW), "the first owner's last grant was long ago: " + o.grantableFrom());
        }
    }

    /** The fence as the owner last moved it. */
    private record Fenced(Instant until, String reason) {
    }

    /**
     * An owner whose clock steps back an hour (beyond the 500 ms clock error) while it serves: its next heartbeat,
     * which runs on elapsed time, sees the step and fences its engine at once, saying why (health reads it), instead of
     * letting it grant for the hour in which its heartbeats would not come and other servers read them as stale. Once
     * the clock reads its latest time again, heartbeats move the fence ahead as before. The real clock, stepped.
     */
    @Test
    void anOwnerWhoseClockStepsBackGrantsNothingUntilItsClockReadsItsLatestTimeAgain() throws Exception {
        Path root = AdapterFixture.freshRoot("ownership-step");
        try (SystemTimeSource wall = new SystemTimeSource("ownership-step-wall")) {
            SteppedClock clock = new SteppedClock(wall.clock());
            try (SystemTimeSource time = new SystemTimeSource(clock, "ownership-step");
                    EmbeddedOwnership o = EmbeddedOwnership.claim(new NfsSafeFiles(), root, "ledger", "first",
                            Duration.ofMillis(800), Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofMillis(500),
                            time)) {
                AtomicReference<Fenced> fenced = new AtomicReference<>();
                o.start((until, reason) -> fenced.set(new Fenced(until, reason)));
                assertTrue(AdapterFixture.await(() -> fenced.get().reason().contains("heartbeats failing")), "a first heartbeat");
                assertNull(o.clockProblem());

                clock.step(Duration.ofHours(-1));
                assertTrue(AdapterFixture.await(() -> o.clockProblem() != null), "the step seen within 10 s (heartbeats every 100 ms)");
                Fenced f = fenced.get();
                assertTrue(f.reason().contains("clock stepped back") && f.reason().contains("behind the"), f.reason());
                assertTrue(!f.until().isAfter(time.now()), "fenced from the step's heartbeat on: " + f);
                assertTrue(o.clockProblem().contains("grants nothing until the clock reads that time again"),
                        o.clockProblem());

                clock.step(Duration.ofHours(1));
                assertTrue(AdapterFixture.await(() -> o.clockProblem() == null), "the clock reads its latest time again");
                assertTrue(AdapterFixture.await(() -> fenced.get().until().isAfter(time.now())), "the fence half a TTL ahead again: "
                        + fenced.get());
            }
        }
    }
}
