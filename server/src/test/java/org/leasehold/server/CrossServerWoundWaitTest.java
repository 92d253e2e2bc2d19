package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Wound-wait across lease servers. A younger transaction holds a tentative lease on server 1 and waits on server 2
 * for a name an older one holds, which waits on server 1 for the younger one's name: a cycle of waits no single server
 * sees. The client tells server 1 that the younger holder waits elsewhere, so the older request breaks its holding
 * there at once, instead of both waiting until a wait runs out.
 */
class CrossServerWoundWaitTest {
    private static final HolderId OLD = new HolderId("cross", "old-tx");
    private static final HolderId YOUNG = new HolderId("cross", "young-tx");
    /** Far longer than the test allows: a cycle left to it would fail the test by its timeout, not pass by it. */
    private static final Duration LONG_WAIT = Duration.ofSeconds(60);

    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private LeaseServer start() throws Exception {
        return closing.later(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO))));
    }

    /** Two names, the first on one server and the second on the other. */
    private static String[] namesOnTwoServers(RemoteLeaseService client) {
        String first = "cross/0";
        for (int i = 1; i < 500; i++) {
            String other = "cross/" + i;
            if (!client.serverFor(other).equals(client.serverFor(first))) {
                return new String[] {first, other};
            }
        }
        throw new IllegalStateException("no name of the other server among 500");
    }

    private static LeaseRequest.Builder tentative(HolderId who, Instant startedAt, String name) {
        return LeaseRequest.builder(who, name).tentative().startedAt(startedAt).leaseFor(Duration.ofSeconds(60));
    }

    @ParameterizedTest
    @EnumSource(RemoteClientConfig.Transport.class)
    void aCycleThroughTwoServersBreaksTheYoungerHoldingAtOnce(RemoteClientConfig.Transport transport) throws Exception {
        LeaseServer a = start();
        LeaseServer b = start();
        RemoteLeaseService client = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(a.address(),
                b.address()).transport(transport).callTimeout(Duration.ofSeconds(10)).build()));
        String[] names = namesOnTwoServers(client);
        String youngs = names[0];
        String olds = names[1];
        assertNotEquals(client.serverFor(youngs), client.serverFor(olds));
        Instant t0 = client.now();

        Lease youngFirst = client.acquire(tentative(YOUNG, t0.plusMillis(5), youngs).build());
        Lease oldFirst = client.acquire(tentative(OLD, t0, olds).build());
        // The older one asks for the younger one's name: the younger one waits for nothing there, so it waits.
        CompletableFuture<Lease> oldSecond = client.acquireAsync(tentative(OLD, t0, youngs).waitFor(LONG_WAIT).build());
        Thread.sleep(200);
        assertFalse(oldSecond.isDone(), "the older request waits for a holder that waits for nothing: " + oldSecond);
        // The younger one asks for the older one's name on the other server, closing the cycle.
        CompletableFuture<Lease> youngSecond = client.acquireAsync(tentative(YOUNG, t0.plusMillis(5), olds)
                .waitFor(LONG_WAIT).build());

        Lease oldTaken = oldSecond.get(20, TimeUnit.SECONDS);
        assertEquals(Ending.BROKEN, oldTaken.grant(youngs).predecessor().ending(), "the younger holding was broken");
        assertThrows(LeaseBrokenException.class, () -> client.upgrade(youngFirst, null));
        assertFalse(youngSecond.isDone(), "the younger one still waits for the older one's name");
        client.release(client.upgrade(oldFirst, null), null, null);
        client.release(client.upgrade(oldTaken, null), null, null);
        Lease youngTaken = youngSecond.get(20, TimeUnit.SECONDS);
        assertEquals(YOUNG, youngTaken.holder());
        client.release(youngTaken, null, null);
    }

    /**
     * Without a cycle nothing is broken: a younger holder whose wait at the other server is answered goes back to
     * waiting for nothing, and an older request that comes after waits for it and gets the name when it commits.
     */
    @Test
    void aWaitElsewhereThatEndedBreaksNothingLater() throws Exception {
        LeaseServer a = start();
        LeaseServer b = start();
        RemoteLeaseService client = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(a.address(),
                b.address()).callTimeout(Duration.ofSeconds(10)).build()));
        String[] names = namesOnTwoServers(client);
        Instant t0 = client.now();
        Lease youngFirst = client.acquire(tentative(YOUNG, t0.plusMillis(5), names[0]).build());
        // A wait on the other server that is granted at once, and so ends.
        Lease youngSecond = client.acquire(tentative(YOUNG, t0.plusMillis(5), names[1]).waitFor(LONG_WAIT).build());
        CompletableFuture<Lease> old = client.acquireAsync(tentative(OLD, t0, names[0]).waitFor(LONG_WAIT).build());
        Thread.sleep(200);
        assertFalse(old.isDone(), "the younger holder waits for nothing now: the older request waits for it");
        Lease committed = client.upgrade(youngFirst, null);
        client.release(client.upgrade(youngSecond, null), null, null);
        client.release(committed, null, null);
        Lease got = old.get(20, TimeUnit.SECONDS);
        assertNotNull(got);
        assertEquals(Ending.RELINQUISHED, got.grant(names[0]).predecessor().ending());
        client.release(got, null, null);
    }
}
