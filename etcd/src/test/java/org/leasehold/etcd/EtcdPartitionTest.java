package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.SessionEvent;
import org.leasehold.session.LeaseKeeper;
import org.leasehold.time.ManualTimeSource;

/**
 * A client cut off from etcd while it holds a lease (a relay between it and etcd is cut; a second client is connected
 * directly): its lease ends at its deadline by its own clock, whatever etcd does. Its keeper reports jeopardy, then
 * expiry at the deadline; the other client gets the name only from the deadline plus the clock-error bound, with the
 * deadline as floor; and once the network is back the cut-off holder's calls fail as lost, never renewing silently.
 */
class EtcdPartitionTest {
    private static final Duration LEASE = Duration.ofSeconds(2);
    private static final Duration CLOCK_ERROR = Duration.ofMillis(300);
    private static final Duration GRACE = Duration.ofMillis(200);

    @Test
    void aCutOffHolderLosesItsLeaseAtItsDeadlineAndTheOtherSideTakesOverOnlyAfterTheClockErrorBound()
            throws Exception {
        EtcdCluster etcd = EtcdFixture.singleMember();
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        EtcdConfig config = EtcdConfig.defaults(etcd.endpoints()).withPrefix("partition/" + UUID.randomUUID() + "/")
                .withTimes(Duration.ofSeconds(10), GRACE, CLOCK_ERROR, Duration.ZERO)
                .withCallTimeout(Duration.ofSeconds(3));
        List<SessionEvent> events = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch jeopardy = new CountDownLatch(1);
        CountDownLatch expired = new CountDownLatch(1);
        try (TcpProxy network = new TcpProxy(etcd.endpoints().get(0));
                EtcdLeaseService cutOff = new EtcdLeaseService(new EtcdConfig(List.of(network.endpoint()),
                        config.prefix(), "cut-off", config.maxLeaseDuration(), GRACE, CLOCK_ERROR, Duration.ZERO,
                        config.maxNamesPerRequest(), config.historyPerName(), config.maxMetadataChars(),
                        config.maxWaitersPerName(), config.callTimeout(), config.sessionTtl(), null, null, null, null,
                        null, config.listNames()), time);
                EtcdLeaseService direct = new EtcdLeaseService(config.withServiceId("direct"), time);
                LeaseKeeper keeper = new LeaseKeeper(cutOff, time, () -> Duration.ZERO)) {
            Lease held = cutOff.acquire(LeaseRequest.builder(new HolderId("app-a", "tx-1"), "p/1").leaseFor(LEASE)
                    .build());
            long generation = held.grant("p/1").generation();
            Instant deadline = held.deadline();
            assertEquals(EtcdFixture.START.plus(LEASE), deadline);

            network.cut();
            KeptLease kept = keeper.keep(held, LEASE, e -> {
                events.add(e);
                if (e.type() == SessionEvent.Type.JEOPARDY) {
                    jeopardy.countDown();
                } else if (e.type() == SessionEvent.Type.EXPIRED) {
                    expired.countDown();
                }
            });
            // The first renewal (a third of the lease time on) cannot reach etcd.
            time.advance(Duration.ofMillis(700));
            await(jeopardy, "the cut-off holder's keeper reported jeopardy: " + events);
            assertThrows(LeaseServiceUnavailableException.class, () -> cutOff.renewFor(held, LEASE),
                    "a renewal without etcd fails as unavailable");
            assertFalse(cutOff.check("p/1", generation), "without an answer from etcd a check fails closed");
            assertTrue(direct.check("p/1", generation), "etcd still knows the holder before its deadline");

            // Its deadline passes by its own clock: expired, whatever etcd does.
            time.advance(Duration.between(time.now(), deadline));
            await(expired, "the cut-off holder's keeper reported expiry at the deadline: " + events);
            assertEquals(List.of(SessionEvent.Type.JEOPARDY, SessionEvent.Type.EXPIRED),
                    events.stream().map(SessionEvent::type).toList(), "jeopardy, then expiry, never safe");
            assertFalse(kept.isLive());
            assertFalse(direct.check("p/1", generation), "nobody may write under it from its deadline on");

            // The other side takes the name over only at deadline + clock-error bound.
            LeaseRequest other = LeaseRequest.builder(new HolderId("app-b", "tx-1"), "p/1").build();
            assertThrows(LeaseBusyException.class, () -> direct.acquire(other), "at the deadline");
            time.set(deadline.plus(CLOCK_ERROR).minus(Duration.ofNanos(1_000)));
            assertThrows(LeaseBusyException.class, () -> direct.acquire(other), "1 µs before deadline + clock error");
            time.set(deadline.plus(CLOCK_ERROR));
            Lease taken = direct.acquire(other);
            assertEquals(deadline.plus(CLOCK_ERROR), taken.grantedAt());
            assertTrue(taken.grant("p/1").generation() > generation, "a new generation");
            assertEquals(deadline, taken.floor(), "the cut-off holder's deadline is the floor");
            // Writes from deadline + grace, or from the grant if that is later (here: the clock-error bound is longer).
            Instant writable = deadline.plus(GRACE).isAfter(taken.grantedAt()) ? deadline.plus(GRACE) : taken.grantedAt();
            assertEquals(writable, taken.grant("p/1").writableFrom());

            // Back on the network, the old holder's calls fail as lost: no silent re-grant.
            network.heal();
            LeaseException renewal = reconnected(() -> cutOff.renewFor(held, LEASE));
            assertTrue(renewal instanceof LeaseExpiredException || renewal instanceof LeaseBrokenException,
                    "the renewal after healing fails as lost: " + renewal);
            LeaseException release = reconnected(() -> cutOff.release(held, null, null));
            assertTrue(release instanceof LeaseExpiredException || release instanceof LeaseBrokenException,
                    "the release after healing fails as lost: " + release);
            assertFalse(cutOff.check("p/1", generation), "the old generation fails the fencing check");
            assertTrue(cutOff.check("p/1", taken.grant("p/1").generation()), "the new holder passes it");
            direct.release(taken, null, null);
        }
    }

    /** Calls {@code call} until it fails otherwise than as unavailable (the client reconnecting); that failure. */
    private static LeaseException reconnected(Call call) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        LeaseServiceUnavailableException last = null;
        while (System.nanoTime() < until) {
            try {
                call.run();
                fail("the call succeeded for a lease that ended while its holder was cut off");
            } catch (LeaseServiceUnavailableException e) {
                last = e;
                Thread.sleep(100); // the client's own reconnection, in real time: nothing to be woken by
            } catch (LeaseException e) {
                return e;
            }
        }
        throw new AssertionError("etcd did not become reachable again through the healed relay", last);
    }

    private interface Call {
        void run() throws LeaseException;
    }

    private static void await(CountDownLatch latch, String what) throws InterruptedException {
        assertTrue(latch.await(60, TimeUnit.SECONDS), what);
    }
}
