package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.SteppedClock;
import org.leasehold.time.SystemTimeSource;

/**
 * The embedded engine's time mark under the bag store root: a server restarted with its clock 60 s behind grants
 * nothing until its clock has passed the mark, then takes no generation or floor back. A running server whose clock is
 * stepped back an hour grants nothing from its next ownership heartbeat on, saying why (to callers and in its health),
 * until its clock reads the latest time it had read again.
 */
class EmbeddedClockStepTest {
    private static final HolderId A = new HolderId("ledger", "a");

    @Test
    void anEmbeddedRestartWithTheClock60sBehindTakesNoGenerationOrFloorBack() throws Exception {
        Path root = AdapterFixture.freshRoot("clock-step");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        long gen;
        Instant floor;
        Instant lastDeadline;
        try (AdapterFixture first = new AdapterFixture(root, time, m -> m.setWriterId("server-a"))) {
            LeaseService leases = first.mcf.runtime().leases();
            time.set(leases.availableFrom());
            Lease a = leases.acquire(LeaseRequest.builder(A, "k").build());
            time.advance(Duration.ofSeconds(2));
            leases.release(a, a.grantedAt().plusMillis(1), null);
            time.advance(Duration.ofSeconds(2));
            Lease held = leases.acquire(LeaseRequest.builder(A, "k").build());
            gen = held.grant("k").generation();
            floor = held.floor();
            lastDeadline = held.deadline();
            time.advance(Duration.ofSeconds(1));
        }
        assertTrue(Files.isDirectory(root.resolve(".leasehold").resolve("time-mark").resolve("ledger")));
        ManualTimeSource stepped = new ManualTimeSource(time.now().minusSeconds(60));
        try (AdapterFixture second = new AdapterFixture(root, stepped, m -> m.setWriterId("server-a"))) {
            LeaseService leases = second.mcf.runtime().leases();
            Instant from = leases.availableFrom();
            assertTrue(from.isAfter(lastDeadline), "grants wait until the clock passes the earlier deadlines: " + from);
            stepped.set(from.minusMillis(1));
            assertThrows(LeaseServiceUnavailableException.class, () -> leases.acquire(LeaseRequest.builder(A, "k")
                    .build()));
            stepped.set(from);
            Lease after = leases.acquire(LeaseRequest.builder(A, "k").build());
            assertTrue(after.grant("k").generation() > gen, "generation " + after.grant("k").generation() + " after "
                    + gen + " before the restart");
            assertTrue(after.floor().isAfter(floor), "floor " + after.floor() + " after " + floor);
            assertFalse(after.floor().isBefore(lastDeadline), "floor " + after.floor() + " not below the last deadline "
                    + lastDeadline + " granted before the restart");
        }
    }

    @Test
    void aRunningEmbeddedServerWhoseClockStepsBackGrantsNothingUntilItsClockReadsItsLatestTimeAgain() throws Exception {
        Path root = AdapterFixture.freshRoot("clock-step-running");
        try (SystemTimeSource wall = new SystemTimeSource("clock-step-wall")) {
            SteppedClock clock = new SteppedClock(wall.clock());
            try (SystemTimeSource time = new SystemTimeSource(clock, "clock-step-adapter");
                    AdapterFixture f = new AdapterFixture(root, time, m -> {
                        m.setWriterId("server-a");
                        m.setOwnerTtlMillis(1_000L);
                    })) {
                LeaseService leases = f.mcf.runtime().leases();
                leases.release(leases.acquire(LeaseRequest.builder(A, "k").build()), null, null);
                assertTrue(leasesCheck(f).up(), leasesCheck(f).toString());

                clock.step(Duration.ofHours(-1));
                assertTrue(AdapterFixture.await(() -> !leasesCheck(f).up()), "the health check sees the step within 10 s (heartbeats "
                        + "every 125 ms): " + leasesCheck(f));
                assertTrue(leasesCheck(f).detail().contains("clock stepped back"), leasesCheck(f).toString());
                LeaseServiceUnavailableException refused = assertThrows(LeaseServiceUnavailableException.class,
                        () -> leases.acquire(LeaseRequest.builder(A, "k2").build()));
                assertTrue(refused.getMessage().contains("clock stepped back")
                        && refused.getMessage().contains("grants nothing until the clock reads that time again"),
                        refused.getMessage());

                clock.step(Duration.ofHours(1));
                assertTrue(AdapterFixture.await(() -> leasesCheck(f).up()), "healthy again once the clock reads its latest time: "
                        + leasesCheck(f));
                leases.release(leases.acquire(LeaseRequest.builder(A, "k2").build()), null, null);
            }
        }
    }

    private static AdapterStatus.Check leasesCheck(AdapterFixture f) {
        return f.factory.status().checks().stream().filter(c -> c.name().equals(AdapterStatus.LEASES)).findFirst()
                .orElseThrow();
    }
}
