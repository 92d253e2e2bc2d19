package org.leasehold.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The signing thread's linger: stretched by what signing costs, bounded, and never in the way of closing. */
class BatchSignerTest {

    private static BatchProof signOne(BatchSigner s, int b) throws Exception {
        return s.submit(new byte[] {(byte) b}).get(10, TimeUnit.SECONDS);
    }

    @Test
    void aBatchWaitsNineTimesAsLongAsTheLastTookToSignWithinTheBound() throws Exception {
        try (BatchSigner s = new BatchSigner(AuditFixture.key(3), 1, 64, "test-signer")) {
            assertEquals(1, s.lingerMicros(), "before the first batch: the configured linger");
            signOne(s, 1);
            // The second proof is handed out after the first batch set the next linger.
            signOne(s, 2);
            long linger = s.lingerMicros();
            // An Ed25519 signature takes far more than a microsecond, so nine times it is more than the 1 µs asked.
            assertTrue(linger > 1, "linger after signing: " + linger + " µs");
            assertTrue(linger <= BatchSigner.MAX_LINGER_MICROS, "bounded: " + linger + " µs");
            assertEquals(2, s.statements());
        }
    }

    @Test
    void aLingerOfZeroStaysZeroAndOneAboveTheBoundIsKept() throws Exception {
        try (BatchSigner none = new BatchSigner(AuditFixture.key(4), 0, 64, "test-signer-0");
                BatchSigner slow = new BatchSigner(AuditFixture.key(5), 5_000, 64, "test-signer-5ms")) {
            for (int i = 0; i < 3; i++) {
                signOne(none, i);
                signOne(slow, i);
            }
            assertEquals(3, none.batches(), "no linger: one statement at a time was signed on its own");
            assertEquals(0, none.lingerMicros());
            assertEquals(5_000, slow.lingerMicros());
        }
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
}
