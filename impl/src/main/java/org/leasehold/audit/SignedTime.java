package org.leasehold.audit;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A lease service's answer to a time request, Roughtime-style: its clock read {@code midpoint}, give or take
 * {@code radius}, after it received {@code nonce}. The client's random nonce proves the answer was made after the
 * request was sent; the batch signature (as a Merkle leaf, {@link BatchProof}) proves who made it.
 *
 * @param keyId     the key that signs this statement's batch
 * @param serviceId the lease service instance
 * @param nonce     the client's nonce, 0 to {@value #MAX_NONCE} bytes
 * @param midpoint  the service's time, microseconds since the epoch
 * @param radius    the bound on the service's clock error, microseconds
 */
public record SignedTime(KeyId keyId, String serviceId, byte[] nonce, long midpoint, long radius) {

    /** The first four bytes of an encoded signed time, {@code LHST}. */
    public static final int MAGIC = 0x4C485354;
    /** The encoding version. */
    public static final int VERSION = 1;
    /** The longest nonce in bytes. */
    public static final int MAX_NONCE = 64;

    public SignedTime {
        Objects.requireNonNull(keyId, "SignedTime.keyId");
        Objects.requireNonNull(serviceId, "SignedTime.serviceId");
        nonce = nonce == null ? new byte[0] : nonce.clone();
        if (nonce.length > MAX_NONCE) {
            throw new IllegalArgumentException("a time request's nonce is at most " + MAX_NONCE + " bytes, got "
                    + nonce.length);
        }
        if (radius < 0) {
            throw new IllegalArgumentException("a signed time's radius is not negative, got " + radius);
        }
    }

    /** The nonce (a copy). */
    @Override
    public byte[] nonce() {
        return nonce.clone();
    }

    /** The earliest instant the service's true time may have been (midpoint minus radius). */
    public long earliest() {
        return midpoint - radius;
    }

    /** The latest instant (midpoint plus radius). */
    public long latest() {
        return midpoint + radius;
    }

    /** The canonical bytes (FORMAT.md, "Signed time"). */
    public byte[] encode() {
        byte[] service = Codec.utf8(serviceId);
        // 37 bytes of fixed fields and two of a 2-byte length each: the buffer is filled exactly.
        return new Codec.Out(37 + 2 + service.length + 2 + nonce.length).i32(MAGIC).u8(VERSION)
                .i64(keyId.high()).i64(keyId.low()).sized16(service, Witness.MAX_TEXT, "the service id")
                .sized16(nonce, MAX_NONCE, "the nonce").i64(midpoint).i64(radius).toByteArray();
    }

    /** Decodes {@link #encode()}'s bytes; refuses anything else. */
    public static SignedTime decode(byte[] bytes) throws AuditFormatException {
        Codec.In in = new Codec.In(bytes, "signed time");
        in.magic(MAGIC, "LHST");
        in.version(VERSION);
        KeyId key = new KeyId(in.i64("key id"), in.i64("key id"));
        String service = in.text("service id", Witness.MAX_TEXT);
        byte[] nonce = in.sized16("nonce", MAX_NONCE);
        long midpoint = in.i64("midpoint");
        long radius = in.i64("radius");
        in.end();
        if (radius < 0) {
            throw new AuditFormatException("a signed time's radius is negative (" + radius + ")");
        }
        return new SignedTime(key, service, nonce, midpoint, radius);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SignedTime s && s.keyId.equals(keyId) && s.serviceId.equals(serviceId)
                && Arrays.equals(s.nonce, nonce) && s.midpoint == midpoint && s.radius == radius;
    }

    @Override
    public int hashCode() {
        return Objects.hash(keyId, serviceId, midpoint, radius) * 31 + Arrays.hashCode(nonce);
    }

    @Override
    public String toString() {
        return "SignedTime[" + midpoint + " +- " + radius + " us by " + serviceId + " key " + keyId + ", nonce "
                + HexFormat.of().formatHex(nonce) + "]";
    }
}
