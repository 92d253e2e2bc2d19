package org.leasehold.lease;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;

/**
 * The signed witness of one name of a lease, as the lease service issued it with the grant, renewal or upgrade. The
 * witness itself is known at once; its proof (the signature of the batch it was signed in) follows a little later,
 * so a grant never waits for a signature. What a message stores with the lease ({@link #sealed()}) is complete only
 * with the proof; a writer awaits it when it writes, which is later anyway.
 *
 * <p>Equal witnesses have equal {@link #statement()} bytes; two values are equal when their statements are.
 */
public final class GrantWitness {
    private final byte[] statement;
    private final CompletableFuture<byte[]> sealed;

    /**
     * A witness and its pending proof.
     *
     * @param statement the witness's canonical bytes (docs/FORMAT.md, "Witness")
     * @param sealed    completes with the bytes a frame stores for the lease (docs/FORMAT.md, "Frame witness")
     */
    public GrantWitness(byte[] statement, CompletionStage<byte[]> sealed) {
        this.statement = Objects.requireNonNull(statement, "GrantWitness.statement").clone();
        this.sealed = Objects.requireNonNull(sealed, "GrantWitness.sealed").toCompletableFuture();
    }

    /** The witness's canonical bytes (a copy). */
    public byte[] statement() {
        return statement.clone();
    }

    /** Completes with the frame witness bytes once the witness's batch is signed (a stage callers cannot complete). */
    public CompletionStage<byte[]> sealed() {
        return sealed.minimalCompletionStage();
    }

    /**
     * Runs {@code action} once the witness's batch is signed, with a copy of the frame witness bytes, or with why
     * there is none (the other argument null); at once, on the calling thread, if it is signed already, else on the
     * thread that completes the proof (the service's signing thread: do little there).
     */
    public void whenSealed(BiConsumer<? super byte[], ? super Throwable> action) {
        Objects.requireNonNull(action, "GrantWitness.whenSealed action");
        sealed.whenComplete((bytes, error) -> action.accept(bytes == null ? null : bytes.clone(), error));
    }

    /** A copy of the frame witness bytes if the proof is there, else null (also if signing failed). */
    public byte[] sealedNow() {
        if (!sealed.isDone() || sealed.isCompletedExceptionally()) {
            return null;
        }
        return sealed.join().clone();
    }

    /** True once the proof is there (or signing failed). */
    public boolean isSealed() {
        return sealed.isDone();
    }

    /**
     * The frame witness bytes, waiting up to {@code timeout} for the proof.
     *
     * @throws IllegalStateException if the proof did not come within the timeout, or signing failed (the lease
     *                               service stopped); the message says which
     */
    public byte[] await(Duration timeout) {
        try {
            return sealed.get(timeout.toNanos(), TimeUnit.NANOSECONDS).clone();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the signature of a lease witness", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the lease service could not sign the witness: " + e.getCause().getMessage()
                    + "; take the lease again", e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("the lease service did not sign the witness within " + timeout
                    + ": it is overloaded or stopping; retry", e);
        }
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GrantWitness w && Arrays.equals(w.statement, statement);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(statement);
    }

    @Override
    public String toString() {
        return "GrantWitness[" + statement.length + " B" + (sealed.isDone() ? ", sealed" : ", pending") + "]";
    }
}
