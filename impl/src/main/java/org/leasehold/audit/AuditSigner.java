package org.leasehold.audit;

import java.util.concurrent.CompletableFuture;

/**
 * A lease service's signer: witnesses and time answers go into one stream of batches signed by the service's current
 * key. Nothing waits for a signature here; each call returns a future that the batch completes, and blocking on it
 * has the batch signed without waiting out its linger ({@link ProofFuture}).
 *
 * <p>{@link #rotate(SigningKey)} switches to a new key without a pause: statements submitted before the switch are
 * signed with the old key, later ones with the new key. The caller publishes the new key before it rotates
 * ({@link PublishedKeys}).
 */
public final class AuditSigner implements AutoCloseable {
    private final String serviceId;
    private final long radius;
    private final long lingerMicros;
    private final int maxBatch;
    private volatile BatchSigner batches;
    /** What the signers of earlier keys did (guarded by this). */
    private Counts retired = new Counts(0, 0, 0, 0, 0);

    /**
     * What the signer did since it started, every key it signed with together (for metrics: the counts never go down
     * across a rotation).
     *
     * @param batches        batches signed
     * @param statements     statements (witnesses and signed times) signed
     * @param hurriedBatches batches signed before the end of their linger because somebody waited for a proof
     * @param queueFullWaits submissions that found the queue of statements full and waited for room
     * @param queued         statements waiting to be signed now
     */
    public record Counts(long batches, long statements, long hurriedBatches, long queueFullWaits, int queued) {

        Counts plus(BatchSigner b) {
            return new Counts(batches + b.batches(), statements + b.statements(), hurriedBatches + b.hurriedBatches(),
                    queueFullWaits + b.waits(), queued + b.queued());
        }
    }

    /**
     * Starts signing with {@code key}.
     *
     * @param key          the service's key
     * @param serviceId    the service instance the statements name
     * @param radiusMicros the bound on the service's clock error its signed times state
     * @param lingerMicros how long a batch waits for more statements after its first
     * @param maxBatch     the most statements in one batch
     */
    public AuditSigner(SigningKey key, String serviceId, long radiusMicros, long lingerMicros, int maxBatch) {
        if (radiusMicros < 0) {
            throw new IllegalArgumentException("a signed time's radius is not negative, got " + radiusMicros);
        }
        this.serviceId = serviceId;
        this.radius = radiusMicros;
        this.lingerMicros = lingerMicros;
        this.maxBatch = maxBatch;
        this.batches = new BatchSigner(key, lingerMicros, maxBatch, "leasehold-audit-signer-" + key.id());
    }

    public String serviceId() {
        return serviceId;
    }

    /** The id of the key that signs from now on. */
    public KeyId keyId() {
        return batches.key().id();
    }

    /** The current key's public half. */
    public VerifyingKey publicKey() {
        return batches.key().publicKey();
    }

    /** The bound on the clock error the signed times state, in microseconds. */
    public long radius() {
        return radius;
    }

    /** How many batches and statements the current key signed (its signer's counters). */
    public long[] counts() {
        BatchSigner b = batches;
        return new long[] {b.batches(), b.statements()};
    }

    /** What the signer did since it started, with every key (see {@link Counts}). */
    public synchronized Counts totals() {
        return retired.plus(batches);
    }

    /** Has the batch being gathered signed now: somebody (a client's time request) waits for it. */
    public void hurry() {
        batches.hurry();
    }

    /** How many batches the current key signed before the end of their linger because somebody waited. */
    public long hurriedBatches() {
        return batches.hurriedBatches();
    }

    /**
     * Queues {@code witness} for signing. Its key id must be {@link #keyId()}'s; a witness built just before a
     * rotation is given the new key id here.
     */
    public CompletableFuture<FrameWitness> sign(Witness witness) {
        return sign(witness, null);
    }

    /**
     * {@link #sign(Witness)} with the witness's encoding already made ({@code encoded}, {@code witness.encode()}'s
     * bytes, or null to encode it here), so that a caller who keeps the bytes does not encode twice; a witness given
     * the new key id here is encoded again.
     */
    public CompletableFuture<FrameWitness> sign(Witness witness, byte[] encoded) {
        BatchSigner b = batches;
        boolean keyKept = witness.keyId().equals(b.key().id());
        Witness w = keyKept ? witness : witness.withKeyId(b.key().id());
        byte[] bytes = keyKept && encoded != null ? encoded : w.encode();
        return b.submit(bytes).handle((p, e) -> {
            if (e == null) {
                return CompletableFuture.completedFuture(new FrameWitness(bytes, w, p, null, null, null));
            }
            // Submitted to a key that was rotated out at that moment: sign with the new one.
            return batches != b ? sign(w) : CompletableFuture.<FrameWitness>failedFuture(e);
        }).thenCompose(f -> f);
    }

    /**
     * {@link #sign(Witness, byte[])} to the bytes a frame stores ({@link FrameWitness#encode()}), made on the signing
     * thread as each proof is handed out, with no future in between: the grant path of a signing service. The future
     * hurries the signer when waited for ({@link ProofFuture}); it fails if the signer stops first, or if the frame
     * witness does not fit a frame.
     */
    public CompletableFuture<byte[]> signFrame(Witness witness, byte[] encoded) {
        CompletableFuture<byte[]> f = new ProofFuture<>(this::hurry);
        submitFrame(witness, encoded, f);
        return f;
    }

    private void submitFrame(Witness witness, byte[] encoded, CompletableFuture<byte[]> f) {
        BatchSigner b = batches;
        boolean keyKept = witness.keyId().equals(b.key().id());
        Witness w = keyKept ? witness : witness.withKeyId(b.key().id());
        byte[] bytes = keyKept && encoded != null ? encoded : w.encode();
        b.submit(bytes, new BatchSigner.ProofSink() {
            @Override
            public void proven(BatchProof proof) {
                try {
                    f.complete(new FrameWitness(bytes, w, proof, null, null, null).encode());
                } catch (RuntimeException e) {
                    f.completeExceptionally(e);
                }
            }

            @Override
            public void failed(Throwable error) {
                if (batches != b) {
                    // Submitted to a key that was rotated out at that moment: sign with the new one.
                    submitFrame(w, null, f);
                } else {
                    f.completeExceptionally(error);
                }
            }
        });
    }

    /** Answers a time request: the service's time {@code nowMicros} with its radius over {@code nonce}, signed. */
    public CompletableFuture<SignedTimeProof> signTime(byte[] nonce, long nowMicros) {
        BatchSigner b = batches;
        SignedTime t = new SignedTime(b.key().id(), serviceId, nonce, nowMicros, radius);
        byte[] bytes = t.encode();
        return b.submit(bytes).handle((p, e) -> {
            if (e == null) {
                return CompletableFuture.completedFuture(new SignedTimeProof(t, bytes, p));
            }
            return batches != b ? signTime(nonce, nowMicros) : CompletableFuture.<SignedTimeProof>failedFuture(e);
        }).thenCompose(f -> f);
    }

    /**
     * Signs with {@code next} from now on; the old key's queue is signed and its thread stopped (meanwhile
     * {@link #totals} waits, so that it never counts less than before).
     */
    public synchronized void rotate(SigningKey next) {
        BatchSigner old = batches;
        batches = new BatchSigner(next, lingerMicros, maxBatch, "leasehold-audit-signer-" + next.id());
        old.close();
        retired = retired.plus(old);
    }

    /** Signs what is queued and stops. */
    @Override
    public void close() {
        batches.close();
    }
}
