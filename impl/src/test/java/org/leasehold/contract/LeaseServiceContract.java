package org.leasehold.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.lease.WaiterStatus;

/**
 * The behaviour every {@link LeaseService} must have. Each backend runs it through a subclass that supplies a
 * {@link LeaseFixture}. Time moves only through {@link LeaseFixture#advance}, never by sleeping in the test.
 */
public abstract class LeaseServiceContract {

    protected static final HolderId A = new HolderId("host-a/jvm-1", "tx/a");
    protected static final HolderId B = new HolderId("host-b/jvm-1", "tx/b");
    protected static final HolderId C = new HolderId("host-c/jvm-1", "tx/c");
    protected static final HolderId D = new HolderId("host-d/jvm-1", "tx/d");
    private static final Duration SETTLE = Duration.ofSeconds(5);

    protected LeaseFixture fixture;
    protected LeaseService leases;

    /** Starts a fresh service with {@code settings}. */
    protected abstract LeaseFixture start(LeaseFixture.Settings settings);

    /**
     * True for a backend whose state outlives a restart of the service (etcd): the next holder then learns how the
     * previous one ended instead of {@link Ending#UNKNOWN}.
     */
    protected boolean keepsStateAcrossRestarts() {
        return false;
    }

    @BeforeEach
    void startService() {
        fixture = start(LeaseFixture.Settings.defaults());
        leases = fixture.service();
    }

    @AfterEach
    void stopService() {
        fixture.close();
    }

    protected void restartWith(LeaseFixture.Settings settings) {
        fixture.close();
        fixture = start(settings);
        leases = fixture.service();
    }

    // ------------------------------------------------------------------------------------------------ helpers

    protected static LeaseRequest.Builder req(HolderId who, String... names) {
        return LeaseRequest.builder(who, names);
    }

    protected Lease take(HolderId who, String... names) throws Exception {
        return leases.acquire(req(who, names).build());
    }

    protected static <T> T await(CompletableFuture<T> f) throws Exception {
        try {
            return f.get(SETTLE.toSeconds(), TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception ex) {
                throw ex;
            }
            throw e;
        }
    }

    /**
     * Makes {@code who}, a transaction started at {@code startedAt}, wait for a lease: it asks for a name that a full
     * lease of {@link #D} holds, and stays queued. Wound-wait breaks a younger tentative holding only while its holder
     * waits (a holder that waits for nothing cannot be in a cycle of waits). Returns the waiting request.
     */
    protected CompletableFuture<Lease> waitElsewhere(HolderId who, Instant startedAt) throws Exception {
        String name = "elsewhere/" + who.owner().replace('/', '-') + "/" + elsewhere.incrementAndGet();
        take(D, name);
        CompletableFuture<Lease> waiting = leases.acquireAsync(req(who, name).tentative().startedAt(startedAt)
                .waitFor(SETTLE).build());
        awaitWaiters(name, 1);
        return waiting;
    }

    private final java.util.concurrent.atomic.AtomicInteger elsewhere = new java.util.concurrent.atomic.AtomicInteger();

    protected static void assertPending(CompletableFuture<?> f) {
        assertFalse(f.isDone(), "the request should still be waiting, but it completed: " + f);
    }

    /**
     * Waits until {@code name} has {@code n} waiters: an asynchronous acquisition may still be on its way to a remote
     * service when the test moves the clock on another connection.
     */
    protected void awaitWaiters(String name, int n) {
        for (int i = 0; i < 10_000; i++) {
            if (status(name).waiters().size() >= n) {
                return;
            }
            Thread.onSpinWait();
        }
        throw new AssertionError("'" + name + "' never had " + n + " waiter(s): " + status(name));
    }

    protected NameStatus status(String name) {
        for (NameStatus s : leases.inspect(name, 1_000)) {
            if (s.name().equals(name)) {
                return s;
            }
        }
        return null;
    }

    protected int holders(String name) {
        NameStatus s = status(name);
        return s == null ? 0 : s.holders().size();
    }

    protected static Instant micros(Instant t, long micros) {
        return t.plusNanos(micros * 1_000L);
    }

    // ------------------------------------------------------------------------------------------------ grants

    @Test
    void grantCarriesGenerationFloorDeadlineAndWitnessFields() throws Exception {
        Instant before = leases.now();
        Lease lease = take(A, "tenant/42");
        LeaseGrant g = lease.grant("tenant/42");
        assertEquals(A, lease.holder());
        assertEquals(LeaseKind.FULL, lease.kind());
        assertEquals(LeaseMode.EXCLUSIVE, lease.mode());
        assertFalse(lease.grantedAt().isBefore(before));
        assertEquals(lease.grantedAt().plusSeconds(10), lease.deadline(), "the default lease time is the maximum");
        assertTrue(g.generation() > 0);
        assertTrue(g.floor().isBefore(lease.deadline()));
        assertFalse(g.writableFrom().isAfter(lease.grantedAt()), "no expired predecessor: writable at once");
        assertEquals(Ending.UNKNOWN, g.predecessor().ending());
        assertNotEquals(g.correlationId(), lease.grant("tenant/42").predecessor().correlationId());
        assertTrue(leases.check("tenant/42", g.generation()));
    }

    @Test
    void deadlineIsClampedToTheMaximumAndTheGrantSaysSo() throws Exception {
        Lease lease = leases.acquire(req(A, "a").leaseFor(Duration.ofHours(1)).build());
        assertEquals(lease.grantedAt().plusSeconds(10), lease.deadline());
        Lease b = leases.acquire(req(B, "b").until(leases.now().plus(Duration.ofDays(1))).build());
        assertEquals(b.grantedAt().plusSeconds(10), b.deadline());
        Instant asked = leases.now().plusSeconds(3);
        Lease c = leases.acquire(req(C, "c").until(asked).build());
        assertEquals(asked, c.deadline(), "an absolute deadline under the maximum is granted as asked");
        Lease d = leases.acquire(req(D, "d").leaseFor(Duration.ofMillis(1500)).build());
        assertEquals(d.grantedAt().plusMillis(1500), d.deadline());
    }

    @Test
    void exclusiveLeaseExcludesEveryMode() throws Exception {
        take(A, "x");
        LeaseBusyException e = assertThrows(LeaseBusyException.class, () -> take(B, "x"));
        assertEquals("x", e.name());
        assertTrue(e.getMessage().contains(A.toString()), "the message names the holder: " + e.getMessage());
        assertNotNull(e.heldUntil());
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(B, "x").shared().build()));
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(B, "x").semaphore(3).build()));
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(B, "x").tentative().build()));
    }

    private static void assertNotNull(Object o) {
        assertTrue(o != null, "expected a value");
    }

    @Test
    void sharedHoldersCoexistAndExcludeWriters() throws Exception {
        Lease r1 = leases.acquire(req(A, "doc").shared().build());
        Lease r2 = leases.acquire(req(B, "doc").shared().build());
        assertEquals(2, holders("doc"));
        assertNotEquals(r1.grant("doc").generation(), r2.grant("doc").generation());
        assertThrows(LeaseBusyException.class, () -> take(C, "doc"));
        leases.release(r1, null, null);
        assertThrows(LeaseBusyException.class, () -> take(C, "doc"));
        leases.release(r2, null, null);
        take(C, "doc");
    }

    @Test
    void semaphoreAdmitsItsPermitsAndRefusesAMismatch() throws Exception {
        List<Lease> held = new ArrayList<>();
        held.add(leases.acquire(req(A, "pool").semaphore(3).build()));
        held.add(leases.acquire(req(B, "pool").semaphore(3).build()));
        held.add(leases.acquire(req(C, "pool").semaphore(3).build()));
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(D, "pool").semaphore(3).build()));
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.acquire(req(D, "pool").semaphore(5).build()));
        assertEquals(Reason.PERMITS_MISMATCH, e.reason());
        assertThrows(LeaseBusyException.class, () -> take(D, "pool"), "an exclusive request waits for every permit");
        leases.release(held.get(1), null, null);
        leases.acquire(req(D, "pool").semaphore(3).build());
        assertEquals(3, holders("pool"));
    }

    @Test
    void multiNameRequestIsAllOrNothingInCanonicalOrder() throws Exception {
        take(A, "m/2");
        assertThrows(LeaseBusyException.class, () -> take(B, "m/3", "m/1", "m/2"));
        assertEquals(0, holders("m/1"), "nothing of a refused request is held");
        assertEquals(0, holders("m/3"));
        Lease c = take(C, "m/3", "m/1");
        assertEquals(List.of("m/1", "m/3"), c.names(), "grants come in canonical order");
    }

    @Test
    void generationsStrictlyIncreaseWithEveryGrant() throws Exception {
        long last = 0;
        for (int i = 0; i < 5; i++) {
            Lease l = take(i % 2 == 0 ? A : B, "gen");
            long g = l.grant("gen").generation();
            assertTrue(g > last, "generation " + g + " after " + last);
            last = g;
            leases.release(l, null, null);
        }
        Lease t = leases.acquire(req(A, "gen").tentative().build());
        assertTrue(t.grant("gen").generation() > last);
    }

    // ------------------------------------------------------------------------------------------------ floors

    @Test
    void floorAfterReleaseIsTheWatermark() throws Exception {
        Lease a = take(A, "acct/1");
        Instant wm = micros(a.floor(), 5);
        Instant ended = leases.release(a, wm, "log=ledger");
        assertFalse(ended.isBefore(a.grantedAt()));
        Lease b = take(B, "acct/1");
        LeaseGrant g = b.grant("acct/1");
        assertEquals(wm, g.floor());
        assertEquals(Ending.RELINQUISHED, g.predecessor().ending());
        assertEquals(a.grant("acct/1").correlationId(), g.predecessor().correlationId());
        assertEquals(wm, g.predecessor().watermark());
        assertEquals("log=ledger", g.predecessor().metadata());
        assertFalse(g.writableFrom().isAfter(b.grantedAt()));
    }

    @Test
    void releaseWithoutWatermarkLeavesTheFloor() throws Exception {
        Lease a = take(A, "f");
        Instant floor = a.floor();
        leases.release(a, null, null);
        Lease b = take(B, "f");
        assertEquals(floor, b.floor());
        assertNull(b.grant("f").predecessor().watermark());
    }

    @Test
    void floorAfterUnrelinquishedExpiryIsTheDeadlineAndWritesWaitForGrace() throws Exception {
        Lease a = take(A, "e");
        fixture.advance(Duration.ofSeconds(11));
        Lease b = take(B, "e");
        LeaseGrant g = b.grant("e");
        assertEquals(a.deadline(), g.floor());
        assertEquals(Ending.EXPIRED, g.predecessor().ending());
        assertEquals(a.deadline(), g.predecessor().endedAt());
        assertEquals(a.grant("e").correlationId(), g.predecessor().correlationId());
        assertEquals(a.deadline().plusSeconds(2), g.writableFrom(), "writable from the deadline plus grace");
    }

    @Test
    void expiredTentativeLeaseMovesNothing() throws Exception {
        Lease a = leases.acquire(req(A, "t").tentative().build());
        Instant floor = a.floor();
        fixture.advance(Duration.ofSeconds(11));
        Lease b = take(B, "t");
        assertEquals(floor, b.floor(), "a tentative holder never wrote");
        assertFalse(b.writableFrom().isAfter(b.grantedAt()));
    }

    @Test
    void sharedHoldersAndPermitsFoldTheirWatermarks() throws Exception {
        Lease r1 = leases.acquire(req(A, "s").semaphore(2).build());
        Lease r2 = leases.acquire(req(B, "s").semaphore(2).build());
        Instant w1 = micros(r1.grantedAt(), 10);
        Instant w2 = micros(r1.grantedAt(), 20);
        leases.release(r2, w2, null);
        leases.release(r1, w1, null);
        Lease w = take(C, "s");
        assertEquals(w2, w.floor(), "the floor is the highest watermark of all previous holders");
    }

    // ------------------------------------------------------------------------------------------------ waiting

    @Test
    void waitingRequestIsWokenByRelease() throws Exception {
        Lease a = take(A, "w");
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "w").waitFor(Duration.ofSeconds(5)).build());
        assertPending(b);
        Instant wm = micros(a.grantedAt(), 1);
        leases.release(a, wm, null);
        Lease got = await(b);
        assertEquals(wm, got.floor());
    }

    @Test
    void waitingRequestIsWokenByExpiry() throws Exception {
        Lease a = leases.acquire(req(A, "w").leaseFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "w").waitFor(Duration.ofSeconds(5)).build());
        fixture.advance(Duration.ofSeconds(1));
        assertPending(b);
        fixture.advance(Duration.ofSeconds(1));
        Lease got = await(b);
        assertEquals(a.deadline(), got.floor());
        assertEquals(Ending.EXPIRED, got.grant("w").predecessor().ending());
    }

    @Test
    void waitersAreServedInArrivalOrder() throws Exception {
        Lease a = take(A, "q");
        List<CompletableFuture<Lease>> waiting = new ArrayList<>();
        for (HolderId h : List.of(B, C, D)) {
            waiting.add(leases.acquireAsync(req(h, "q").waitFor(Duration.ofSeconds(9)).build()));
        }
        leases.release(a, null, null);
        Lease first = await(waiting.get(0));
        assertEquals(B, first.holder());
        assertPending(waiting.get(1));
        assertPending(waiting.get(2));
        leases.release(first, null, null);
        Lease second = await(waiting.get(1));
        assertEquals(C, second.holder());
        assertPending(waiting.get(2));
        leases.release(second, null, null);
        assertEquals(D, await(waiting.get(2)).holder());
    }

    /**
     * Waiting requests are served oldest first: a transaction's by its start, one without a start by its arrival
     * (docs/ARCHITECTURE.md, "Waiting"). A request that began before those waiting goes ahead of them, and the queue
     * the service reports is in that order.
     */
    @Test
    void anOlderTransactionIsServedBeforeRequestsThatArrivedBeforeIt() throws Exception {
        Lease a = take(A, "age");
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "age").waitFor(Duration.ofSeconds(9)).build());
        awaitWaiters("age", 1);
        CompletableFuture<Lease> c = leases.acquireAsync(req(C, "age").waitFor(Duration.ofSeconds(9)).build());
        awaitWaiters("age", 2);
        CompletableFuture<Lease> d = leases.acquireAsync(req(D, "age").startedAt(leases.now().minusSeconds(1))
                .waitFor(Duration.ofSeconds(9)).build());
        awaitWaiters("age", 3);
        assertEquals(List.of(D, B, C), status("age").waiters().stream().map(WaiterStatus::holder).toList(),
                "the older transaction first, then the others in arrival order");
        leases.release(a, null, null);
        Lease first = await(d);
        assertEquals(D, first.holder());
        assertPending(b);
        leases.release(first, null, null);
        Lease second = await(b);
        assertEquals(B, second.holder());
        assertPending(c);
        leases.release(second, null, null);
        assertEquals(C, await(c).holder());
    }

    /**
     * No cycle of waits through a queue position: an old transaction asking for a name a younger one holds, while an
     * even younger request waits for that name, is not queued behind the waiter (which waits for the holder, which
     * waits for the old transaction: only a time-out would end that). It goes first and wounds the younger holder.
     */
    @Test
    void anOldTransactionIsNotQueuedBehindAYoungerWaiterOfAYoungerHolderThatWaitsForIt() throws Exception {
        Instant t0 = leases.now();
        Lease oldX = leases.acquire(req(A, "cyc/x").tentative().startedAt(t0).build());
        Lease midA = leases.acquire(req(B, "cyc/a").tentative().startedAt(t0.plusMillis(1)).build());
        CompletableFuture<Lease> youngA = leases.acquireAsync(req(C, "cyc/a").tentative().startedAt(t0.plusMillis(2))
                .waitFor(Duration.ofSeconds(9)).build());
        awaitWaiters("cyc/a", 1);
        CompletableFuture<Lease> midX = leases.acquireAsync(req(B, "cyc/x").tentative().startedAt(t0.plusMillis(1))
                .waitFor(Duration.ofSeconds(9)).build());
        awaitWaiters("cyc/x", 1);
        Lease oldA = await(leases.acquireAsync(req(A, "cyc/a").tentative().startedAt(t0)
                .waitFor(Duration.ofSeconds(9)).build()));
        assertEquals(A, oldA.holder());
        assertEquals(Ending.BROKEN, oldA.grant("cyc/a").predecessor().ending(), "the younger holder was wounded");
        assertThrows(LeaseBrokenException.class, () -> leases.upgrade(midA, null));
        assertPending(youngA);
        leases.release(leases.upgrade(oldA, null), null, null);
        leases.release(leases.upgrade(oldX, null), null, null);
        assertEquals(C, await(youngA).holder());
        assertEquals(B, await(midX).holder());
    }

    @Test
    void waitingSharedRequestsAreGrantedTogether() throws Exception {
        Lease a = take(A, "r");
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "r").shared().waitFor(Duration.ofSeconds(5)).build());
        CompletableFuture<Lease> c = leases.acquireAsync(req(C, "r").shared().waitFor(Duration.ofSeconds(5)).build());
        leases.release(a, null, null);
        await(b);
        await(c);
        assertEquals(2, holders("r"));
    }

    @Test
    void waitTimesOutWithAClearAnswer() throws Exception {
        take(A, "slow");
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "slow").waitFor(Duration.ofSeconds(2)).build());
        awaitWaiters("slow", 1);
        fixture.advance(Duration.ofSeconds(1));
        assertPending(b);
        fixture.advance(Duration.ofSeconds(1));
        LeaseBusyException e = assertThrows(LeaseBusyException.class, () -> await(b));
        assertTrue(e.getMessage().contains("waited"), e.getMessage());
        assertEquals(0, status("slow").waiters().size(), "a timed-out request leaves the queue");
    }

    @Test
    void requestsDoNotBargePastWaiters() throws Exception {
        Lease r = leases.acquire(req(A, "fair").shared().build());
        CompletableFuture<Lease> writer = leases.acquireAsync(req(B, "fair").waitFor(Duration.ofSeconds(5)).build());
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(C, "fair").shared().build()),
                "a new reader queues behind a waiting writer");
        leases.release(r, null, null);
        assertEquals(B, await(writer).holder());
    }

    @Test
    void cancellingAWaitWithdrawsIt() throws Exception {
        Lease a = take(A, "c");
        CompletableFuture<Lease> b = leases.acquireAsync(req(B, "c").waitFor(Duration.ofSeconds(5)).build());
        assertTrue(b.cancel(true));
        leases.release(a, null, null);
        Lease c = take(C, "c");
        assertEquals(C, c.holder());
        assertEquals(1, holders("c"));
    }

    @Test
    void blockingAcquireWaitsInTheCallingThread() throws Exception {
        Lease a = take(A, "block");
        CompletableFuture<Lease> b = CompletableFuture.supplyAsync(() -> {
            try {
                return leases.acquire(req(B, "block").waitFor(Duration.ofSeconds(5)).build());
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        waitUntilQueued("block", 1);
        leases.release(a, null, null);
        assertEquals(B, await(b).holder());
    }

    protected void waitUntilQueued(String name, int n) throws InterruptedException, TimeoutException {
        long until = System.nanoTime() + SETTLE.toNanos();
        while (System.nanoTime() < until) {
            NameStatus s = status(name);
            if (s != null && s.waiters().size() >= n) {
                return;
            }
            Thread.sleep(1);
        }
        throw new TimeoutException(n + " request(s) never queued for " + name);
    }

    // ------------------------------------------------------------------------------------------------ tentative

    @Test
    void olderRequesterBreaksYoungerTentativeHolderThatWaits() throws Exception {
        Instant t0 = leases.now();
        Lease young = leases.acquire(req(B, "tx").tentative().startedAt(t0.plusMillis(5)).build());
        waitElsewhere(B, t0.plusMillis(5));
        Lease old = leases.acquire(req(A, "tx").tentative().startedAt(t0).build());
        assertEquals(Ending.BROKEN, old.grant("tx").predecessor().ending());
        LeaseBrokenException e = assertThrows(LeaseBrokenException.class, () -> leases.upgrade(young, null));
        assertEquals("tx", e.name());
        Lease full = leases.upgrade(old, null);
        assertEquals(LeaseKind.FULL, full.kind());
        assertEquals(old.floor(), full.floor(), "the floor is fixed at the grant");
        assertTrue(leases.check("tx", full.grant("tx").generation()));
    }

    @Test
    void youngerRequesterWaitsForOlderTentativeHolder() throws Exception {
        Instant t0 = leases.now();
        Lease old = leases.acquire(req(A, "tx").tentative().startedAt(t0).build());
        assertThrows(LeaseBusyException.class,
                () -> leases.acquire(req(B, "tx").tentative().startedAt(t0.plusMillis(5)).build()));
        CompletableFuture<Lease> young = leases.acquireAsync(
                req(B, "tx").tentative().startedAt(t0.plusMillis(5)).waitFor(Duration.ofSeconds(5)).build());
        Lease full = leases.upgrade(old, null);
        assertPending(young);
        leases.release(full, micros(full.grantedAt(), 1), null);
        assertEquals(B, await(young).holder());
    }

    /** Runs {@code call} (a blocking acquisition) on a thread of its own. */
    private static CompletableFuture<Lease> onThread(String name, java.util.concurrent.Callable<Lease> call) {
        CompletableFuture<Lease> f = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                f.complete(call.call());
            } catch (Exception e) {
                f.completeExceptionally(e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return f;
    }

    @Test
    void anOlderRequestWaitsForAYoungerHolderThatWaitsForNothingAndBothCommit() throws Exception {
        Instant t0 = leases.now();
        Lease young = leases.acquire(req(B, "only/1").tentative().startedAt(t0.plusMillis(5)).build());
        // Nobody breaks it: an older request trying once is busy, whether it holds something or not.
        Lease olderHolding = leases.acquire(req(C, "only/other").tentative().startedAt(t0).build());
        assertThrows(LeaseBusyException.class,
                () -> leases.acquire(req(A, "only/1").tentative().startedAt(t0).build()));
        assertThrows(LeaseBusyException.class,
                () -> leases.acquire(req(C, "only/1").tentative().startedAt(t0).build()));
        CompletableFuture<Lease> old = onThread("older-request", () -> leases.acquire(req(A, "only/1").tentative()
                .startedAt(t0).waitFor(SETTLE).build()));
        awaitWaiters("only/1", 1);
        assertPending(old);
        // A second lease granted at once is no wait either.
        Lease youngSecond = leases.acquire(req(B, "only/2").tentative().startedAt(t0.plusMillis(5)).build());
        assertPending(old);
        Lease committed = leases.upgrade(young, null);
        leases.upgrade(youngSecond, null);
        leases.release(committed, micros(committed.grantedAt(), 1), null);
        Lease next = await(old);
        assertEquals(A, next.holder());
        assertEquals(Ending.RELINQUISHED, next.grant("only/1").predecessor().ending(), "the younger one committed");
        leases.release(leases.upgrade(next, null), null, null);
        leases.release(olderHolding, null, null);
    }

    @Test
    void aCycleOfTwoLeaseTransactionsIsStillBroken() throws Exception {
        Instant t0 = leases.now();
        // Each holds its first lease; then each asks for the other's name as its second.
        Lease youngFirst = leases.acquire(req(B, "cycle/1").tentative().startedAt(t0.plusMillis(5)).build());
        Lease oldFirst = leases.acquire(req(A, "cycle/2").tentative().startedAt(t0).build());
        CompletableFuture<Lease> oldSecond = onThread("older-second-lease", () -> leases.acquire(req(A, "cycle/1")
                .tentative().startedAt(t0).waitFor(SETTLE).build()));
        awaitWaiters("cycle/1", 1);
        assertPending(oldSecond);
        // The younger one waits for the older one now, closing the cycle: the older one breaks its first lease.
        CompletableFuture<Lease> youngSecond = onThread("younger-second-lease", () -> leases.acquire(
                req(B, "cycle/2").tentative().startedAt(t0.plusMillis(5)).waitFor(SETTLE).build()));
        Lease oldTaken = await(oldSecond);
        assertEquals(Ending.BROKEN, oldTaken.grant("cycle/1").predecessor().ending());
        assertThrows(LeaseBrokenException.class, () -> leases.upgrade(youngFirst, null));
        leases.release(leases.upgrade(oldFirst, null), null, null);
        leases.release(leases.upgrade(oldTaken, null), null, null);
        assertEquals(B, await(youngSecond).holder(), "the younger one's second request is granted after the older commit");
    }

    /**
     * No cycle through a queue position either: the oldest transaction, holding nothing, waits first in line for a
     * name a younger one holds; a transaction between them in age queues behind it, holding a name the youngest then
     * asks for. The youngest waits now, so the oldest breaks its holding (it would otherwise wait for the youngest,
     * which waits for the middle one, which waits behind the oldest, until a wait ran out).
     */
    @Test
    void anOldRequestHoldingNothingBreaksAYoungerHolderThatStartsWaitingBehindTheQueue() throws Exception {
        Instant t0 = leases.now();
        Lease youngHeld = leases.acquire(req(C, "line/n").tentative().startedAt(t0.plusMillis(2)).build());
        CompletableFuture<Lease> oldest = onThread("oldest", () -> leases.acquire(req(A, "line/n").tentative()
                .startedAt(t0).waitFor(SETTLE).build()));
        awaitWaiters("line/n", 1);
        assertPending(oldest);
        Lease middleHeld = leases.acquire(req(B, "line/m").tentative().startedAt(t0.plusMillis(1)).build());
        CompletableFuture<Lease> middle = onThread("middle", () -> leases.acquire(req(B, "line/n").tentative()
                .startedAt(t0.plusMillis(1)).waitFor(SETTLE).build()));
        CompletableFuture<Lease> youngest = onThread("youngest", () -> leases.acquire(req(C, "line/m").tentative()
                .startedAt(t0.plusMillis(2)).waitFor(SETTLE).build()));
        Lease first = await(oldest);
        assertEquals(Ending.BROKEN, first.grant("line/n").predecessor().ending(), "the youngest was broken");
        assertThrows(LeaseBrokenException.class, () -> leases.upgrade(youngHeld, null));
        leases.release(leases.upgrade(first, null), null, null);
        Lease second = await(middle);
        leases.release(leases.upgrade(second, null), null, null);
        leases.release(leases.upgrade(middleHeld, null), null, null);
        assertEquals(C, await(youngest).holder(), "the youngest's request is granted after the middle one committed");
    }

    @Test
    void fullLeaseIsNeverBrokenBeforeItsDeadline() throws Exception {
        Instant t0 = leases.now();
        Lease young = leases.acquire(req(B, "f").startedAt(t0.plusSeconds(1)).build());
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(A, "f").startedAt(t0).build()));
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(A, "f").tentative().startedAt(t0).build()));
        assertTrue(leases.check("f", young.grant("f").generation()));
    }

    @Test
    void upgradeIsAllOrNothing() throws Exception {
        Instant t0 = leases.now();
        Lease young = leases.acquire(req(B, "u/1", "u/2").tentative().startedAt(t0.plusMillis(5)).build());
        waitElsewhere(B, t0.plusMillis(5));
        leases.acquire(req(A, "u/2").tentative().startedAt(t0).build());
        assertThrows(LeaseBrokenException.class, () -> leases.upgrade(young, null));
        assertFalse(leases.check("u/1", young.grant("u/1").generation()), "no name of a failed upgrade is full");
        take(C, "u/1");
    }

    @Test
    void upgradeOfABrokenTentativeFailsEvenAfterItsBreakerLeft() throws Exception {
        Instant t0 = leases.now();
        Lease young = leases.acquire(req(B, "v").tentative().startedAt(t0.plusMillis(5)).build());
        waitElsewhere(B, t0.plusMillis(5));
        Lease old = leases.acquire(req(A, "v").tentative().startedAt(t0).build());
        leases.release(old, null, null);
        assertThrows(LeaseBrokenException.class, () -> leases.upgrade(young, null));
        assertThrows(LeaseBrokenException.class, () -> leases.release(young, null, null));
    }

    @Test
    void tentativeLeaseCannotPublishAWatermark() throws Exception {
        Lease t = leases.acquire(req(A, "tw").tentative().build());
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.release(t, micros(t.grantedAt(), 1), null));
        assertEquals(Reason.WATERMARK_ON_TENTATIVE, e.reason());
        leases.release(t, null, null);
    }

    // ------------------------------------------------------------------------------------------------ renew/release

    @Test
    void renewMovesTheDeadlineButNeverBackwards() throws Exception {
        Lease a = leases.acquire(req(A, "n").leaseFor(Duration.ofSeconds(4)).build());
        fixture.advance(Duration.ofSeconds(3));
        Lease r = leases.renewFor(a, Duration.ofSeconds(6));
        assertEquals(a.deadline().plusSeconds(5), r.deadline());
        Lease same = leases.renew(r, a.grantedAt().plusSeconds(5), null);
        assertEquals(r.deadline(), same.deadline(), "renew never shortens a lease");
        Lease clamped = leases.renew(r, leases.now().plus(Duration.ofHours(1)), "progress=1");
        assertEquals(leases.now().plusSeconds(10), clamped.deadline());
        assertEquals(r.grant("n").generation(), clamped.grant("n").generation());
        assertEquals("progress=1", lastHistory("n").metadata());
    }

    protected MetadataEntry lastHistory(String name) {
        List<MetadataEntry> h = status(name).history();
        return h.get(h.size() - 1);
    }

    @Test
    void aLeaseHeldInDoubtIsKeptByTheServiceUntilTheHoldEndsAndTakenBackByItsHolder() throws Exception {
        Lease a = take(A, "doubt/1");
        Instant until = leases.now().plusSeconds(40);
        Lease held = leases.holdInDoubt(a, until);
        assertEquals(a.grants(), held.grants(), "the same grant");
        assertEquals(until, status("doubt/1").holders().get(0).inDoubtUntil());
        for (int i = 0; i < 5; i++) {
            fixture.advance(Duration.ofSeconds(5)); // the holder is silent: the service renews
        }
        assertThrows(LeaseBusyException.class, () -> leases.acquire(req(B, "doubt/1").waitFor(Duration.ZERO).build()));
        assertTrue(leases.check("doubt/1", a.grant("doubt/1").generation()), "still the holder, 25 s on");
        Lease back = leases.renewFor(a, Duration.ofSeconds(5)); // a restarted holder renews the value it recorded
        Instant wm = micros(back.deadline(), -1);
        leases.release(back, wm, null);
        assertEquals(wm, take(B, "doubt/1").floor());
    }

    @Test
    void aHoldInDoubtEndsAtItsEndAndOnlyAFullLeaseIsHeld() throws Exception {
        Lease a = take(A, "doubt/2");
        Instant until = leases.now().plusSeconds(15);
        leases.holdInDoubt(a, until);
        fixture.advance(Duration.ofSeconds(14));
        assertEquals(until, status("doubt/2").holders().get(0).deadline(), "renewed up to the hold's end");
        fixture.advance(Duration.ofSeconds(2));
        Lease b = take(B, "doubt/2");
        assertEquals(until, b.floor(), "then it expired unrelinquished");
        Lease t = leases.acquire(req(C, "doubt/3").tentative().build());
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.holdInDoubt(t, leases.now().plusSeconds(30)));
        assertEquals(Reason.NOT_FULL, e.reason());
    }

    @Test
    void renewAfterTheDeadlineFails() throws Exception {
        Lease a = take(A, "late");
        fixture.advance(Duration.ofSeconds(10));
        LeaseExpiredException e = assertThrows(LeaseExpiredException.class,
                () -> leases.renewFor(a, Duration.ofSeconds(10)));
        assertEquals(a.deadline(), e.deadline());
        assertThrows(LeaseExpiredException.class, () -> leases.release(a, null, null));
        Lease b = take(B, "late");
        assertEquals(a.deadline(), b.floor());
    }

    @Test
    void staleOrForeignReleaseIsRefusedAndChangesNothing() throws Exception {
        Lease a = take(A, "s1");
        Lease forged = new Lease(B, a.mode(), a.kind(), a.grantedAt(), a.deadline(), a.grants());
        assertThrows(StaleLeaseException.class, () -> leases.release(forged, null, null));
        assertThrows(StaleLeaseException.class, () -> leases.renewFor(forged, Duration.ofSeconds(5)));
        assertThrows(StaleLeaseException.class, () -> leases.upgrade(forged, null));
        assertTrue(leases.check("s1", a.grant("s1").generation()), "the holder still holds");
        Instant wm = micros(a.grantedAt(), 3);
        leases.release(a, wm, null);
        assertThrows(StaleLeaseException.class, () -> leases.release(a, null, null), "released once only");
        Lease b = take(B, "s1");
        assertEquals(wm, b.floor(), "the refused releases moved nothing");
        assertThrows(StaleLeaseException.class, () -> leases.release(a, null, null), "a stale generation");
        assertTrue(leases.check("s1", b.grant("s1").generation()));
    }

    @Test
    void watermarkOutsideFloorAndDeadlineIsRefused() throws Exception {
        Lease first = take(A, "wm");
        Instant wm = micros(first.grantedAt(), 100);
        leases.release(first, wm, null);
        Lease a = take(A, "wm");
        InvalidLeaseRequestException low = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.release(a, micros(wm, -1), null));
        assertEquals(Reason.WATERMARK_OUT_OF_RANGE, low.reason());
        InvalidLeaseRequestException high = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.release(a, a.deadline(), null));
        assertEquals(Reason.WATERMARK_OUT_OF_RANGE, high.reason());
        assertTrue(leases.check("wm", a.grant("wm").generation()), "still held after the refusals");
        leases.release(a, wm, null);
    }

    @Test
    void theSameIdentityRetakesItsAbandonedLeaseAtOnce() throws Exception {
        Lease old = take(A, "re");
        Lease again = take(A, "re");
        LeaseGrant g = again.grant("re");
        assertTrue(g.generation() > old.grant("re").generation());
        assertEquals(Ending.RETAKEN, g.predecessor().ending());
        assertEquals(old.grant("re").correlationId(), g.predecessor().correlationId());
        assertFalse(g.writableFrom().isAfter(again.grantedAt()), "re-take does not wait for grace");
        assertTrue(g.floor().isBefore(again.deadline()));
        assertFalse(g.floor().isBefore(old.floor()));
        assertThrows(StaleLeaseException.class, () -> leases.release(old, null, null));
        assertTrue(leases.check("re", g.generation()));
        assertFalse(leases.check("re", old.grant("re").generation()));
    }

    // ------------------------------------------------------------------------------------------------ service

    @Test
    void quietPeriodGrantsNothingThenEverything() throws Exception {
        restartWith(LeaseFixture.Settings.defaults().withQuietPeriod(Duration.ofSeconds(12)));
        Instant available = leases.availableFrom();
        LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                () -> take(A, "quiet"));
        assertEquals(available, e.availableAt());
        CompletableFuture<Lease> patient = leases.acquireAsync(req(B, "quiet").waitFor(Duration.ofSeconds(20)).build());
        CompletableFuture<Lease> hasty = leases.acquireAsync(req(C, "other").waitFor(Duration.ofSeconds(3)).build());
        assertThrows(LeaseServiceUnavailableException.class, () -> await(hasty), "a wait that ends in the quiet period");
        fixture.advance(Duration.ofSeconds(11));
        assertPending(patient);
        fixture.advance(Duration.ofSeconds(1));
        Lease b = await(patient);
        assertFalse(b.grantedAt().isBefore(available));
        take(A, "quiet2");
    }

    @Test
    void generationsKeepIncreasingAcrossARestart() throws Exception {
        restartWith(LeaseFixture.Settings.defaults().withQuietPeriod(Duration.ofSeconds(12)));
        fixture.advance(Duration.ofSeconds(12));
        Lease a = take(A, "g");
        long before = a.grant("g").generation();
        Instant deadline = a.deadline();
        fixture.restart();
        leases = fixture.service();
        assertThrows(LeaseServiceUnavailableException.class, () -> take(B, "g"));
        fixture.advance(Duration.ofSeconds(12));
        Lease b = take(B, "g");
        assertTrue(b.grant("g").generation() > before, b.grant("g").generation() + " after " + before);
        assertEquals(keepsStateAcrossRestarts() ? Ending.EXPIRED : Ending.UNKNOWN, b.grant("g").predecessor().ending(),
                "a service that forgets at a restart knows no predecessor; one that keeps its state knows it expired");
        assertFalse(b.floor().isBefore(deadline), "the floor covers every lease the old incarnation can have granted");
    }

    @Test
    void checkFencesEverythingButTheCurrentFullHolder() throws Exception {
        Lease t = leases.acquire(req(A, "fence").tentative().build());
        long tg = t.grant("fence").generation();
        assertFalse(leases.check("fence", tg), "a tentative holder may not write");
        Lease f = leases.upgrade(t, null);
        assertTrue(leases.check("fence", tg));
        assertFalse(leases.check("fence", tg - 1));
        assertFalse(leases.check("fence", tg + 1));
        assertFalse(leases.check("nobody", 1));
        leases.release(f, null, null);
        assertFalse(leases.check("fence", tg));
        Lease g = take(B, "fence");
        fixture.advance(Duration.ofSeconds(10));
        assertFalse(leases.check("fence", g.grant("fence").generation()), "expired");
    }

    @Test
    void adminViewShowsHoldersWaitersAndHistory() throws Exception {
        Lease a = take(A, "tenant/1");
        take(B, "tenant/2");
        take(C, "other/1");
        leases.acquireAsync(req(D, "tenant/1").waitFor(Duration.ofSeconds(5)).build());
        awaitWaiters("tenant/1", 1);
        List<NameStatus> view = leases.inspect("tenant/", 10);
        assertEquals(List.of("tenant/1", "tenant/2"), view.stream().map(NameStatus::name).toList());
        NameStatus t1 = view.get(0);
        assertEquals(1, t1.holders().size());
        assertEquals(A, t1.holders().get(0).holder());
        assertEquals(a.deadline(), t1.holders().get(0).deadline());
        assertEquals(1, t1.waiters().size());
        assertEquals(D, t1.waiters().get(0).holder());
        assertEquals(1, leases.inspect("tenant/", 1).size(), "the limit is honoured");
        leases.release(a, null, "where=bucket-7");
        NameStatus after = status("tenant/1");
        assertEquals(D, after.holders().get(0).holder());
        assertEquals("where=bucket-7", after.history().get(after.history().size() - 1).metadata());
    }

    @Test
    void historyIsBoundedOldestDroppedFirst() throws Exception {
        for (int i = 0; i < 10; i++) {
            Lease l = take(A, "hist");
            leases.release(l, null, "entry-" + i);
        }
        List<MetadataEntry> h = status("hist").history();
        assertEquals(4, h.size());
        assertEquals(List.of("entry-6", "entry-7", "entry-8", "entry-9"), h.stream().map(MetadataEntry::metadata).toList());
        assertTrue(h.stream().allMatch(e -> e.ending() == Ending.RELINQUISHED));
    }

    @Test
    void queueLengthIsBounded() throws Exception {
        take(A, "crowd");
        for (int i = 0; i < 100; i++) {
            leases.acquireAsync(req(new HolderId("p", "w" + i), "crowd").waitFor(Duration.ofSeconds(5)).build());
        }
        CompletableFuture<Lease> extra = leases.acquireAsync(req(B, "crowd").waitFor(Duration.ofSeconds(5)).build());
        LeaseBusyException e = assertThrows(LeaseBusyException.class, () -> await(extra));
        assertTrue(e.getMessage().contains("full"), e.getMessage());
    }

    // ------------------------------------------------------------------------------------------------ bad input

    private void assertInvalid(Reason reason, LeaseRequest request) {
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class, () -> leases.acquire(request));
        assertEquals(reason, e.reason(), e.getMessage());
        assertTrue(e.getMessage().length() > 20, "a message that explains: " + e.getMessage());
    }

    @Test
    void badNamesAreRefusedWithTheReason() {
        assertInvalid(Reason.EMPTY_NAME, req(A, "").build());
        assertInvalid(Reason.EMPTY_NAME, LeaseRequest.builder(A, java.util.Arrays.asList("ok", null)).build());
        assertInvalid(Reason.NO_NAMES, LeaseRequest.builder(A, List.of()).build());
        assertInvalid(Reason.NAME_TOO_LONG, req(A, "x".repeat(513)).build());
        assertInvalid(Reason.NAME_TOO_LONG, req(A, "é".repeat(257)).build());
        assertInvalid(Reason.NAME_HAS_CONTROL_CHARACTER, req(A, "a\nb").build());
        assertInvalid(Reason.NAME_HAS_CONTROL_CHARACTER, req(A, "a\u0000").build());
        assertInvalid(Reason.NAME_HAS_CONTROL_CHARACTER, req(A, "a\u0085b").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "/tenant/1").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "tenant/../1").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "..").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "tenant/./1").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "tenant//1").build());
        assertInvalid(Reason.NAME_HAS_BAD_SEGMENT, req(A, "tenant/").build());
        assertInvalid(Reason.NAME_INVALID_UNICODE, req(A, "a\ud800b").build());
        assertInvalid(Reason.DUPLICATE_NAME, req(A, "d", "e", "d").build());
        List<String> many = new ArrayList<>();
        for (int i = 0; i < 1_001; i++) {
            many.add("n/" + i);
        }
        assertInvalid(Reason.TOO_MANY_NAMES, LeaseRequest.builder(A, many).build());
        assertEquals(List.of(), leases.inspect("", 10).stream().filter(s -> !s.holders().isEmpty()).toList(),
                "nothing is held after refused requests");
        // The limits are inclusive.
        assertDoesNotThrow(() -> take(A, "x".repeat(512)));
        assertDoesNotThrow(() -> leases.acquire(LeaseRequest.builder(B, many.subList(0, 1_000)).build()));
    }

    private static void assertDoesNotThrow(ThrowingRunnable r) {
        try {
            r.run();
        } catch (Exception e) {
            fail("unexpected " + e, e);
        }
    }

    private interface ThrowingRunnable {
        void run() throws Exception;
    }

    @Test
    void badTimesAndCountsAreRefusedWithTheReason() throws Exception {
        assertInvalid(Reason.DEADLINE_IN_PAST, req(A, "t").until(leases.now().minusMillis(1)).build());
        assertInvalid(Reason.DEADLINE_IN_PAST, req(A, "t").until(leases.now()).build());
        assertInvalid(Reason.INVALID_LEASE_TIME, req(A, "t").leaseFor(Duration.ZERO).build());
        assertInvalid(Reason.INVALID_LEASE_TIME, req(A, "t").leaseFor(Duration.ofSeconds(-1)).build());
        assertInvalid(Reason.INVALID_WAIT, req(A, "t").waitFor(Duration.ofMillis(-1)).build());
        assertInvalid(Reason.INVALID_PERMITS, req(A, "t").semaphore(0).build());
        assertInvalid(Reason.INVALID_PERMITS, req(A, "t").semaphore(-3).build());
        assertEquals(0, holders("t"));
        Lease a = take(A, "t");
        InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.renew(a, leases.now().minusSeconds(1), null));
        assertEquals(Reason.DEADLINE_IN_PAST, e.reason());
        InvalidLeaseRequestException meta = assertThrows(InvalidLeaseRequestException.class,
                () -> leases.release(a, null, "x".repeat(100_000)));
        assertEquals(Reason.METADATA_TOO_LONG, meta.reason());
        assertTrue(leases.check("t", a.grant("t").generation()));
    }

    @Test
    void operationsOnAnotherGenerationAreRefused() throws Exception {
        Lease a = take(A, "gen/x");
        LeaseGrant g = a.grant("gen/x");
        LeaseGrant wrong = new LeaseGrant(g.name(), g.generation() + 7, g.correlationId(), g.floor(), g.writableFrom(),
                g.predecessor());
        Lease stale = new Lease(A, a.mode(), a.kind(), a.grantedAt(), a.deadline(), List.of(wrong));
        assertThrows(StaleLeaseException.class, () -> leases.release(stale, null, null));
        assertThrows(StaleLeaseException.class, () -> leases.renewFor(stale, Duration.ofSeconds(1)));
        assertThrows(StaleLeaseException.class, () -> leases.upgrade(stale, null));
        assertTrue(leases.check("gen/x", g.generation()));
        assertSame(LeaseKind.FULL, leases.upgrade(a, null).kind(), "upgrading a full lease is harmless");
    }
}
