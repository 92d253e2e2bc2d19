package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;

/**
 * The edges of a queued request's end: a requested deadline that passes just as the names become free (whichever
 * timer runs first), a wait that ends just as they become free, a wake that moves earlier when the holder waited
 * for leaves, a fence reached while it waits, and a cancellation that leaves neither its time-out nor its place in
 * the queue behind.
 */
class QueueEdgesTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");
    private static final HolderId C = new HolderId("p", "c");
    private static final HolderId D = new HolderId("p", "d");

    private final ManualTimeSource time = new ManualTimeSource(EmbeddedFixture.START);
    private EmbeddedLeaseService engine = new EmbeddedLeaseService(EngineConfig.defaults()
            .withQuietPeriod(Duration.ZERO).withServiceId("svc-q").withIdleRetention(Duration.ofMinutes(1)), time);

    @AfterEach
    void close() {
        engine.close();
    }

    private static String refusal(CompletableFuture<Lease> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof LeaseBusyException || e.getCause() instanceof LeaseServiceUnavailableException,
                String.valueOf(e.getCause()));
        return e.getCause().getMessage();
    }

    @Test
    void namesFreedExactlyAtTheRequestedDeadlineByTheHoldersExpiryAreNotGranted() throws Exception {
        Instant d = time.now().plusSeconds(3);
        engine.acquire(LeaseRequest.builder(A, "dl").leaseFor(Duration.ofSeconds(3)).build());
        // The name's wake (at the holder's deadline) was scheduled before the request's time-out: it runs first.
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "dl").until(d)
                .waitFor(Duration.ofSeconds(10)).build());
        time.set(d);
        assertEquals("the names became free only at " + d + ", when the requested deadline had passed: ask again",
                refusal(b));
        assertEquals(0, engine.inspect("dl", 1).get(0).waiters().size());
        assertEquals(0, engine.inspect("dl", 1).get(0).holders().size(), "nothing granted for no time at all");
    }

    @Test
    void namesFreedExactlyAtTheRequestedDeadlineWhenTheTimeOutRunsFirstAreNotGrantedEither() throws Exception {
        Instant t0 = time.now();
        Instant d = t0.plusSeconds(5);
        engine.acquire(LeaseRequest.builder(A, "dt").leaseFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "dt").until(d)
                .waitFor(Duration.ofSeconds(10)).build());
        time.advance(Duration.ofSeconds(1));
        // The holder takes its name again until d: the name's next wake is scheduled after the request's time-out.
        engine.acquire(LeaseRequest.builder(A, "dt").until(d).build());
        time.advance(Duration.ofSeconds(1));
        assertFalse(b.isDone());
        time.set(d);
        assertEquals("the names became free only at " + d + ", when the requested deadline had passed: ask again",
                refusal(b));
        assertEquals(0, engine.inspect("dt", 1).get(0).holders().size(), "nothing granted for no time at all");
    }

    @Test
    void aWaitEndingExactlyWhenTheNamesBecomeFreeIsGrantedByItsOwnTimeOut() throws Exception {
        Instant t0 = time.now();
        Instant end = t0.plusSeconds(5);
        engine.acquire(LeaseRequest.builder(A, "tg").leaseFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "tg").leaseFor(Duration.ofSeconds(4))
                .waitFor(Duration.ofSeconds(5)).build());
        time.advance(Duration.ofSeconds(1));
        // The holder takes its name again until the wait's end: the name's wake at that instant is scheduled (by the
        // wake at the first deadline) after the request's time-out, which therefore runs first and finds it free.
        engine.acquire(LeaseRequest.builder(A, "tg").until(end).build());
        time.advance(Duration.ofSeconds(1));
        assertFalse(b.isDone(), "still held by the holder's second grant");
        time.set(end.minusNanos(1_000));
        assertFalse(b.isDone(), "one microsecond before the wait ends");
        time.set(end);
        Lease granted = b.get(20, TimeUnit.SECONDS);
        assertEquals(B, granted.holder());
        assertEquals(end, granted.grantedAt(), "granted at the end of its wait, not refused");
        assertEquals(end.plusSeconds(4), granted.deadline());
        assertEquals(0, engine.inspect("tg", 1).get(0).waiters().size());
    }

    @Test
    void aWaitersWakeMovesEarlierWhenTheHolderItWaitedForLeavesBeforeAShorterOne() throws Exception {
        Instant t0 = time.now();
        Lease first = engine.acquire(LeaseRequest.builder(A, "we").shared().leaseFor(Duration.ofSeconds(10)).build());
        // An exclusive request waits for the shared holder: the name's wake is at its deadline, t0 + 10 s.
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "we").startedAt(t0)
                .waitFor(Duration.ofSeconds(30)).build());
        // An older shared request is queued before the younger one and joins the holder, until t0 + 3 s.
        Lease older = engine.acquireAsync(LeaseRequest.builder(C, "we").shared().startedAt(t0.minusSeconds(1))
                .leaseFor(Duration.ofSeconds(3)).waitFor(Duration.ofSeconds(5)).build()).get(20, TimeUnit.SECONDS);
        assertEquals(t0, older.grantedAt());
        time.advance(Duration.ofSeconds(1));
        // The first holder leaves: the waiter now waits only for the older request's lease, so its wake moves to
        // t0 + 3 s, earlier than the one pending.
        engine.release(first, null, null);
        assertFalse(b.isDone());
        time.set(t0.plusSeconds(3));
        // The wake runs on this thread as the clock reaches it, and grants there.
        assertTrue(b.isDone(), "granted when the older lease ended, not at t0 + 10 s");
        assertEquals(t0.plusSeconds(3), b.get().grantedAt());
    }

    @Test
    void aWaitEndingAfterTheFenceIsRefusedWithTheFencesReason() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "f").build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "f")
                .waitFor(Duration.ofSeconds(2)).build());
        Instant fence = time.now().plusSeconds(1);
        engine.fenceAt(fence, "the log moved to another owner");
        time.set(fence.minusNanos(1_000));
        assertTrue(engine.granting(), "one microsecond before the fence");
        time.set(fence);
        assertFalse(engine.granting(), "at the fence");
        time.advance(Duration.ofSeconds(2));
        assertEquals("the lease service svc-q grants, renews and upgrades nothing since " + fence
                + ": the log moved to another owner", refusal(b));
    }

    @Test
    void aCancelledWaitLeavesNoTimeOutAndNoPlaceInTheQueue() throws Exception {
        engine.close();
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)
                .withMaxWaitersPerName(2).withIdleRetention(Duration.ofMinutes(1)), time);
        engine.acquire(LeaseRequest.builder(A, "cq").build());
        int before = time.pendingTimers();
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "cq")
                .waitFor(Duration.ofSeconds(5)).build());
        CompletableFuture<Lease> c = engine.acquireAsync(LeaseRequest.builder(C, "cq")
                .waitFor(Duration.ofSeconds(30)).build());
        assertEquals(before + 3, time.pendingTimers(), "the name's wake and two time-outs");
        assertTrue(c.cancel(false));
        assertEquals(before + 2, time.pendingTimers(), "the cancelled request's time-out is cancelled");
        CompletableFuture<Lease> d = engine.acquireAsync(LeaseRequest.builder(D, "cq")
                .waitFor(Duration.ofSeconds(5)).build());
        assertFalse(d.isDone(), "the cancelled request's place is free: the queue has room for D behind B");
        assertEquals(List.of(B, D), engine.inspect("cq", 1).get(0).waiters().stream().map(w -> w.holder()).toList());
        assertFalse(b.isDone());
    }

    @Test
    void aQueuedSemaphoreRequestThatDisagreesWithTheHolderGrantedAheadOfItIsRefusedWithTheMismatch() throws Exception {
        Lease h = engine.acquire(LeaseRequest.builder(A, "sem").build());
        CompletableFuture<Lease> three = engine.acquireAsync(LeaseRequest.builder(B, "sem").semaphore(3)
                .waitFor(Duration.ofSeconds(10)).build());
        CompletableFuture<Lease> two = engine.acquireAsync(LeaseRequest.builder(C, "sem").semaphore(2)
                .waitFor(Duration.ofSeconds(10)).build());
        engine.release(h, null, null);
        assertEquals(B, three.get(20, TimeUnit.SECONDS).holder());
        ExecutionException e = assertThrows(ExecutionException.class, () -> two.get(20, TimeUnit.SECONDS));
        InvalidLeaseRequestException mismatch = (InvalidLeaseRequestException) e.getCause();
        assertEquals(InvalidLeaseRequestException.Reason.PERMITS_MISMATCH, mismatch.reason());
        assertEquals("'sem' is held as a semaphore of 3 permits; this request says 2: every holder of a semaphore "
                + "must agree on its permits", mismatch.getMessage());
        assertEquals(0, engine.inspect("sem", 1).get(0).waiters().size());
    }

    @Test
    void aRequestNotFirstOnEachOfItsNamesIsNotGrantedAlthoughTheyAreFree() throws Exception {
        Lease z = engine.acquire(LeaseRequest.builder(A, "nf/z").build());
        CompletableFuture<Lease> first = engine.acquireAsync(LeaseRequest.builder(B, "nf/x", "nf/z")
                .waitFor(Duration.ofSeconds(10)).build());
        CompletableFuture<Lease> second = engine.acquireAsync(LeaseRequest.builder(C, "nf/x", "nf/y")
                .waitFor(Duration.ofSeconds(10)).build());
        assertFalse(second.isDone(), "x and y are free, but x is promised to the request ahead of it");
        assertEquals(List.of(B, C), engine.inspect("nf/x", 1).get(0).waiters().stream().map(w -> w.holder()).toList());
        engine.release(z, null, null);
        Lease b = first.get(20, TimeUnit.SECONDS);
        assertFalse(second.isDone());
        engine.release(b, null, null);
        assertEquals(C, second.get(20, TimeUnit.SECONDS).holder());
    }

    @Test
    void aWaiterThatBecomesFirstIsWokenWhenTheLeaseGrantedAheadOfItExpires() throws Exception {
        Instant t0 = time.now();
        engine.acquire(LeaseRequest.builder(A, "wk").leaseFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "wk").leaseFor(Duration.ofSeconds(2))
                .waitFor(Duration.ofSeconds(10)).build());
        CompletableFuture<Lease> c = engine.acquireAsync(LeaseRequest.builder(C, "wk")
                .waitFor(Duration.ofSeconds(10)).build());
        time.advance(Duration.ofSeconds(2));
        assertEquals(t0.plusSeconds(2), b.get(20, TimeUnit.SECONDS).grantedAt());
        assertFalse(c.isDone());
        time.advance(Duration.ofSeconds(2));
        assertTrue(c.isDone(), "woken at the deadline of the lease granted ahead of it, not at its own time-out");
        assertEquals(t0.plusSeconds(4), c.get(20, TimeUnit.SECONDS).grantedAt());
    }

    @Test
    void whenTheFirstWaiterLeavesTheRequestBehindItIsGrantedAtOnce() throws Exception {
        Instant t0 = time.now();
        engine.acquire(LeaseRequest.builder(A, "lv").shared().build());
        CompletableFuture<Lease> writer = engine.acquireAsync(LeaseRequest.builder(B, "lv")
                .waitFor(Duration.ofSeconds(2)).build());
        CompletableFuture<Lease> reader = engine.acquireAsync(LeaseRequest.builder(C, "lv").shared()
                .waitFor(Duration.ofSeconds(10)).build());
        assertFalse(reader.isDone(), "a reader does not pass a waiting writer");
        time.advance(Duration.ofSeconds(2));
        assertTrue(writer.isCompletedExceptionally());
        assertTrue(reader.isDone(), "granted when the writer ahead of it left, not at its own time-out");
        assertEquals(t0.plusSeconds(2), reader.get(20, TimeUnit.SECONDS).grantedAt());
    }

    @Test
    void requestsOfTheSameAgeKeepTheirArrivalOrderAheadOfYoungerOnes() throws Exception {
        Instant t0 = time.now();
        engine.acquire(LeaseRequest.builder(A, "eq").build());
        engine.acquireAsync(LeaseRequest.builder(B, "eq").startedAt(t0).waitFor(Duration.ofSeconds(5)).build());
        engine.acquireAsync(LeaseRequest.builder(C, "eq").startedAt(t0.plusMillis(1))
                .waitFor(Duration.ofSeconds(5)).build());
        engine.acquireAsync(LeaseRequest.builder(D, "eq").startedAt(t0).waitFor(Duration.ofSeconds(5)).build());
        assertEquals(List.of(B, D, C), engine.inspect("eq", 1).get(0).waiters().stream().map(w -> w.holder()).toList());
    }
}
