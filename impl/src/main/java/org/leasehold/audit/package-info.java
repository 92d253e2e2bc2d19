/**
 * The audit chain: Ed25519 keys, signed lease witnesses, signed time, and the Merkle batches that sign many of them
 * with one signature.
 *
 * <p>A lease service describes every grant, renewal and upgrade in a {@link org.leasehold.audit.Witness} and every
 * time request in a {@link org.leasehold.audit.SignedTime}; its {@link org.leasehold.audit.AuditSigner} hands them to
 * a {@link org.leasehold.audit.BatchSigner}, which signs the Merkle root of each batch once and gives every statement
 * its {@link org.leasehold.audit.BatchProof} (the root's signature and the statement's inclusion path). The bytes a
 * frame stores are a {@link org.leasehold.audit.FrameWitness}. An {@link org.leasehold.audit.AuditVerifier} checks
 * them against a {@link org.leasehold.audit.KeySet}, one signature per batch. Every encoding is versioned and
 * documented byte by byte in FORMAT.md ("Witness").
 *
 * <p>The signatures do not defend against a deliberate forger who holds a key; they make it implausible for a logic
 * bug to produce a valid-looking witness or a far-off timestamp.
 */
package org.leasehold.audit;
