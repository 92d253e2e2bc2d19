package org.leasehold.audit;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Checks witnesses and signed times against a {@link KeySet}. A batch's signature is checked once: the verifier
 * remembers every (key, leaf count, root, signature) it found valid, so the other statements of the batch cost only
 * their Merkle path. Thread-safe.
 */
public final class AuditVerifier {
    /** How many verified batches are remembered before the memory is cleared. */
    private static final int CACHE_LIMIT = 200_000;

    private final KeySet keys;
    private final Map<ByteBuffer, Boolean> verified = new ConcurrentHashMap<>();
    private final LongAdder signatureChecks = new LongAdder();

    public AuditVerifier(KeySet keys) {
        this.keys = keys;
    }

    public KeySet keys() {
        return keys;
    }

    /** How many Ed25519 signatures were checked so far (batches not found in the memory). */
    public long signatureChecks() {
        return signatureChecks.sum();
    }

    /**
     * The problems of a frame's witness: its proof and, if attached, its signed time's proof and that the signed time
     * is of the witness's own service; the key's validity and revocation at each statement's signed time. Empty when
     * all is well.
     */
    public List<AuditProblem> check(FrameWitness fw) {
        List<AuditProblem> problems = new ArrayList<>(0);
        Witness w = fw.witness();
        String what = "the witness of '" + w.name() + "' generation " + w.generation() + " (" + w.event() + ")";
        statement(what, w.keyId(), w.serviceId(), w.signedTime(), fw.witnessBytes(), fw.proof(), problems);
        if (fw.time() != null) {
            SignedTime t = fw.time();
            statement("the signed time " + t.midpoint() + " attached to " + what, t.keyId(), t.serviceId(),
                    t.midpoint(), fw.timeBytes(), fw.timeProof(), problems);
            if (!t.serviceId().equals(w.serviceId())) {
                problems.add(new AuditProblem(AuditProblem.Kind.SERVICE_MISMATCH, "the signed time " + t.midpoint()
                        + " attached to " + what + " is of the lease service '" + t.serviceId() + "', not of the "
                        + "witness's '" + w.serviceId() + "': a witness carries the signed time of its own service, "
                        + "whose clock its floor and deadline are read on"));
            }
        }
        return problems;
    }

    /** The problems of a signed time answer. */
    public List<AuditProblem> check(SignedTimeProof t) {
        List<AuditProblem> problems = new ArrayList<>(0);
        statement("the signed time " + t.time().midpoint(), t.time().keyId(), t.time().serviceId(),
                t.time().midpoint(), t.timeBytes(), t.proof(), problems);
        return problems;
    }

    private void statement(String what, KeyId statedKey, String service, long signedAt, byte[] bytes, BatchProof proof,
            List<AuditProblem> out) {
        if (!statedKey.equals(proof.keyId())) {
            out.add(new AuditProblem(AuditProblem.Kind.KEY_MISMATCH, what + " names key " + statedKey
                    + " but its proof is signed by key " + proof.keyId()));
            return;
        }
        PublishedKey key = keys.get(proof.keyId());
        if (key == null) {
            out.add(new AuditProblem(AuditProblem.Kind.UNKNOWN_KEY, what + " is signed by key " + proof.keyId()
                    + ", which is not among the " + keys.keys().size() + " published keys"));
            return;
        }
        byte[] root = proof.rootFor(bytes);
        if (root == null) {
            out.add(new AuditProblem(AuditProblem.Kind.BAD_PATH, what + " has a Merkle path of " + proof.path().length
                    + " hashes that cannot lead from leaf " + proof.leafIndex() + " to the root of a batch of "
                    + proof.leafCount()));
            return;
        }
        if (!verifies(key.key(), proof, root)) {
            out.add(new AuditProblem(AuditProblem.Kind.BAD_SIGNATURE, what + " does not match the signature of key "
                    + proof.keyId() + ": the statement, its Merkle path or the signature was changed"));
            return;
        }
        if (!key.serviceId().equals(service)) {
            out.add(new AuditProblem(AuditProblem.Kind.SERVICE_MISMATCH, what + " names the lease service '" + service
                    + "' but key " + key.id() + " was published for '" + key.serviceId() + "'"));
        }
        if (signedAt < key.validFrom() || signedAt >= key.validUntil()) {
            out.add(new AuditProblem(AuditProblem.Kind.KEY_NOT_VALID, what + " was signed at " + signedAt
                    + " us, outside the validity [" + key.validFrom() + ", " + key.validUntil() + ") of key "
                    + key.id()));
        }
        if (signedAt >= key.revokedAt()) {
            out.add(new AuditProblem(AuditProblem.Kind.KEY_REVOKED, what + " was signed at " + signedAt
                    + " us, at or after key " + key.id() + " was revoked (" + key.revokedAt() + " us)"));
        }
    }

    private boolean verifies(VerifyingKey key, BatchProof proof, byte[] root) {
        byte[] message = BatchProof.signedMessage(proof.keyId(), proof.leafCount(), root);
        byte[] sig = proof.signature();
        ByteBuffer cacheKey = ByteBuffer.allocate(message.length + sig.length).put(message).put(sig).flip();
        if (verified.containsKey(cacheKey)) {
            return true;
        }
        signatureChecks.increment();
        if (!key.verifies(message, sig)) {
            return false;
        }
        if (verified.size() >= CACHE_LIMIT) {
            verified.clear();
        }
        verified.put(cacheKey, Boolean.TRUE);
        return true;
    }
}
