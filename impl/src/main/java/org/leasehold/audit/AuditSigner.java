package org.leasehold.audit;

import java.util.concurrent.CompletableFuture;

import org.leasehold.lease.GrantWitness;

/**
 * A lease service's signer: witnesses and time answers go into one stream of batches signed by the service's current
 * key. Nothing waits for a signature here; each call returns a future that the batch completes, and blocking on it
 * has the batch signed without waiting out its linger ({@link ProofFuture}).
 *
 * <p>{@link #rotate(SigningKey)} switches to a new key without a pause: statements submitted before the switch are
 * signed with the old key, later ones with the new key. A witness that names the key just rotated out (built before
 * the switch, its proof asked for after it) is still signed with that key, until the next rotation: its signed time
 * lies before the new key's validity. The caller publishes the new key before it rotates ({@link PublishedKeys}).
 */
public final class AuditSigner implements AutoCloseable {
    private final String serviceId;
    private final long radius;
    private final long lingerMicros;
    private final int maxBatch;
    private volatile BatchSigner batches;
    /** The signer of the key before the current one, for witnesses that name it; null before the first rotation. */
    private volatile BatchSigner previous;
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
        Counts c = retired.plus(batches);
        BatchSigner p = previous;
        return p == null ? c : c.plus(p);
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
     * Queues {@code witness} for signing with the key it names: the current one, or the one rotated out last; a
     * witness that names an older key is given the current key's id here.
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
        BatchSigner b = signerOf(witness.keyId());
        boolean keyKept = witness.keyId().equals(b.key().id());
        Witness w = keyKept ? witness : witness.withKeyId(b.key().id());
        byte[] bytes = keyKept && encoded != null ? encoded : w.encode();
        return b.submit(bytes).handle((p, e) -> {
            if (e == null) {
                return CompletableFuture.completedFuture(new FrameWitness(bytes, w, p, null, null, null));
            }
            // Submitted to a key that was retired at that moment: sign with the current one.
            return retired(b) ? sign(w) : CompletableFuture.<FrameWitness>failedFuture(e);
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

    /**
     * The {@link GrantWitness} of {@code witness} ({@code encoded}: its encoding): queued for signing now if
     * {@code now}, else only once somebody asks for its proof ({@link GrantWitness#sealed()}), as {@link #signFrame}
     * would. A grant's or renewal's witness waits to be asked (most leases end without a message written under
     * them); an upgrade's does not (its transaction writes under it at once).
     */
    public GrantWitness grantWitness(Witness witness, byte[] encoded, boolean now) {
        CompletableFuture<byte[]> f = new ProofFuture<>(this::hurry);
        if (now) {
            submitFrame(witness, encoded, f);
            return new GrantWitness(encoded, f);
        }
        return new GrantWitness(encoded, f, () -> submitFrame(witness, encoded, f));
    }

    /** The signer for statements that name {@code key}: the current key's, the previous key's, else the current. */
    private BatchSigner signerOf(KeyId key) {
        BatchSigner b = batches;
        BatchSigner p = previous;
        return p != null && !key.equals(b.key().id()) && key.equals(p.key().id()) ? p : b;
    }

    /** True if {@code b} no longer signs for this signer (rotated out twice, or closed on rotation). */
    private boolean retired(BatchSigner b) {
        return b != batches && b != previous;
    }

    private void submitFrame(Witness witness, byte[] encoded, CompletableFuture<byte[]> f) {
        BatchSigner b = signerOf(witness.keyId());
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
                if (retired(b)) {
                    // Submitted to a key that was retired at that moment: sign with the current one.
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
     * Signs with {@code next} from now on; the old key goes on signing the witnesses that name it, and the key before
     * it has its queue signed and its thread stopped (meanwhile {@link #totals} waits, so that it never counts less
     * than before).
     */
    public synchronized void rotate(SigningKey next) {
        BatchSigner older = previous;
        previous = batches;
        batches = new BatchSigner(next, lingerMicros, maxBatch, "leasehold-audit-signer-" + next.id());
        if (older != null) {
            older.close();
            retired = retired.plus(older);
        }
    }

    /** Signs what is queued and stops. */
    @Override
    public void close() {
        BatchSigner p = previous;
        if (p != null) {
            p.close();
        }
        batches.close();
    }
}
