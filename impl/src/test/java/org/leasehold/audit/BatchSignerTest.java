package org.leasehold.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/**
 * The signing thread's linger: stretched by what a signature costs, bounded, and never in the way of closing; and the
 * bound on the statements waiting to be signed.
 */
class BatchSignerTest {

    private static BatchProof signOne(BatchSigner s, int b) throws Exception {
        return s.submit(new byte[] {(byte) b}).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aBatchWaitsLongerOnceASignatureHasBeenTimedWithinTheBound() throws Exception {
        try (BatchSigner s = new BatchSigner(AuditFixture.key(3), 1, 64, "test-signer")) {
            assertEquals(1, s.lingerMicros(), "before the first batch: the configured linger");
            signOne(s, 1);
            // The second proof is handed out after the first batch set the next linger.
            signOne(s, 2);
            long linger = s.lingerMicros();
            // An Ed25519 signature takes far more than 10 ns, so a hundred times it is more than the 1 µs asked.
            assertTrue(linger > 1, "linger after signing: " + linger + " µs");
            assertTrue(linger <= BatchSigner.MAX_LINGER_MICROS, "bounded: " + linger + " µs");
            assertEquals(2, s.statements());
        }
    }

    @Test
    void theLingerFollowsTheSignatureNotTheBatch() {
        long us = 1_000L;
        assertEquals(4_500 * us, BatchSigner.nextLinger(200 * us, 45 * us), "a 45 µs signature: 4.5 ms");
        assertEquals(200 * us, BatchSigner.nextLinger(200 * us, 1 * us), "a fast signature: the configured linger");
        assertEquals(BatchSigner.MAX_LINGER_MICROS * us, BatchSigner.nextLinger(200 * us, 5_000 * us),
                "a slow signature (a cold JIT, a busy machine): the bound");
        assertEquals(50_000 * us, BatchSigner.nextLinger(50_000 * us, 5_000 * us), "a configured linger above the bound");
        assertEquals(0, BatchSigner.nextLinger(0, 45 * us), "no linger stays none");
    }

    @Test
    void aLingerOfZeroStaysZeroAndOneAboveTheBoundIsKept() throws Exception {
        try (BatchSigner none = new BatchSigner(AuditFixture.key(4), 0, 64, "test-signer-0");
                BatchSigner slow = new BatchSigner(AuditFixture.key(5), 50_000, 64, "test-signer-50ms")) {
            for (int i = 0; i < 3; i++) {
                signOne(none, i);
                signOne(slow, i);
            }
            assertEquals(3, none.batches(), "no linger: one statement at a time was signed on its own");
            assertEquals(0, none.lingerMicros());
            assertEquals(50_000, slow.lingerMicros(), "above the bound: kept");
        }
    }

    @Test
    void aCallerBlockingOnAProofOrAStageOfItHasItsBatchSignedWithoutTheLinger() throws Exception {
        try (BatchSigner s = new BatchSigner(AuditFixture.key(8), 1_000_000, 64, "test-signer-hurry")) {
            CompletableFuture<BatchProof> waitedFor = s.submit(new byte[] {1});
            CompletableFuture<BatchProof> notWaitedFor = s.submit(new byte[] {2});
            CompletableFuture<Integer> stage = waitedFor.thenApply(BatchProof::leafCount);
            // The linger is a second: without the hurry this get would time out.
            assertEquals(2, stage.get(800, TimeUnit.MILLISECONDS), "both queued statements went into one batch");
            // Its future completes just after (on the signing thread); polled, not waited on, so as not to hurry.
            for (int i = 0; i < 10_000 && !notWaitedFor.isDone(); i++) {
                Thread.sleep(1);
            }
            assertEquals(2, notWaitedFor.getNow(null).leafCount());
            assertEquals(1, s.hurriedBatches());
            assertEquals(1, s.batches());

            // Nobody waits: the next statement waits out its linger (it is still unsigned when a later one is asked).
            CompletableFuture<BatchProof> quiet = s.submit(new byte[] {3});
            Thread.sleep(50);
            assertFalse(quiet.isDone(), "a statement nobody waits for is batched for the linger");
            assertEquals(2, s.submit(new byte[] {4}).join().leafCount(), "join hurries too");
            assertEquals(2, s.hurriedBatches());
        }
    }

    /** A sink that keeps what it was handed and on which thread; one that throws when {@code throwing}. */
    private static final class Kept implements BatchSigner.ProofSink {
        final CompletableFuture<BatchProof> proof = new CompletableFuture<>();
        final AtomicReference<String> thread = new AtomicReference<>();
        private final boolean throwing;

        Kept(boolean throwing) {
            this.throwing = throwing;
        }

        @Override
        public void proven(BatchProof p) {
            thread.set(Thread.currentThread().getName());
            proof.complete(p);
            if (throwing) {
                throw new IllegalStateException("a sink that fails");
            }
        }

        @Override
        public void failed(Throwable error) {
            thread.set(Thread.currentThread().getName());
            proof.completeExceptionally(error);
        }
    }

    @Test
    void aSinkIsHandedItsProofOnTheSigningThreadAndOneThatThrowsSpoilsNoOther() throws Exception {
        List<Kept> sinks = List.of(new Kept(false), new Kept(true), new Kept(false));
        try (BatchSigner s = new BatchSigner(AuditFixture.key(9), 1_000_000, 64, "test-signer-sink")) {
            for (int i = 0; i < sinks.size(); i++) {
                s.submit(new byte[] {(byte) i}, sinks.get(i));
            }
            s.hurry();
            for (int i = 0; i < sinks.size(); i++) {
                BatchProof p = sinks.get(i).proof.get(10, TimeUnit.SECONDS);
                assertEquals(3, p.leafCount(), "the three statements share one batch");
                assertEquals(i, p.leafIndex());
                assertEquals("test-signer-sink", sinks.get(i).thread.get());
                assertTrue(Merkle.same(p.rootFor(new byte[] {(byte) i}), sinks.get(0).proof.get().rootFor(
                        new byte[] {0})), "each proof leads its own statement to the batch's root");
            }
            assertEquals(1, s.batches());
            // The signing thread survived the sink that threw: the next statement is signed too.
            assertEquals(1, signOne(s, 7).leafCount());
        }
        Kept late = new Kept(false);
        BatchSigner closed = new BatchSigner(AuditFixture.key(10), 0, 64, "test-signer-closed");
        closed.close();
        closed.submit(new byte[] {1}, late);
        assertTrue(late.proof.isCompletedExceptionally(), "closed: the sink is told at once");
        assertEquals(Thread.currentThread().getName(), late.thread.get(), "on the submitting thread");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> {
            try {
                late.proof.join();
            } catch (java.util.concurrent.CompletionException ce) {
                throw ce.getCause();
            }
        });
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void closingDuringALingerSignsWhatIsQueued() throws Exception {
        BatchSigner s = new BatchSigner(AuditFixture.key(6), 1_000_000, 64, "test-signer-1s");
        CompletableFuture<BatchProof> a = s.submit(new byte[] {1});
        CompletableFuture<BatchProof> b = s.submit(new byte[] {2});
        s.close();
        BatchProof pa = a.get(10, TimeUnit.SECONDS);
        BatchProof pb = b.get(10, TimeUnit.SECONDS);
        assertEquals(2, pa.leafCount());
        assertEquals(2, pb.leafCount());
        assertTrue(s.submit(new byte[] {3}).isCompletedExceptionally(), "closed: nothing more is signed");
    }

    @Test
    void aCallerThatFindsTheQueueFullWaitsForTheSignerAndTheSigningThreadNeverWaits() throws Exception {
        CountDownLatch hold = new CountDownLatch(1);
        // A linger of 1 s: the first statement's batch waits, so its completion is attached before it is signed.
        try (BatchSigner s = new BatchSigner(AuditFixture.key(7), 1_000_000, 4, 4, "test-signer-bounded")) {
            // The first proof's completion runs on the signing thread and holds it there; meanwhile it submits more
            // than the queue holds, which must not make the signing thread wait for itself.
            List<CompletableFuture<BatchProof>> fromSigner = new CopyOnWriteArrayList<>();
            AtomicReference<String> ranOn = new AtomicReference<>();
            CompletableFuture<BatchProof> first = s.submit(new byte[] {0});
            CompletableFuture<Void> held = first.thenAccept(p -> {
                ranOn.set(Thread.currentThread().getName());
                for (int i = 0; i < 6; i++) {
                    fromSigner.add(s.submit(new byte[] {(byte) (100 + i)}));
                }
                try {
                    hold.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (fromSigner.size() < 6 && System.nanoTime() < until) {
                Thread.sleep(5);
            }
            assertEquals("test-signer-bounded", ranOn.get(), "the completion ran on the signing thread");
            assertEquals(6, fromSigner.size(), "the signing thread queued beyond the bound without waiting");
            // The queue is over its bound: a caller now waits until the signer has taken a batch.
            AtomicReference<CompletableFuture<BatchProof>> late = new AtomicReference<>();
            Thread caller = new Thread(() -> late.set(s.submit(new byte[] {50})), "bounded-caller");
            caller.start();
            while (caller.getState() != Thread.State.TIMED_WAITING && caller.getState() != Thread.State.WAITING
                    && System.nanoTime() < until) {
                Thread.sleep(5);
            }
            assertTrue(caller.getState() == Thread.State.TIMED_WAITING
                    || caller.getState() == Thread.State.WAITING, "the caller waits: " + caller.getState());
            assertEquals(null, late.get(), "not queued while the queue is full");
            assertEquals(1, s.waits());
            hold.countDown();
            caller.join(30_000);
            held.get(30, TimeUnit.SECONDS);
            late.get().get(30, TimeUnit.SECONDS);
            for (CompletableFuture<BatchProof> f : fromSigner) {
                f.get(30, TimeUnit.SECONDS);
            }
            assertEquals(8, s.statements(), "every statement signed");
        }
    }

    @Test
    void anInterruptedCallerIsQueuedBeyondTheBoundAndKeepsItsInterrupt() throws Exception {
        CountDownLatch hold = new CountDownLatch(1);
        try (BatchSigner s = new BatchSigner(AuditFixture.key(8), 1_000_000, 2, 2, "test-signer-interrupt")) {
            AtomicReference<String> ranOn = new AtomicReference<>();
            CountDownLatch holding = new CountDownLatch(1);
            CompletableFuture<Void> held = s.submit(new byte[] {0}).thenAccept(p -> {
                ranOn.set(Thread.currentThread().getName());
                holding.countDown();
                try {
                    hold.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertTrue(holding.await(30, TimeUnit.SECONDS));
            assertEquals("test-signer-interrupt", ranOn.get(), "the completion holds the signing thread");
            CompletableFuture<BatchProof> fills = s.submit(new byte[] {1});
            CompletableFuture<BatchProof> full = s.submit(new byte[] {2});
            assertEquals(0, s.waits(), "two places, two statements");
            Thread.currentThread().interrupt();
            CompletableFuture<BatchProof> beyond = s.submit(new byte[] {3});
            assertTrue(Thread.interrupted(), "the interrupt is kept (and cleared here)");
            assertEquals(1, s.waits(), "the queue was full");
            hold.countDown();
            held.get(30, TimeUnit.SECONDS);
            fills.get(30, TimeUnit.SECONDS);
            full.get(30, TimeUnit.SECONDS);
            beyond.get(30, TimeUnit.SECONDS);
            assertEquals(4, s.statements());
        }
    }

    @Test
    void aBoundBelowOneBatchIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new BatchSigner(AuditFixture.key(9), 0, 8, 4, "test-signer-refused"));
        assertTrue(e.getMessage().contains("allow at least a batch"), e.getMessage());
    }
}
