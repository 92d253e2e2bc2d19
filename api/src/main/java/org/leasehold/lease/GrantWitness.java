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
 * <p>A witness may be signed only when somebody asks for its proof (grants and renewals: most leases are released
 * without a message written under them, and a witness no frame carries needs no signature). Asking is
 * {@link #sealed()}, {@link #whenSealed} or {@link #await}; {@link #sealedNow()} and {@link #isSealed()} only look.
 *
 * <p>Equal witnesses have equal {@link #statement()} bytes; two values are equal when their statements are.
 */
public final class GrantWitness {
    private final byte[] statement;
    private final CompletableFuture<byte[]> sealed;
    /** What asks for the proof, until somebody first wants it (then null); null from the start if it comes anyway. */
    private volatile Runnable ask;

    /**
     * A witness and its pending proof, which comes without being asked for.
     *
     * @param statement the witness's canonical bytes (docs/FORMAT.md, "Witness")
     * @param sealed    completes with the bytes a frame stores for the lease (docs/FORMAT.md, "Frame witness")
     */
    public GrantWitness(byte[] statement, CompletionStage<byte[]> sealed) {
        this(statement, sealed, null);
    }

    /**
     * A witness whose proof comes once asked for: {@code ask} runs once, when somebody first wants the proof
     * ({@link #sealed()}, {@link #whenSealed}, {@link #await}), and makes {@code sealed} complete.
     *
     * @param statement the witness's canonical bytes (docs/FORMAT.md, "Witness")
     * @param sealed    completes with the bytes a frame stores for the lease (docs/FORMAT.md, "Frame witness")
     * @param ask       asks the lease service for the proof (null: it comes anyway)
     */
    public GrantWitness(byte[] statement, CompletionStage<byte[]> sealed, Runnable ask) {
        this.statement = Objects.requireNonNull(statement, "GrantWitness.statement").clone();
        this.sealed = Objects.requireNonNull(sealed, "GrantWitness.sealed").toCompletableFuture();
        this.ask = ask;
    }

    /** Runs {@link #ask} the first time the proof is wanted. */
    private CompletableFuture<byte[]> wanted() {
        Runnable a = ask;
        if (a != null) {
            synchronized (this) {
                a = ask;
                ask = null;
            }
            if (a != null && !sealed.isDone()) {
                a.run();
            }
        }
        return sealed;
    }

    /** True while the proof has not been asked for and will not come unless it is ({@link #sealed()} asks). */
    public boolean unasked() {
        return ask != null && !sealed.isDone();
    }

    /** True if {@code statement} holds this witness's canonical bytes (no copy made). */
    public boolean hasStatement(byte[] statement) {
        return Arrays.equals(this.statement, statement);
    }

    /** The witness's canonical bytes (a copy). */
    public byte[] statement() {
        return statement.clone();
    }

    /**
     * Completes with the frame witness bytes once the witness's batch is signed (a stage callers cannot complete); asks
     * for the proof if nobody has.
     */
    public CompletionStage<byte[]> sealed() {
        return wanted().minimalCompletionStage();
    }

    /**
     * Asks for the proof if nobody has, and runs {@code action} once the witness's batch is signed, with a copy of the
     * frame witness bytes, or with why there is none (the other argument null); at once, on the calling thread, if it
     * is signed already, else on the thread that completes the proof (the service's signing thread: do little there).
     */
    public void whenSealed(BiConsumer<? super byte[], ? super Throwable> action) {
        Objects.requireNonNull(action, "GrantWitness.whenSealed action");
        wanted().whenComplete((bytes, error) -> action.accept(bytes == null ? null : bytes.clone(), error));
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
     * The frame witness bytes, asking for the proof if nobody has and waiting up to {@code timeout} for it.
     *
     * @throws IllegalStateException if the proof did not come within the timeout, or signing failed (the lease
     *                               service stopped); the message says which
     */
    public byte[] await(Duration timeout) {
        try {
            return wanted().get(timeout.toNanos(), TimeUnit.NANOSECONDS).clone();
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
        return "GrantWitness[" + statement.length + " B" + (sealed.isDone() ? ", sealed" : unasked() ? ", unasked"
                : ", pending") + "]";
    }
}
