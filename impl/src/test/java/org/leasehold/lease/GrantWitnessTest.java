package org.leasehold.lease;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

/** A witness's proof as its holders see it: waited for, asked for now, or handed over when it comes. */
class GrantWitnessTest {

    @Test
    void whenSealedHandsOverACopyOnceAndSealedNowIsNullUntilThen() {
        CompletableFuture<byte[]> proof = new CompletableFuture<>();
        GrantWitness w = new GrantWitness(new byte[] {1, 2}, proof);
        AtomicReference<byte[]> early = new AtomicReference<>();
        AtomicReference<Throwable> earlyError = new AtomicReference<>(new Throwable("not called"));
        w.whenSealed((bytes, error) -> {
            early.set(bytes);
            earlyError.set(error);
        });
        assertNull(w.sealedNow(), "no proof yet");
        assertNull(early.get(), "not handed over before the proof");

        byte[] frame = {9, 8, 7};
        proof.complete(frame);
        assertArrayEquals(frame, early.get());
        assertNull(earlyError.get());
        early.get()[0] = 0;
        byte[] now = w.sealedNow();
        assertArrayEquals(new byte[] {9, 8, 7}, now, "a holder changing its copy changes nobody else's");
        now[1] = 0;
        AtomicReference<byte[]> late = new AtomicReference<>();
        w.whenSealed((bytes, error) -> late.set(bytes));
        assertArrayEquals(new byte[] {9, 8, 7}, late.get(), "sealed already: handed over at once");
        assertArrayEquals(new byte[] {9, 8, 7}, w.await(Duration.ZERO));
    }

    @Test
    void aFailedSignatureIsHandedOverAsItsErrorAndSealedNowStaysNull() {
        CompletableFuture<byte[]> proof = new CompletableFuture<>();
        GrantWitness w = new GrantWitness(new byte[] {1}, proof);
        IllegalStateException stopped = new IllegalStateException("the signer stopped");
        proof.completeExceptionally(stopped);
        AtomicReference<byte[]> bytes = new AtomicReference<>(new byte[0]);
        AtomicReference<Throwable> error = new AtomicReference<>();
        w.whenSealed((b, e) -> {
            bytes.set(b);
            error.set(e);
        });
        assertNull(bytes.get());
        assertSame(stopped, error.get() instanceof java.util.concurrent.CompletionException ? error.get().getCause()
                : error.get());
        assertNull(w.sealedNow());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> w.await(Duration.ZERO));
        assertEquals("the lease service could not sign the witness: the signer stopped; take the lease again",
                e.getMessage());
    }

    @Test
    void aProofSignedOnRequestIsAskedForOnceByWhoeverWantsItFirstAndNotByLooking() {
        for (int way = 0; way < 3; way++) {
            CompletableFuture<byte[]> proof = new CompletableFuture<>();
            AtomicInteger asked = new AtomicInteger();
            GrantWitness w = new GrantWitness(new byte[] {3}, proof, () -> {
                asked.incrementAndGet();
                proof.complete(new byte[] {4});
            });
            assertTrue(w.unasked());
            assertNull(w.sealedNow());
            assertFalse(w.isSealed());
            assertEquals(0, asked.get(), "looking does not ask");
            assertTrue(w.toString().contains("unasked"), w.toString());
            switch (way) {
                case 0 -> w.sealed();
                case 1 -> w.whenSealed((b, e) -> { });
                default -> w.await(Duration.ZERO);
            }
            assertEquals(1, asked.get(), "way " + way);
            assertFalse(w.unasked());
            w.sealed();
            w.whenSealed((b, e) -> { });
            assertArrayEquals(new byte[] {4}, w.await(Duration.ZERO));
            assertEquals(1, asked.get(), "asked once, way " + way);
        }
        // Sealed before anybody asked (its proof came anyway): nothing to ask.
        AtomicInteger asked = new AtomicInteger();
        GrantWitness done = new GrantWitness(new byte[] {5}, CompletableFuture.completedFuture(new byte[] {6}),
                asked::incrementAndGet);
        assertFalse(done.unasked());
        assertArrayEquals(new byte[] {6}, done.await(Duration.ZERO));
        assertEquals(0, asked.get());
        assertTrue(done.hasStatement(new byte[] {5}));
        assertFalse(done.hasStatement(new byte[] {6}));
    }
}
