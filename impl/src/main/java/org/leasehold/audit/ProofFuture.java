package org.leasehold.audit;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A future that a signed batch completes: a caller that blocks on it ({@link #get()}, {@link #get(long, TimeUnit)},
 * {@link #join()}) before the batch is signed asks the signer to sign now instead of at the end of its linger
 * ({@link BatchSigner#hurry()}), and so does a caller blocking on any stage derived from it ({@code thenApply},
 * {@code handle}, {@code thenCompose}...). The linger batches statements nobody waits for yet; once somebody does (a
 * commit writing its lease's witness, a time request), waiting longer only adds latency.
 *
 * @param <T> the value
 */
public final class ProofFuture<T> extends CompletableFuture<T> {
    private final Runnable hurry;

    /** @param hurry what a blocking caller runs first while the future is not done */
    public ProofFuture(Runnable hurry) {
        this.hurry = java.util.Objects.requireNonNull(hurry, "ProofFuture.hurry");
    }

    @Override
    public <U> CompletableFuture<U> newIncompleteFuture() {
        return new ProofFuture<>(hurry);
    }

    @Override
    public T get() throws InterruptedException, ExecutionException {
        hurry();
        return super.get();
    }

    @Override
    public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
        hurry();
        return super.get(timeout, unit);
    }

    @Override
    public T join() {
        hurry();
        return super.join();
    }

    private void hurry() {
        if (!isDone()) {
            hurry.run();
        }
    }
}
