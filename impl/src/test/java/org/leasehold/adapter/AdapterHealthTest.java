package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.connector.AdapterStatus;

/**
 * The adapter's readiness and liveness as a connection factory reports them, on a real store directory and a manual
 * clock: each check fails for its own cause, with the cause in its detail, and only what a restart would cure makes
 * the adapter not live.
 */
class AdapterHealthTest {

    private static AdapterStatus.Check check(AdapterStatus s, String name) {
        return s.checks().stream().filter(c -> c.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no check " + name + " in " + s));
    }

    /** Makes {@code dir} a regular file: nothing can be created in it any more, whatever the user's rights. */
    private static void replaceWithFile(Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.delete(f);
            }
        }
        Files.delete(dir);
        Files.writeString(dir, "not a directory");
    }

    @Test
    void aWorkingAdapterIsReadyAndLive() throws Exception {
        try (AdapterFixture f = new AdapterFixture("health-ready", mcf -> { })) {
            AdapterStatus s = f.factory.status();
            assertTrue(s.ready(), s.toString());
            assertTrue(s.live(), s.toString());
            assertEquals(List.of(AdapterStatus.STORE, AdapterStatus.LEASES, AdapterStatus.CLOCKS),
                    s.checks().stream().map(AdapterStatus.Check::name).toList());
            assertEquals("ledger", s.log());
            assertEquals("writer-a", s.writer());
            assertEquals(AdapterConfig.EMBEDDED, s.leaseService());
            Path probe = f.root.resolve(".leasehold/health/writer-a");
            assertEquals("writable: " + probe, check(s, AdapterStatus.STORE).detail());
            assertEquals(AdapterFixture.START.toEpochMilli() * 1000L, Long.parseLong(Files.readString(probe).trim()),
                    "the probe holds the time it was written");
        }
    }

    @Test
    void aStoreThatRefusesWritesIsNotReadyUntilItAcceptsThemAgainAndStaysLive() throws Exception {
        try (AdapterFixture f = new AdapterFixture("health-store", mcf -> { })) {
            assertTrue(f.factory.status().ready());
            Path health = f.root.resolve(".leasehold/health");
            replaceWithFile(health);
            assertTrue(f.factory.status().ready(), "a probe's result is reused for a second");
            f.time.advance(Duration.ofSeconds(1));
            AdapterStatus s = f.factory.status();
            assertFalse(s.ready());
            assertTrue(s.live(), "an unwritable store recovers by itself: no restart");
            AdapterStatus.Check store = check(s, AdapterStatus.STORE);
            assertFalse(store.up());
            assertTrue(store.detail().startsWith("the bag store at " + f.root + " does not accept writes: writing "
                    + health.resolve("writer-a") + " failed ("), store.detail());
            assertTrue(check(s, AdapterStatus.LEASES).up() && check(s, AdapterStatus.CLOCKS).up(), s.toString());

            Files.delete(health);
            f.time.advance(Duration.ofSeconds(1));
            assertTrue(f.factory.status().ready(), "writable again");
        }
    }

    @Test
    void failingOwnershipHeartbeatsMakeTheLeaseServiceNotReady() throws Exception {
        try (AdapterFixture f = new AdapterFixture("health-heartbeat", mcf -> { })) {
            replaceWithFile(f.root.resolve(".leasehold/owners/ledger"));
            f.time.advance(Duration.ofSeconds(1)); // one heartbeat: an eighth of OwnerTtlMillis (8000)
            AdapterStatus s = f.factory.status();
            AdapterStatus.Check leases = check(s, AdapterStatus.LEASES);
            assertFalse(leases.up());
            assertTrue(leases.detail().startsWith("this server cannot confirm that it still owns log 'ledger': the last "
                    + "1 heartbeat(s) to its owner file in " + f.root.resolve(".leasehold/owners/ledger")
                    + " failed, the last with java.nio.file."), leases.detail());
            assertTrue(s.live(), s.toString());
        }
    }

    @Test
    void anotherServerTakingTheLogOverMakesTheAdapterNotLive() throws Exception {
        try (AdapterFixture f = new AdapterFixture("health-replaced", mcf -> { })) {
            Path owners = f.root.resolve(".leasehold/owners/ledger");
            int highest;
            try (Stream<Path> files = Files.list(owners)) {
                highest = files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("owner."))
                        .mapToInt(n -> Integer.parseInt(n.substring("owner.".length()))).max().orElseThrow();
            }
            assertTrue(f.factory.status().live());
            Files.writeString(owners.resolve("owner." + (highest + 1)), "writer=writer-b ttl=8000 claimed=0\n");
            f.time.advance(Duration.ofSeconds(1));
            AdapterStatus s = f.factory.status();
            assertFalse(s.ready());
            assertEquals("another server took log 'ledger' over: this server's embedded lease service grants nothing "
                    + "any more", check(s, AdapterStatus.LEASES).detail());
            assertFalse(s.live());
            assertTrue(s.notLive().contains("fenced for good and serves again only after a restart"), s.notLive());
        }
    }

    @Test
    void aLeaseServerThatDoesNotAnswerMakesItNotReadyButLive() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort(); // closed again: nothing listens there
        }
        String server = "127.0.0.1:" + port;
        try (AdapterFixture f = new AdapterFixture("health-remote", mcf -> mcf.setLeaseService("remote:" + server))) {
            AdapterStatus s = f.factory.status();
            assertTrue(check(s, AdapterStatus.STORE).up(), s.toString());
            AdapterStatus.Check leases = check(s, AdapterStatus.LEASES);
            assertFalse(leases.up());
            assertTrue(leases.detail().startsWith("lease server " + server + " does not answer ("), leases.detail());
            AdapterStatus.Check clocks = check(s, AdapterStatus.CLOCKS);
            assertFalse(clocks.up());
            assertTrue(clocks.detail().startsWith("the clock of lease server " + server + " is not measured yet"),
                    clocks.detail());
            assertTrue(s.live(), "an unreachable lease server is not a reason to restart this server");
        }
    }

    @Test
    void anAdapterThatCannotServeTheFactorySaysWhyInItsRuntimeCheck() throws Exception {
        try (AdapterFixture f = new AdapterFixture("health-stopped", mcf -> { })) {
            f.adapter.stop();
            AdapterStatus s = f.factory.status();
            assertEquals(1, s.checks().size(), s.toString());
            AdapterStatus.Check runtime = s.checks().get(0);
            assertEquals(AdapterStatus.RUNTIME, runtime.name());
            assertFalse(runtime.up());
            assertTrue(runtime.detail().startsWith("the adapter cannot serve this connection factory: the Leasehold "
                    + "resource adapter is not started"), runtime.detail());
            assertEquals("ledger", s.log());
            assertNull(s.writer());
            assertTrue(s.live(), "deploying the adapter again cures it");
        }
    }
}
