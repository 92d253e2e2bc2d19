package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.ManualTimeSource;

/**
 * The engine's edges: a closed engine, locks left by no call, the metadata limit, the end of the quiet period, a
 * request that must wound on one name and is refused on another, and the texts of a refusal.
 */
class EngineEdgesTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");
    private static final HolderId C = new HolderId("p", "c");
    private static final HolderId D = new HolderId("p", "d");

    private final ManualTimeSource time = new ManualTimeSource(EmbeddedFixture.START);
    private final ExecutorService first = Executors.newSingleThreadExecutor();
    private final ExecutorService second = Executors.newSingleThreadExecutor();
    private EmbeddedLeaseService engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO));

    private EmbeddedLeaseService engine(EngineConfig config) {
        return new EmbeddedLeaseService(config.withIdleRetention(Duration.ofMinutes(1)), time);
    }

    @AfterEach
    void close() {
        engine.close();
        first.shutdownNow();
        second.shutdownNow();
    }

    private static <T> T within(Future<T> f, String what) throws Exception {
        try {
            return f.get(20, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError(what + " did not return within 20 s: a lock was left held", e);
        }
    }

    @Test
    void aClosedEngineRefusesEveryCallFailsItsWaitersAndLeavesNoTimer() throws Exception {
        Lease tentative = engine.acquire(LeaseRequest.builder(A, "c/1").tentative().build());
        Lease full = engine.acquire(LeaseRequest.builder(B, "c/2").build());
        CompletableFuture<Lease> waiting = engine.acquireAsync(LeaseRequest.builder(C, "c/2")
                .waitFor(Duration.ofSeconds(30)).build());
        assertFalse(waiting.isDone());
        engine.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
        assertEquals("the lease service " + engine.serviceId() + " was closed while the request waited",
                e.getCause().getMessage());
        assertEquals(0, time.pendingTimers(), "the sweep, the waiter's time-out and the name's wake are cancelled");
        String closed = "the lease service " + engine.serviceId() + " is closed";
        assertEquals(closed, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.renew(tentative, time.now().plusSeconds(5), null)).getMessage());
        assertEquals(closed, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.upgrade(tentative, null)).getMessage());
        assertEquals(closed, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.release(tentative, null, null)).getMessage());
        assertEquals(closed, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.holdInDoubt(full, time.now().plusSeconds(30))).getMessage());
        assertEquals(closed, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.reinstate(full)).getMessage());
        engine.close();
        time.advance(Duration.ofMinutes(10));
        assertEquals(0, time.pendingTimers(), "a closed engine schedules nothing");
        assertFalse(engine.granting());
    }

    @Test
    void noCallLeavesALockHeldForAnotherThread() throws Exception {
        Lease held = within(first.submit(() -> {
            Lease l = engine.acquire(LeaseRequest.builder(A, "lock/1").tentative().build());
            assertFalse(engine.check("lock/1", l.grant("lock/1").generation()), "a tentative lease does not check");
            Lease renewed = engine.renew(l, time.now().plusSeconds(5), "renewed");
            Lease up = engine.upgrade(renewed, null);
            assertTrue(engine.check("lock/1", up.grant("lock/1").generation()));
            assertFalse(engine.check("lock/1", up.grant("lock/1").generation() + 1));
            assertFalse(engine.check("lock/unknown", 1));
            assertFalse(engine.check(null, 1));
            assertEquals(1, engine.inspect("lock/", 10).size());
            return up;
        }), "renew, upgrade, check and inspect");
        ExecutionException busy = assertThrows(ExecutionException.class, () -> within(second.submit(
                () -> engine.acquire(LeaseRequest.builder(B, "lock/1").build())), "an acquisition"));
        assertTrue(busy.getCause() instanceof LeaseBusyException, String.valueOf(busy.getCause()));
        Lease inDoubt = within(first.submit(() -> {
            Lease l = engine.holdInDoubt(held, time.now().plusSeconds(60));
            time.advance(Duration.ofSeconds(30));
            return l;
        }), "a hold in doubt and its renewals on the clock's thread");
        assertTrue(engine.inspect("lock/1", 1).get(0).holders().get(0).deadline().isAfter(held.deadline()),
                "renewed while held in doubt");
        within(first.submit(() -> engine.release(inDoubt, null, null)), "a release");
        Lease b = within(second.submit(() -> engine.acquire(LeaseRequest.builder(B, "lock/1").build())),
                "an acquisition after the release");
        assertEquals(B, b.holder());
        CompletableFuture<Lease> waiting = engine.acquireAsync(LeaseRequest.builder(C, "lock/1")
                .waitFor(Duration.ofSeconds(30)).build());
        within(first.submit(() -> {
            engine.close();
            return null;
        }), "close");
        assertThrows(ExecutionException.class, () -> waiting.get(20, TimeUnit.SECONDS));
        assertEquals(1, within(second.submit(() -> engine.inspect("lock/", 10)), "inspect after close").size());
    }

    @Test
    void aWakeLetsGoOfItsNamesShardForOtherThreads() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "wake/x").leaseFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "wake/x")
                .waitFor(Duration.ofSeconds(10)).build());
        // The wake at the holder's deadline runs on the thread that moves the clock, and grants the waiter.
        within(first.submit(() -> {
            time.advance(Duration.ofSeconds(2));
            return null;
        }), "the clock's advance");
        assertTrue(b.isDone(), "granted by the wake");
        // Another thread takes the name's shard (a lock a thread may take again, so only another one notices).
        Future<Void> release = second.submit(() -> {
            engine.release(b.get(), null, null);
            return null;
        });
        try {
            release.get(5, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            // The shard stays locked by the other thread: closing this engine would wait for it for ever.
            engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO));
            throw new AssertionError("a release on another thread waited for the name's shard after a wake", e);
        }
        assertEquals(0, engine.inspect("wake/x", 1).get(0).holders().size());
    }

    @Test
    void idleNamesAreForgottenAtTheRetentionAndSweptEveryHalfRetention() throws Exception {
        Lease a = engine.acquire(LeaseRequest.builder(A, "idle/a").build());
        engine.release(a, null, null);
        time.advance(Duration.ofSeconds(1));
        Lease b = engine.acquire(LeaseRequest.builder(B, "idle/b").build());
        engine.release(b, null, null);
        time.advance(Duration.ofSeconds(59));
        assertEquals(1, within(first.submit(engine::rememberedNames), "counting names"),
                "the first sweep, one retention after the start, forgets what was idle that long, to the microsecond");
        time.advance(Duration.ofSeconds(30));
        assertEquals(0, within(second.submit(engine::rememberedNames), "counting names on another thread"),
                "the next sweep comes half a retention later");
        within(first.submit(() -> {
            time.advance(Duration.ofSeconds(30));
            return null;
        }), "a sweep on another thread");
        assertEquals(B, within(second.submit(() -> engine.acquire(LeaseRequest.builder(B, "idle/a").build())),
                "an acquisition after a sweep on another thread").holder());
    }

    @Test
    void aLeaseThisServiceKnowsNothingOfIsExpiredFromItsDeadlineToTheMicrosecondAndStaleBefore() throws Exception {
        // Another service's grant: the name is unknown here, as a name is once it is forgotten, so no history says
        // how the grant ended. Before its deadline it is not a grant of this service; from its deadline, expired.
        EmbeddedLeaseService other = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO));
        try {
            Lease foreign = other.acquire(LeaseRequest.builder(A, "unknown/x").leaseFor(Duration.ofSeconds(10)).build());
            time.set(foreign.deadline().minusNanos(1_000));
            StaleLeaseException stale = assertThrows(StaleLeaseException.class,
                    () -> engine.renew(foreign, time.now().plusSeconds(5), null));
            assertTrue(stale.getMessage().contains("is not a current grant of this service"), stale.getMessage());
            time.set(foreign.deadline());
            assertThrows(LeaseExpiredException.class, () -> engine.renew(foreign, time.now().plusSeconds(5), null));
            assertThrows(LeaseExpiredException.class, () -> engine.upgrade(foreign, null));
        } finally {
            other.close();
        }
    }

    @Test
    void aNameWithAHolderIsNotForgottenWhenTheRetentionIsShorterThanTheLease() throws Exception {
        engine.close();
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)
                .withIdleRetention(Duration.ofSeconds(1)), time);
        Lease a = engine.acquire(LeaseRequest.builder(A, "kept").build());
        time.advance(Duration.ofSeconds(5));
        assertEquals(1, engine.rememberedNames(), "five sweeps passed a name with a live holder");
        assertThrows(LeaseBusyException.class, () -> engine.acquire(LeaseRequest.builder(B, "kept").build()));
        engine.release(a, null, null);
    }

    @Test
    void aRetakenFullLeaseRaisesTheFloorToItsImpliedWatermark() throws Exception {
        Instant t0 = time.now();
        Lease first = engine.acquire(LeaseRequest.builder(A, "retake/a").build());
        time.advance(Duration.ofSeconds(2));
        Lease again = engine.acquire(LeaseRequest.builder(A, "retake/a").build());
        Instant implied = t0.plusMillis(2_500);
        assertEquals(implied, again.grant("retake/a").floor(), "now plus the clock error, below the old deadline");
        assertEquals(first.grant("retake/a").correlationId(), again.grant("retake/a").predecessor().correlationId());
        assertEquals(implied, again.grant("retake/a").predecessor().watermark());

        Lease shortLease = engine.acquire(LeaseRequest.builder(A, "retake/b").leaseFor(Duration.ofSeconds(1)).build());
        time.advance(Duration.ofMillis(800));
        Lease retaken = engine.acquire(LeaseRequest.builder(A, "retake/b").build());
        assertEquals(shortLease.deadline().minusNanos(1_000), retaken.grant("retake/b").floor(),
                "never at or past the old deadline");
    }

    @Test
    void metadataAtTheLimitIsKeptAndOneCharacterMoreIsRefusedOnRenewAndRelease() throws Exception {
        engine.close();
        engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO).withMaxMetadataChars(8));
        Lease l = engine.acquire(LeaseRequest.builder(A, "meta").build());
        Lease renewed = engine.renew(l, time.now().plusSeconds(5), "12345678");
        assertEquals("12345678", engine.inspect("meta", 1).get(0).history().get(0).metadata());
        String refusal = "the metadata is 9 characters; the limit is 8: record where the updates are (a log name, a "
                + "bucket range), not the updates";
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> engine.renew(renewed, time.now().plusSeconds(6), "123456789"));
        assertEquals(Reason.METADATA_TOO_LONG, e.reason());
        assertEquals(refusal, e.getMessage());
        assertEquals(refusal, assertThrows(InvalidLeaseRequestException.class,
                () -> engine.release(renewed, null, "123456789")).getMessage());
        assertEquals(1, engine.inspect("meta", 1).get(0).history().size(), "nothing recorded by a refused call");
        engine.release(renewed, null, "87654321");
    }

    @Test
    void aWaitEndingExactlyWhenTheQuietPeriodEndsIsQueuedAndGranted() throws Exception {
        engine.close();
        engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ofSeconds(5)));
        Instant from = EmbeddedFixture.START.plusSeconds(5);
        assertEquals(from, engine.availableFrom());
        LeaseServiceUnavailableException early = assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.acquire(LeaseRequest.builder(A, "quiet").waitFor(Duration.ofMillis(4_999)).build()));
        assertEquals(from, early.availableAt());
        assertEquals("the lease service " + engine.serviceId() + " started at " + EmbeddedFixture.START + " and grants "
                + "nothing until " + from + " (its quiet period, so that every lease an earlier incarnation granted is "
                + "over); it is now " + EmbeddedFixture.START + ": retry then, or wait longer", early.getMessage());
        CompletableFuture<Lease> exact = engine.acquireAsync(LeaseRequest.builder(A, "quiet")
                .waitFor(Duration.ofSeconds(5)).build());
        assertFalse(exact.isDone(), "a wait that reaches the end of the quiet period is queued");
        time.advance(Duration.ofMillis(4_999));
        assertFalse(engine.granting());
        assertFalse(exact.isDone());
        time.advance(Duration.ofMillis(1));
        assertTrue(engine.granting(), "granting from the end of the quiet period itself");
        assertEquals(from, exact.get(20, TimeUnit.SECONDS).grantedAt());
    }

    @Test
    void aRequestThatMayWoundOnOneNameIsStillRefusedByAnOlderFullHolderOfAnother() throws Exception {
        Instant t0 = time.now();
        Lease a = engine.acquire(LeaseRequest.builder(A, "w/y").startedAt(t0).build());
        engine.acquire(LeaseRequest.builder(B, "w/x").tentative().startedAt(t0.plusSeconds(2)).build());
        EmbeddedFixture.waitElsewhere(engine, B, t0.plusSeconds(2));
        LeaseBusyException e = assertThrows(LeaseBusyException.class,
                () -> engine.acquire(LeaseRequest.builder(C, "w/x", "w/y").startedAt(t0.plusSeconds(1)).build()));
        assertEquals("w/y", e.name());
        assertEquals(a.deadline(), e.heldUntil());
        assertEquals("'w/y' is held (full " + LeaseMode.EXCLUSIVE + " by " + A + " until " + a.deadline()
                + "); not waiting (zero wait): retry later, or wait longer", e.getMessage());
        assertEquals(List.of(B), engine.inspect("w/x", 1).get(0).holders().stream().map(h -> h.holder()).toList(),
                "the younger tentative holder is not wounded for a request that is refused");
        assertEquals(List.of(A), engine.inspect("w/y", 1).get(0).holders().stream().map(h -> h.holder()).toList());
    }

    @Test
    void aRequestBlockedOnSeveralNamesIsRefusedForTheFirstInNameOrder() throws Exception {
        Lease x = engine.acquire(LeaseRequest.builder(A, "two/x").build());
        engine.acquire(LeaseRequest.builder(B, "two/y").build());
        LeaseBusyException e = assertThrows(LeaseBusyException.class,
                () -> engine.acquire(LeaseRequest.builder(C, "two/y", "two/x").build()));
        assertEquals("two/x", e.name());
        assertEquals("'two/x' is held (full " + LeaseMode.EXCLUSIVE + " by " + A + " until " + x.deadline()
                + "); not waiting (zero wait): retry later, or wait longer", e.getMessage());
    }

    @Test
    void aSemaphoreOfOnePermitAdmitsOneHolder() throws Exception {
        Lease one = engine.acquire(LeaseRequest.builder(A, "sem/1").semaphore(1).build());
        assertEquals(new LeaseMode(LeaseMode.Type.SEMAPHORE, 1), one.mode());
        assertThrows(LeaseBusyException.class,
                () -> engine.acquire(LeaseRequest.builder(B, "sem/1").semaphore(1).build()));
    }

    @Test
    void aRefusalNamesAtMostThreeHoldersOrTheQueueAndHowLongItWaited() throws Exception {
        Lease[] shared = new Lease[4];
        HolderId[] ids = {A, B, C, D};
        for (int i = 0; i < 4; i++) {
            shared[i] = engine.acquire(LeaseRequest.builder(ids[i], "m").shared().build());
        }
        HolderId e = new HolderId("p", "e");
        String held = "'m' is held (";
        for (int i = 0; i < 3; i++) {
            held += (i > 0 ? ", " : "") + "full " + LeaseMode.SHARED + " by " + ids[i] + " until "
                    + shared[i].deadline();
        }
        held += ", ...)";
        assertEquals(held + "; not waiting (zero wait): retry later, or wait longer", assertThrows(
                LeaseBusyException.class, () -> engine.acquire(LeaseRequest.builder(e, "m").build())).getMessage());
        CompletableFuture<Lease> waited = engine.acquireAsync(LeaseRequest.builder(e, "m")
                .waitFor(Duration.ofSeconds(2)).build());
        HolderId f = new HolderId("p", "f");
        assertEquals("'m' is promised to 1 earlier waiting request(s); not waiting (zero wait): retry later, or wait "
                + "longer", assertThrows(LeaseBusyException.class,
                        () -> engine.acquire(LeaseRequest.builder(f, "m").build())).getMessage());
        time.advance(Duration.ofSeconds(2));
        ExecutionException x = assertThrows(ExecutionException.class, () -> waited.get(20, TimeUnit.SECONDS));
        assertEquals(held + "; waited 2000 ms: retry later, or wait longer", x.getCause().getMessage());
    }

    @Test
    void aWaitEndingWhenTheHolderExpiresIsGrantedWhicheverTimerRunsFirst() throws Exception {
        for (int i = 0; i < 20; i++) {
            String name = "end/" + i;
            Lease a = engine.acquire(LeaseRequest.builder(A, name).leaseFor(Duration.ofSeconds(3)).build());
            CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, name)
                    .waitFor(Duration.ofSeconds(3)).build());
            assertFalse(b.isDone());
            time.advance(Duration.ofSeconds(3));
            Lease granted = b.get(20, TimeUnit.SECONDS);
            assertEquals(a.deadline(), granted.grantedAt(), name);
            engine.release(granted, null, null);
        }
    }

    @Test
    void aNamedEngineKeepsItsIdAndAnUnnamedOneMakesAShortOne() {
        assertTrue(engine.serviceId().matches("embedded-[0-9a-f]{1,8}"), engine.serviceId());
        EmbeddedLeaseService named = engine(EngineConfig.defaults().withServiceId("svc-7"));
        try {
            assertEquals("svc-7", named.serviceId());
            assertNull(named.signer());
            assertEquals(EngineConfig.defaults().maxLeaseDuration(), named.config().maxLeaseDuration());
        } finally {
            named.close();
        }
    }

    @Test
    void anIdempotentUpgradeReturnsTheSameLease() throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, "up").tentative().build());
        Lease up = engine.upgrade(l, null);
        assertEquals(LeaseKind.FULL, up.kind());
        assertEquals(l.deadline(), up.deadline());
        assertEquals(up, engine.upgrade(up, null));
    }

    @Test
    void aHoldInDoubtEndingNowIsNoLongerShownAsHeld() throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, "doubt").leaseFor(Duration.ofSeconds(10)).build());
        Instant until = time.now().plusSeconds(4);
        engine.holdInDoubt(l, until);
        time.set(until.minusNanos(1_000));
        assertEquals(until, engine.inspect("doubt", 1).get(0).holders().get(0).inDoubtUntil());
        time.set(until);
        assertEquals(l.deadline(), engine.inspect("doubt", 1).get(0).holders().get(0).deadline(),
                "still held, until its own deadline");
        assertNull(engine.inspect("doubt", 1).get(0).holders().get(0).inDoubtUntil(), "the hold ended now");
    }

    @Test
    void aHoldInDoubtIsAtMostADayAndItsRenewalWaitsOutAFenceThatMoves() throws Exception {
        Instant t0 = time.now();
        Lease l = engine.acquire(LeaseRequest.builder(A, "fenced").leaseFor(Duration.ofSeconds(10)).build());
        engine.holdInDoubt(l, t0.plus(Duration.ofDays(2)));
        assertEquals(t0.plus(EmbeddedLeaseService.MAX_IN_DOUBT_HOLD),
                engine.inspect("fenced", 1).get(0).holders().get(0).inDoubtUntil());
        engine.fenceAt(t0.plusSeconds(4), "not confirmed");
        time.set(t0.plusMillis(5_500));
        assertEquals(l.deadline(), engine.inspect("fenced", 1).get(0).holders().get(0).deadline(),
                "fenced at half the lease: not renewed");
        engine.fenceAt(t0.plusSeconds(60), "confirmed");
        time.set(t0.plusMillis(9_999));
        assertEquals(t0.plusSeconds(16), engine.inspect("fenced", 1).get(0).holders().get(0).deadline(),
                "renewed one tenth of the maximum lease after the fenced attempt");
    }

    @Test
    void aHoldInDoubtRenewsNothingOnceTheLeaseReachedItsDeadlineWhileFenced() throws Exception {
        Instant t0 = time.now();
        Lease l = engine.acquire(LeaseRequest.builder(A, "resurrect").leaseFor(Duration.ofSeconds(10)).build());
        engine.holdInDoubt(l, t0.plusSeconds(60));
        engine.fenceAt(t0.plusSeconds(4), "not confirmed");
        time.set(t0.plusMillis(9_500));
        engine.fenceAt(t0.plusSeconds(60), "confirmed");
        time.set(t0.plusSeconds(10));
        assertEquals(B, engine.acquire(LeaseRequest.builder(B, "resurrect").build()).holder(),
                "the renewal retried at the deadline itself finds the lease over, and does not bring it back");
    }

    @Test
    void aHoldRenewedWhenTheLastOneEndedIsKeptAgain() throws Exception {
        Instant t0 = time.now();
        Lease l = engine.acquire(LeaseRequest.builder(A, "again").leaseFor(Duration.ofSeconds(10)).build());
        engine.holdInDoubt(l, t0.plusSeconds(5));
        time.set(t0.plusSeconds(5));
        engine.holdInDoubt(l, t0.plusSeconds(30));
        time.set(t0.plusSeconds(11));
        assertEquals(t0.plusSeconds(20), engine.inspect("again", 1).get(0).holders().get(0).deadline(),
                "renewed by the service for the new hold at 5 s and 10 s, past the lease's own deadline");
    }

    @Test
    void aFencedEngineNeitherHoldsInDoubtNorReinstates() throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, "fh").build());
        engine.fenceAt(time.now(), "not confirmed");
        String fenced = "the lease service " + engine.serviceId() + " grants, renews and upgrades nothing since "
                + time.now() + ": not confirmed";
        assertEquals(fenced, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.holdInDoubt(l, time.now().plusSeconds(30))).getMessage());
        assertEquals(fenced, assertThrows(LeaseServiceUnavailableException.class,
                () -> engine.reinstate(l)).getMessage());
    }

    @Test
    void aReinstatementIsNotRefusedForAnExpiredHolderAndLeavesNoLockHeld() throws Exception {
        Lease earlier = engine.acquire(LeaseRequest.builder(A, "ri/b", "ri/a").build());
        engine.close();
        time.advance(Duration.ofSeconds(30));
        engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO));
        engine.acquire(LeaseRequest.builder(B, "ri/a").leaseFor(Duration.ofSeconds(2)).build());
        time.advance(Duration.ofSeconds(2));
        Lease again = within(first.submit(() -> engine.reinstate(earlier)), "a reinstatement");
        assertEquals(List.of("ri/a", "ri/b"), again.names());
        assertEquals(earlier.grants(), again.grants());
        assertThrows(ExecutionException.class, () -> within(second.submit(
                () -> engine.acquire(LeaseRequest.builder(C, "ri/b").build())), "an acquisition on another thread"));
    }

    @Test
    void aClosedEngineSweepsNoMore() throws Exception {
        time.advance(Duration.ofSeconds(61));
        engine.close();
        assertEquals(1, time.pendingTimers(), "the next sweep, scheduled before the close");
        time.advance(Duration.ofSeconds(60));
        assertEquals(0, time.pendingTimers(), "it ran, saw the engine closed, and scheduled nothing");
    }

    @Test
    void inspectShowsAnExpiredHolderGoneAndTheFloorItLeft() throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, "exp").leaseFor(Duration.ofSeconds(2)).build());
        time.advance(Duration.ofSeconds(3));
        NameStatus s = engine.inspect("exp", 1).get(0);
        assertEquals(List.of(), s.holders());
        assertEquals(l.deadline(), s.floor(), "an unrelinquished expiry: the floor is its deadline");
    }

    @Test
    void aRenewalToNowIsRefused() throws Exception {
        Lease l = engine.acquire(LeaseRequest.builder(A, "now").build());
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> engine.renew(l, time.now(), null));
        assertEquals(Reason.DEADLINE_IN_PAST, e.reason());
    }

    @Test
    void correlationIdsOfOneShardNeverRepeat() throws Exception {
        engine.close();
        engine = engine(EngineConfig.defaults().withQuietPeriod(Duration.ZERO).withShards(1));
        Set<CorrelationId> ids = new HashSet<>();
        for (int i = 0; i < 300; i++) {
            Lease l = engine.acquire(LeaseRequest.builder(A, "id/" + (i % 3)).build());
            assertTrue(ids.add(l.grant("id/" + (i % 3)).correlationId()), "grant " + i);
            engine.release(l, null, null);
        }
    }

    @Test
    void aReinstatedLeaseListsItsGrantsInNameOrder() throws Exception {
        Instant t = time.now();
        LeaseGrant b = new LeaseGrant("ro/b", 9, new CorrelationId(1, 2), t, t, null);
        LeaseGrant a = new LeaseGrant("ro/a", 7, new CorrelationId(1, 3), t, t, null);
        Lease earlier = new Lease(A, LeaseMode.EXCLUSIVE, LeaseKind.FULL, t, t.plusSeconds(5), List.of(b, a));
        assertEquals(List.of(a, b), engine.reinstate(earlier).grants());
    }

    @Test
    void aReinstatedLeaseWhoseNamesAreNotLeaseNamesIsRefusedAndTakesNothing() throws Exception {
        // The prepare journal a lease comes back from is a file: a name in it is checked like a requested one.
        Instant t = time.now();
        for (String bad : List.of("ro//bad", "ro/\u0001", "")) {
            LeaseGrant g = new LeaseGrant(bad, 3, new CorrelationId(1, 4), t, t, null);
            Lease earlier = new Lease(A, LeaseMode.EXCLUSIVE, LeaseKind.FULL, t, t.plusSeconds(5), List.of(g));
            InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                    () -> engine.reinstate(earlier), "'" + bad + "'");
            assertTrue(e.getMessage().contains("lease name"), e.getMessage());
        }
        assertEquals(0, engine.rememberedNames(), "no name was taken");
    }

    @Test
    void anEngineWithoutATimeMarkIsNeverBehindItsClock() {
        assertEquals(Duration.ZERO, engine.clockBehind());
        time.set(time.now().minusSeconds(5));
        assertEquals(Duration.ZERO, engine.clockBehind(), "without a mark it has nothing to be behind");
    }

    @Test
    void anAsynchronousRequestThatNeedNotWaitIsGrantedAtOnce() throws Exception {
        CompletableFuture<Lease> free = engine.acquireAsync(LeaseRequest.builder(A, "async/1").build());
        assertTrue(free.isDone(), "the uncontended path");
        assertEquals(A, free.get().holder());
        CompletableFuture<Lease> semaphore = engine.acquireAsync(LeaseRequest.builder(B, "async/2").semaphore(2).build());
        assertTrue(semaphore.isDone(), "the general path");
        assertEquals(B, semaphore.get().holder());
        try (EmbeddedLeaseService defaults = EmbeddedLeaseService.withDefaults(time)) {
            assertEquals(EngineConfig.defaults().maxLeaseDuration(), defaults.config().maxLeaseDuration());
        }
    }
}
