package org.leasehold.audit;

import java.util.Objects;

/**
 * A {@link SignedTime} with its {@link BatchProof}: what a time request answers.
 *
 * @param time      the statement
 * @param timeBytes its canonical bytes (the Merkle leaf the proof covers)
 * @param proof     its proof
 */
public record SignedTimeProof(SignedTime time, byte[] timeBytes, BatchProof proof) {

    public SignedTimeProof {
        Objects.requireNonNull(time, "SignedTimeProof.time");
        Objects.requireNonNull(timeBytes, "SignedTimeProof.timeBytes");
        Objects.requireNonNull(proof, "SignedTimeProof.proof");
    }
}
