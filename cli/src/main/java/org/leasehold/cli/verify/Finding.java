package org.leasehold.cli.verify;

import java.time.Instant;

import org.leasehold.time.Micros;

/**
 * One thing {@link LogVerifier} found wrong in a log, with where it is: the log, the bucket, the file (relative to
 * the log's directory) and the byte offset in it. A location field that does not apply is null (or -1 for the
 * offset): a finding about a whole grant names the message that shows it.
 *
 * @param kind    what is wrong
 * @param log     the log
 * @param bucket  the bucket's start in microseconds since the epoch, or {@link Long#MIN_VALUE} if none applies
 * @param file    the data file or segment, relative to the log's directory, or null
 * @param offset  the frame's offset in the file, or -1
 * @param name    the lease name concerned, or null
 * @param message what happened, to what, and what it means
 */
public record Finding(Kind kind, String log, long bucket, String file, long offset, String name, String message) {

    /** How bad a finding is. */
    public enum Severity {
        /** The log does not verify. */
        ERROR,
        /** The log verifies as far as it can be checked; something could not be proven. */
        WARNING
    }

    /** What is wrong. The javadoc of each says which check found it. */
    public enum Kind {
        /** The log descriptor is missing or does not read as FORMAT.md describes it. */
        BAD_DESCRIPTOR(Severity.ERROR),
        /** A lock file does not read as FORMAT.md describes it, or names another log or bucket (invariant 6). */
        BAD_LOCK(Severity.ERROR),
        /** A data file a lock file lists is missing or shorter than listed (invariant 4). */
        MISSING_DATA(Severity.ERROR),
        /** A frame fails its magic, length, checksum, structure, bucket or order rules (invariants 4 and 6). */
        CORRUPT_FRAME(Severity.ERROR),
        /** A frame of a format version this verifier does not know. */
        UNSUPPORTED_VERSION(Severity.ERROR),
        /** A sealed bucket's file ends in a torn frame inside the lock file's size: it was never acknowledged. */
        TORN_TAIL(Severity.WARNING),
        /** A segment file fails its checks, or holds other frames than its buckets (invariant 6). */
        BAD_SEGMENT(Severity.ERROR),
        /** A lease in a frame carries no witness: written before witnesses, or by a service that does not sign. */
        MISSING_WITNESS(Severity.WARNING),
        /** A lease carries no witness and witnesses are required ({@code --require-witnesses}). */
        MISSING_WITNESS_REQUIRED(Severity.ERROR),
        /** A witness field does not decode (FORMAT.md, "Frame witness"). */
        MALFORMED_WITNESS(Severity.ERROR),
        /** A witness or signed time is signed by a key that is not published. */
        UNKNOWN_KEY(Severity.ERROR),
        /** A statement names another key than the proof that signs it. */
        KEY_MISMATCH(Severity.ERROR),
        /** A statement, its Merkle path or its batch signature was changed. */
        BAD_SIGNATURE(Severity.ERROR),
        /** A Merkle path cannot lead from its leaf to the root of a batch of its stated size. */
        BAD_PATH(Severity.ERROR),
        /** A statement was signed outside its key's validity. */
        KEY_NOT_VALID(Severity.ERROR),
        /** A statement was signed at or after its key's revocation. */
        KEY_REVOKED(Severity.ERROR),
        /** A statement names another lease service than its key was published for. */
        SERVICE_MISMATCH(Severity.ERROR),
        /** A lease's witness is for another name or generation than the lease it is stored with. */
        WITNESS_OF_OTHER_LEASE(Severity.ERROR),
        /** Two witnesses of one grant (correlation id) disagree on its name, generation or holder. */
        CONFLICTING_WITNESSES(Severity.ERROR),
        /** A message was written under a tentative lease. */
        TENTATIVE_LEASE(Severity.ERROR),
        /** A message's timestamp is not in (floor, deadline) of a lease it carries, or before writableFrom (inv. 3). */
        OUTSIDE_LEASE(Severity.ERROR),
        /** A message's timestamp is further than the bound from the signed time it carries. */
        SIGNED_TIME_BOUND(Severity.ERROR),
        /** Two grants of one name share a generation, or generations do not follow grant times (invariant 2). */
        GENERATION_ORDER(Severity.ERROR),
        /** A grant's predecessor correlation id is not the previous grant's. */
        BROKEN_CHAIN(Severity.ERROR),
        /** Messages or grants of two exclusive holders of one name overlap in time (invariant 1). */
        LEASES_OVERLAP(Severity.ERROR),
        /** A holder wrote above the watermark its lease was released with (the stale-holder write). */
        STALE_HOLDER_WRITE(Severity.ERROR),
        /** A holder whose lease expired has a message in a bucket not sealed when its successor wrote (inv. 5). */
        UNSEALED_AFTER_EXPIRY(Severity.ERROR),
        /** In read order, a name's messages go back to an earlier generation (invariant 6). */
        LEASE_ORDER(Severity.ERROR);

        private final Severity severity;

        Kind(Severity severity) {
            this.severity = severity;
        }

        public Severity severity() {
            return severity;
        }
    }

    public Severity severity() {
        return kind.severity();
    }

    /** Where it is, as text: log, bucket (as an instant), file and offset, those that apply. */
    public String location() {
        StringBuilder b = new StringBuilder("log '").append(log).append('\'');
        if (bucket != Long.MIN_VALUE) {
            b.append(", bucket ").append(bucketInstant());
        }
        if (file != null) {
            b.append(", file ").append(file);
        }
        if (offset >= 0) {
            b.append(", offset ").append(offset);
        }
        return b.toString();
    }

    /** The bucket's start as an instant, or null. */
    public Instant bucketInstant() {
        return bucket == Long.MIN_VALUE ? null : Micros.toInstant(bucket);
    }

    @Override
    public String toString() {
        return severity() + " " + kind + " " + location() + ": " + message;
    }
}
