package org.leasehold.audit;

import java.util.Arrays;
import java.util.Objects;

/**
 * What a frame stores in a lease's witness field: the grant's {@link Witness} with its {@link BatchProof}, and
 * optionally a fresher {@link SignedTime} with its own proof that the writer obtained near the write. The store
 * compares a frame's timestamp with {@link #latestSignedTime()}; a verifier checks both proofs.
 *
 * @param witnessBytes the witness's canonical bytes (the Merkle leaf its proof covers)
 * @param witness      the decoded witness
 * @param proof        the witness's proof
 * @param time         a signed time, or null
 * @param timeBytes    its canonical bytes, or null
 * @param timeProof    its proof, or null
 */
public record FrameWitness(byte[] witnessBytes, Witness witness, BatchProof proof, byte[] timeBytes, SignedTime time,
        BatchProof timeProof) {

    /** The first four bytes of a frame's witness field, {@code LHFW}. */
    public static final int MAGIC = 0x4C484657;
    /** The encoding version. */
    public static final int VERSION = 1;
    /** The most bytes a frame's witness field holds (FORMAT.md, frame). */
    public static final int MAX_BYTES = 65_536;

    public FrameWitness {
        Objects.requireNonNull(witnessBytes, "FrameWitness.witnessBytes");
        Objects.requireNonNull(witness, "FrameWitness.witness");
        Objects.requireNonNull(proof, "FrameWitness.proof");
        if ((time == null) != (timeProof == null) || (time == null) != (timeBytes == null)) {
            throw new IllegalArgumentException("a frame witness has a signed time with its bytes and its proof, or "
                    + "none of them");
        }
    }

    /** A frame witness of {@code witness} and its proof, without a separate signed time. */
    public static FrameWitness of(Witness witness, BatchProof proof) {
        return new FrameWitness(witness.encode(), witness, proof, null, null, null);
    }

    /** This frame witness with {@code time} (and its proof) attached, replacing any earlier one. */
    public FrameWitness withTime(SignedTime time, BatchProof timeProof) {
        return new FrameWitness(witnessBytes, witness, proof, time.encode(), time, timeProof);
    }

    /**
     * The most recent signed time this carries: the attached signed time's midpoint, or the witness's own signed time
     * if none is attached or it is older.
     */
    public long latestSignedTime() {
        return time == null ? witness.signedTime() : Math.max(time.midpoint(), witness.signedTime());
    }

    /** The bytes of a frame's witness field (FORMAT.md, "Frame witness"). */
    public byte[] encode() {
        byte[] p = proof.encode();
        byte[] tp = time == null ? null : timeProof.encode();
        // The header (6 bytes) and each field with its 2-byte length: the buffer is filled exactly.
        Codec.Out o = new Codec.Out(6 + 2 + witnessBytes.length + 2 + p.length
                + (time == null ? 0 : 2 + timeBytes.length + 2 + tp.length));
        o.i32(MAGIC).u8(VERSION).u8(time == null ? 0 : 1);
        o.sized16(witnessBytes, 0xFFFF, "the witness").sized16(p, 0xFFFF, "the witness's proof");
        if (time != null) {
            o.sized16(timeBytes, 0xFFFF, "the signed time").sized16(tp, 0xFFFF, "the signed time's proof");
        }
        byte[] out = o.toByteArray();
        if (out.length > MAX_BYTES) {
            throw new IllegalArgumentException("a frame witness of " + out.length + " bytes does not fit a frame's "
                    + "witness field (at most " + MAX_BYTES + ")");
        }
        return out;
    }

    /** Decodes a frame's witness field; refuses anything but {@link #encode()}'s bytes, naming the field. */
    public static FrameWitness decode(byte[] bytes) throws AuditFormatException {
        Codec.In in = new Codec.In(bytes, "frame witness");
        int flags = header(in);
        byte[] w = in.sized16("witness", 0xFFFF);
        byte[] p = in.sized16("witness proof", 0xFFFF);
        byte[] t = null;
        byte[] tp = null;
        if (flags == 1) {
            t = in.sized16("signed time", 0xFFFF);
            tp = in.sized16("signed time proof", 0xFFFF);
        }
        in.end();
        return new FrameWitness(w, Witness.decode(w), BatchProof.decode(p), t, t == null ? null : SignedTime.decode(t),
                tp == null ? null : BatchProof.decode(tp));
    }

    /**
     * What a bag store checks of a frame witness before it appends (the lease it names and how recent its signed time
     * is), read without decoding the rest: the envelope's fields must hold exactly the bytes given, and the witness
     * and the signed time must start as {@link Witness} and {@link SignedTime} encodings do, up to the fields read.
     * Nothing is verified (proofs and signatures are not even parsed): that is the verifier's work, as for any frame.
     *
     * @param name             the witnessed lease's name
     * @param generation       its generation
     * @param latestSignedTime as {@link #latestSignedTime()}
     */
    public record Summary(String name, long generation, long latestSignedTime) {
    }

    /** Reads a frame witness's magic and version and returns its flags (bit 0: a signed time follows). */
    private static int header(Codec.In in) throws AuditFormatException {
        in.magic(MAGIC, "LHFW");
        in.version(VERSION);
        int flags = in.u8("flags");
        if ((flags & ~1) != 0) {
            throw new AuditFormatException("a frame witness has unknown flags 0x" + Integer.toHexString(flags)
                    + " (version 1 knows only bit 0, a signed time)");
        }
        return flags;
    }

    /** Reads {@link Summary} from {@link #encode()}'s bytes. */
    public static Summary summarize(byte[] bytes) throws AuditFormatException {
        Codec.In in = new Codec.In(bytes, "frame witness");
        int flags = header(in);
        int w = in.skipSized16("witness", 0xFFFF);
        int wEnd = in.position();
        in.skipSized16("witness proof", 0xFFFF);
        int t = -1;
        int tEnd = -1;
        if (flags == 1) {
            t = in.skipSized16("signed time", 0xFFFF);
            tEnd = in.position();
            in.skipSized16("signed time proof", 0xFFFF);
        }
        in.end();
        Codec.In wi = new Codec.In(bytes, w, wEnd - w, "witness");
        wi.magic(Witness.MAGIC, "LHWT");
        wi.version(Witness.VERSION);
        wi.skip(1 + 16, "event and key id");
        wi.skipSized16("service id", Witness.MAX_TEXT);
        String name = wi.text("name", Witness.MAX_NAME);
        long generation = wi.i64("generation");
        wi.skip(1 + 4 + 1 + 8 * 4, "mode, permits, kind, floor, writable from, deadline, granted at");
        long latest = wi.i64("signed time");
        if (t >= 0) {
            Codec.In ti = new Codec.In(bytes, t, tEnd - t, "signed time");
            ti.magic(SignedTime.MAGIC, "LHST");
            ti.version(SignedTime.VERSION);
            ti.skip(16, "key id");
            ti.skipSized16("service id", Witness.MAX_TEXT);
            ti.skipSized16("nonce", SignedTime.MAX_NONCE);
            latest = Math.max(latest, ti.i64("midpoint"));
        }
        return new Summary(name, generation, latest);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof FrameWitness f && Arrays.equals(f.witnessBytes, witnessBytes) && f.proof.equals(proof)
                && Arrays.equals(f.timeBytes, timeBytes) && Objects.equals(f.timeProof, timeProof);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(witnessBytes);
    }

    @Override
    public String toString() {
        return "FrameWitness[" + witness.name() + " gen " + witness.generation() + ", " + witness.event() + ", "
                + proof + (time != null ? ", " + time : "") + "]";
    }
}
