package org.leasehold.audit;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Signs statements in batches: one thread takes what callers submitted, waits up to {@code linger} for more (or until
 * {@code maxBatch} are there), builds the batch's Merkle tree, signs its root once, and completes each statement's
 * future with its {@link BatchProof}. A caller never waits for the signature: {@link #submit(byte[])} only queues.
 * Under load batches grow by themselves (what queued while the last batch was signed), so signatures per second stay
 * bounded by {@code 1 / linger} plus what one core can sign.
 *
 * <p>The linger is a real-time batching delay, not part of any decision, so it is measured with {@link System#nanoTime()}
 * and not with the injected clock.
 */
public final class BatchSigner implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(BatchSigner.class.getName());

    private record Pending(byte[] statement, CompletableFuture<BatchProof> proof) {
    }

    private static final Pending STOP = new Pending(new byte[0], new CompletableFuture<>());

    private final SigningKey key;
    private final long lingerNanos;
    private final int maxBatch;
    private final BlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
    private final Thread thread;
    private volatile boolean closed;
    private volatile long batches;
    private volatile long statements;

    /**
     * Starts the signing thread.
     *
     * @param key          the signing key
     * @param lingerMicros how long a batch waits for more statements after its first, 0 for not at all
     * @param maxBatch     the most statements in one batch (1 to {@link BatchProof#MAX_LEAVES})
     * @param threadName   the signing thread's name
     */
    public BatchSigner(SigningKey key, long lingerMicros, int maxBatch, String threadName) {
        if (lingerMicros < 0 || lingerMicros > 1_000_000) {
            throw new IllegalArgumentException("the batch linger is 0 to 1000000 us, got " + lingerMicros);
        }
        if (maxBatch < 1 || maxBatch > BatchProof.MAX_LEAVES) {
            throw new IllegalArgumentException("a batch holds 1 to " + BatchProof.MAX_LEAVES + " statements, got "
                    + maxBatch);
        }
        this.key = key;
        this.lingerNanos = lingerMicros * 1_000L;
        this.maxBatch = maxBatch;
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    public SigningKey key() {
        return key;
    }

    /**
     * Queues {@code statement} (an encoded witness or signed time) for the next batch. The future completes with its
     * proof once the batch is signed, or exceptionally with {@link IllegalStateException} if the signer was closed
     * first.
     */
    public CompletableFuture<BatchProof> submit(byte[] statement) {
        CompletableFuture<BatchProof> f = new CompletableFuture<>();
        if (closed) {
            f.completeExceptionally(closedError());
            return f;
        }
        queue.add(new Pending(statement, f));
        if (closed) {
            drainClosed();
        }
        return f;
    }

    /** How many batches were signed so far. */
    public long batches() {
        return batches;
    }

    /** How many statements were signed so far. */
    public long statements() {
        return statements;
    }

    private IllegalStateException closedError() {
        return new IllegalStateException("the audit signer of key " + key.id() + " is closed: the lease service is "
                + "stopping, so this statement was not signed");
    }

    private void run() {
        List<Pending> batch = new ArrayList<>();
        try {
            while (true) {
                Pending first = queue.take();
                if (first == STOP) {
                    return;
                }
                batch.add(first);
                queue.drainTo(batch, maxBatch - batch.size());
                if (lingerNanos > 0 && batch.size() < maxBatch) {
                    long until = System.nanoTime() + lingerNanos;
                    long left;
                    while (batch.size() < maxBatch && (left = until - System.nanoTime()) > 0) {
                        Pending p = queue.poll(left, TimeUnit.NANOSECONDS);
                        if (p == null) {
                            break;
                        }
                        if (p == STOP) {
                            queue.add(STOP);
                            break;
                        }
                        batch.add(p);
                        queue.drainTo(batch, maxBatch - batch.size());
                    }
                }
                boolean stop = batch.remove(STOP);
                sign(batch);
                batch.clear();
                if (stop) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            drainClosed();
        }
    }

    private void sign(List<Pending> batch) {
        if (batch.isEmpty()) {
            return;
        }
        try {
            byte[][] leaves = new byte[batch.size()][];
            for (int i = 0; i < leaves.length; i++) {
                leaves[i] = Merkle.leafHash(batch.get(i).statement);
            }
            List<byte[][]> levels = Merkle.levels(leaves);
            byte[] root = levels.get(levels.size() - 1)[0];
            byte[] signature = key.sign(BatchProof.signedMessage(key.id(), leaves.length, root));
            batches++;
            statements += leaves.length;
            for (int i = 0; i < leaves.length; i++) {
                batch.get(i).proof.complete(new BatchProof(key.id(), leaves.length, i, Merkle.path(levels, i),
                        signature));
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-8001 could not sign a batch of " + batch.size()
                    + " audit statements with key " + key.id() + ": they carry no proof", e);
            for (Pending p : batch) {
                p.proof.completeExceptionally(e);
            }
        }
    }

    private void drainClosed() {
        List<Pending> left = new ArrayList<>();
        queue.drainTo(left);
        for (Pending p : left) {
            if (p != STOP) {
                p.proof.completeExceptionally(closedError());
            }
        }
    }

    /** Signs what is queued, stops the thread and fails later submissions. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        queue.add(STOP);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        drainClosed();
    }
}
