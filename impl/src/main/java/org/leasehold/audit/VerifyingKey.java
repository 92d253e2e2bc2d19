package org.leasehold.audit;

import java.util.Arrays;
import java.util.Base64;

import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters;
import org.bouncycastle.crypto.signers.Ed25519Signer;

/** An Ed25519 public key and its {@link KeyId}; checks signatures. Immutable and thread-safe. */
public final class VerifyingKey {
    /** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410), followed by the 32 raw key bytes. */
    private static final byte[] SPKI_PREFIX = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

    private final byte[] raw;
    private final KeyId id;
    private final Ed25519PublicKeyParameters params;

    private VerifyingKey(byte[] raw) {
        this.raw = raw.clone();
        this.id = KeyId.of(raw);
        this.params = new Ed25519PublicKeyParameters(raw, 0);
    }

    /** The key of the 32 raw bytes {@code raw}. */
    public static VerifyingKey of(byte[] raw) {
        if (raw == null || raw.length != 32) {
            throw new IllegalArgumentException("an Ed25519 public key is 32 bytes, got "
                    + (raw == null ? "none" : raw.length));
        }
        return new VerifyingKey(raw);
    }

    /**
     * Reads a PEM "PUBLIC KEY" block (an RFC 8410 SubjectPublicKeyInfo, as {@code openssl pkey -pubout} writes it).
     */
    public static VerifyingKey fromPem(String pem) throws AuditFormatException {
        byte[] der = Pem.decode(pem, "PUBLIC KEY");
        if (der.length != SPKI_PREFIX.length + 32
                || !Arrays.equals(Arrays.copyOf(der, SPKI_PREFIX.length), SPKI_PREFIX)) {
            throw new AuditFormatException("the PEM block is not an Ed25519 public key (RFC 8410 SubjectPublicKeyInfo "
                    + "of 44 bytes); write it with 'openssl pkey -pubout' from an Ed25519 key");
        }
        return of(Arrays.copyOfRange(der, SPKI_PREFIX.length, der.length));
    }

    /** The key as a PEM "PUBLIC KEY" block. */
    public String toPem() {
        byte[] der = Arrays.copyOf(SPKI_PREFIX, SPKI_PREFIX.length + 32);
        System.arraycopy(raw, 0, der, SPKI_PREFIX.length, 32);
        return Pem.encode(der, "PUBLIC KEY");
    }

    public KeyId id() {
        return id;
    }

    /** The 32 raw bytes (a copy). */
    public byte[] raw() {
        return raw.clone();
    }

    /** The raw bytes as unpadded base64url. */
    public String base64() {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
    }

    /** True if {@code signature} is this key's Ed25519 signature of {@code message}. */
    public boolean verifies(byte[] message, byte[] signature) {
        if (signature == null || signature.length != 64) {
            return false;
        }
        Ed25519Signer v = new Ed25519Signer();
        v.init(false, params);
        v.update(message, 0, message.length);
        return v.verifySignature(signature);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof VerifyingKey k && Arrays.equals(k.raw, raw);
    }

    @Override
    public int hashCode() {
        return id.hashCode();
    }

    @Override
    public String toString() {
        return "Ed25519 key " + id;
    }
}
