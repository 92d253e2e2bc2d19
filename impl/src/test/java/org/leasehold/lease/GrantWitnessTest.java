package org.leasehold.lease;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
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
}
