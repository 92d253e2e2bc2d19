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
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;

/**
 * The edges of a queued request's end: a requested deadline that passes just as the names become free (whichever
 * timer runs first), a fence reached while it waits, and a cancellation that leaves neither its time-out nor its
 * place in the queue behind.
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
    void aWaitEndingAfterTheFenceIsRefusedWithTheFencesReason() throws Exception {
        engine.acquire(LeaseRequest.builder(A, "f").build());
        CompletableFuture<Lease> b = engine.acquireAsync(LeaseRequest.builder(B, "f")
                .waitFor(Duration.ofSeconds(2)).build());
        Instant fence = time.now().plusSeconds(1);
        engine.fenceAt(fence, "the log moved to another owner");
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
}
