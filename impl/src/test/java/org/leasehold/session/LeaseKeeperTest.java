package org.leasehold.session;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.KeptLease;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionEvent.Type;
import org.leasehold.time.ManualTimeSource;

/**
 * The keeping rules, for a single kept lease and for a group of leases kept together (as the resource adapter keeps
 * each unit of work's): renew every third of the lease time, retry every tenth after a failure, jeopardy at the first
 * failure, safe at the next success, expired at the deadline or when the service says the lease is over. A real
 * embedded engine on the manual clock; renewals run on the thread that moves the clock, through an executor that
 * refuses work on demand (as an overloaded work manager does).
 */
class LeaseKeeperTest {
    private static final Instant START = Instant.parse("2030-01-01T00:00:00Z");
    private static final HolderId HOLDER = new HolderId("keeper-test", "holder");
    private static final Duration LEASE_TIME = Duration.ofSeconds(3);

    private final ManualTimeSource time = new ManualTimeSource(START);
    private final EmbeddedLeaseService engine = new EmbeddedLeaseService(
            EngineConfig.defaults().withQuietPeriod(Duration.ZERO).withIdleRetention(Duration.ofMinutes(1)), time);
    private final AtomicBoolean refuse = new AtomicBoolean();
    private final Executor work = task -> {
        if (refuse.get()) {
            throw new RejectedExecutionException("the test executor refuses work");
        }
        task.run();
    };
    private final LeaseKeeper keeper = new LeaseKeeper(engine, time, () -> Duration.ZERO, work);
    private final Recorder recorder = new Recorder();

    @AfterEach
    void stop() {
        keeper.close();
        engine.close();
    }

    /** A holding of leases the test adds to, as a unit of work does. */
    private static final class Leases implements LeaseKeeper.Holding {
        private final List<Lease> held = new ArrayList<>();
        private volatile boolean over;

        synchronized void add(Lease l) {
            held.add(l);
        }

        @Override
        public synchronized List<Lease> leases() {
            return List.copyOf(held);
        }

        @Override
        public synchronized void replace(Lease before, Lease after) {
            int i = held.indexOf(before);
            if (i >= 0) {
                held.set(i, after);
            }
        }

        @Override
        public boolean over() {
            return over;
        }
    }

    /** What a watcher heard, with the local time it heard it at. */
    private final class Recorder implements LeaseKeeper.Watcher {
        final List<Instant> renewedAt = new CopyOnWriteArrayList<>();
        final List<Instant> retryAt = new CopyOnWriteArrayList<>();
        final List<LeaseKeeper.Event> events = new CopyOnWriteArrayList<>();
        final List<Instant> eventAt = new CopyOnWriteArrayList<>();

        @Override
        public void renewed(List<Lease> leases) {
            renewedAt.add(time.now());
        }

        @Override
        public void retrying(int failures, Throwable cause, Instant at) {
            assertEquals(retryAt.size() + 1, failures, "failures are counted in a row");
            retryAt.add(at);
        }

        @Override
        public void event(LeaseKeeper.Event e) {
            events.add(e);
            eventAt.add(time.now());
        }

        List<Type> types() {
            return events.stream().map(LeaseKeeper.Event::type).toList();
        }
    }

    private Lease acquire(String name) throws Exception {
        return engine.acquire(LeaseRequest.builder(HOLDER, name).leaseFor(LEASE_TIME).build());
    }

    private Leases holding(String... names) throws Exception {
        Leases h = new Leases();
        for (String n : names) {
            h.add(acquire(n));
        }
        return h;
    }

    private static Instant at(double seconds) {
        return START.plusMillis(Math.round(seconds * 1000));
    }

    @Test
    void theLeasesOfAGroupAreRenewedTogetherEveryThirdOfTheLeaseTime() throws Exception {
        Leases h = holding("group/1", "group/2");
        keeper.keepAll(h, LEASE_TIME, recorder);
        time.advance(Duration.ofMillis(3_500));
        assertEquals(List.of(at(1), at(2), at(3)), recorder.renewedAt);
        for (Lease l : h.leases()) {
            assertEquals(at(6), l.deadline(), "renewed for the lease time at the last renewal: " + l.describe());
        }
        h.add(acquire("group/3"));
        time.advance(Duration.ofMillis(600));
        assertEquals(at(7), h.leases().get(2).deadline(), "a lease added later is renewed with the others");
        assertEquals(List.of(), recorder.events, "renewals that succeed are no event");
    }

    @Test
    void aFailedRenewalIsJeopardyOnceRetriedEveryTenthAndSafeAtTheNextSuccess() throws Exception {
        Leases h = holding("jeopardy/1");
        keeper.keepAll(h, LEASE_TIME, recorder);
        refuse.set(true);
        time.advance(Duration.ofMillis(1_650));
        assertEquals(List.of(Type.JEOPARDY), recorder.types());
        LeaseKeeper.Event jeopardy = recorder.events.get(0);
        assertEquals(at(1), recorder.eventAt.get(0), "told at the failed renewal");
        assertEquals(1, jeopardy.failures());
        assertInstanceOf(RejectedExecutionException.class, jeopardy.cause());
        assertEquals(at(3), jeopardy.deadline(), "retried until the deadline");
        assertEquals(List.of(at(1.3), at(1.6), at(1.9)), recorder.retryAt, "a retry every tenth of the lease time");

        refuse.set(false);
        time.advance(Duration.ofMillis(250));
        assertEquals(List.of(Type.JEOPARDY, Type.SAFE), recorder.types(), "jeopardy is told once, then safe");
        LeaseKeeper.Event safe = recorder.events.get(1);
        assertEquals(3, safe.failures(), "safe says how many renewals failed before it");
        assertEquals(at(1.9).plus(LEASE_TIME), safe.deadline());
        assertEquals(List.of(at(1.9)), recorder.renewedAt);

        time.advance(Duration.ofSeconds(1));
        assertEquals(List.of(at(1.9), at(2.9)), recorder.renewedAt, "back to a renewal every third");
    }

    @Test
    void leasesNotRenewedByTheirDeadlineExpireThereAfterRetriesUpToIt() throws Exception {
        Leases h = holding("deadline/1", "deadline/2");
        LeaseKeeper.Keeping k = keeper.keepAll(h, LEASE_TIME, recorder);
        refuse.set(true);
        time.advance(Duration.ofSeconds(5));
        assertEquals(List.of(Type.JEOPARDY, Type.EXPIRED), recorder.types());
        LeaseKeeper.Event expired = recorder.events.get(1);
        assertEquals(at(3), recorder.eventAt.get(1), "expired at the deadline, on the local clock");
        assertFalse(expired.byService());
        assertEquals(2, expired.leases().size(), "one event for the group");
        assertEquals(recorder.retryAt.size(), expired.failures());
        assertTrue(recorder.retryAt.contains(at(2.999)), "a retry just before it: " + recorder.retryAt);
        assertTrue(recorder.retryAt.stream().noneMatch(t -> t.isAfter(at(3))), "none after it: " + recorder.retryAt);
        assertInstanceOf(RejectedExecutionException.class, expired.cause(), "the last failure");
        assertFalse(k.isLive());
        int retries = recorder.retryAt.size();
        time.advance(Duration.ofSeconds(5));
        assertEquals(retries, recorder.retryAt.size(), "nothing more once expired");
    }

    @Test
    void aLeaseTheServiceSaysIsOverExpiresAtOnce() throws Exception {
        Leases h = holding("over/1");
        keeper.keepAll(h, LEASE_TIME, recorder);
        engine.release(h.leases().get(0), null, null);
        time.advance(Duration.ofMillis(1_100));
        assertEquals(List.of(Type.EXPIRED), recorder.types(), "no jeopardy: the service answered");
        LeaseKeeper.Event expired = recorder.events.get(0);
        assertTrue(expired.byService());
        assertInstanceOf(LeaseException.class, expired.cause());
        assertEquals(at(1), recorder.eventAt.get(0));
    }

    @Test
    void aHolderThatRenewedItsLeasesItselfIsNotExpiredAtTheOldDeadline() throws Exception {
        Leases h = holding("self/1");
        keeper.keepAll(h, LEASE_TIME, recorder);
        refuse.set(true);
        time.advance(Duration.ofMillis(1_500));
        Lease l = h.leases().get(0);
        h.replace(l, engine.renew(l, at(1.5).plus(LEASE_TIME), null));
        time.advance(Duration.ofMillis(2_000));
        assertEquals(List.of(Type.JEOPARDY), recorder.types(), "not expired at 3 s: the lease now ends at 4.5 s");
        refuse.set(false);
        time.advance(Duration.ofMillis(300));
        assertEquals(List.of(Type.JEOPARDY, Type.SAFE), recorder.types());
    }

    @Test
    void aStoppedOrOverGroupIsNoLongerRenewedAndHearsNothing() throws Exception {
        Leases stopped = holding("stop/1");
        LeaseKeeper.Keeping k = keeper.keepAll(stopped, LEASE_TIME, recorder);
        Leases over = holding("stop/2");
        Recorder overHeard = new Recorder();
        keeper.keepAll(over, LEASE_TIME, overHeard);
        k.stop();
        over.over = true;
        time.advance(Duration.ofSeconds(10));
        assertFalse(k.isLive());
        assertEquals(List.of(), recorder.renewedAt);
        assertEquals(List.of(), overHeard.renewedAt);
        assertEquals(List.of(), recorder.events, "stopping is no event, and an ended lease is not expired");
        assertEquals(List.of(), overHeard.events);
    }

    @Test
    void aClosedKeeperRenewsNothingMore() throws Exception {
        Leases h = holding("closed/1");
        keeper.keepAll(h, LEASE_TIME, recorder);
        time.advance(Duration.ofMillis(1_100));
        keeper.close();
        time.advance(Duration.ofSeconds(10));
        assertEquals(List.of(at(1)), recorder.renewedAt);
        assertEquals(List.of(), recorder.retryAt, "closing is not a failure");
    }

    @Test
    void aSingleKeptLeaseTellsItsListenerAndIsReleasedOnce() throws Exception {
        List<SessionEvent> heard = new CopyOnWriteArrayList<>();
        KeptLease kept = keeper.keep(acquire("single/1"), LEASE_TIME, heard::add);
        refuse.set(true);
        time.advance(Duration.ofMillis(1_100));
        refuse.set(false);
        time.advance(Duration.ofMillis(300));
        assertEquals(List.of(Type.JEOPARDY, Type.SAFE), heard.stream().map(SessionEvent::type).toList());
        assertTrue(heard.get(0).detail().startsWith("renewing failed; retrying until the deadline " + at(3)),
                heard.get(0).detail());
        assertEquals("a renewal succeeded again; the deadline is now " + at(1.3).plus(LEASE_TIME),
                heard.get(1).detail());
        assertEquals(at(1.3).plus(LEASE_TIME), kept.lease().deadline());
        kept.release(null, null);
        assertFalse(kept.isLive());
        assertThrows(LeaseExpiredException.class, () -> kept.release(null, null), "released once");
        kept.close();
        time.advance(Duration.ofSeconds(10));
        assertEquals(2, heard.size(), "a released lease is no longer kept, and not expired");
        assertThrows(IllegalArgumentException.class, () -> keeper.keep(acquire("single/2"), Duration.ZERO, heard::add));
    }
}
