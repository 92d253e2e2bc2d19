package org.leasehold.audit;

import java.security.SecureRandom;
import java.util.Arrays;

import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;
import org.bouncycastle.crypto.signers.Ed25519Signer;

/**
 * An Ed25519 private key and its public half. Signing is thread-safe (each call uses its own signer state).
 * {@link #toString()} never shows the private key.
 */
public final class SigningKey {
    /** The DER prefix of an Ed25519 PKCS #8 PrivateKeyInfo (RFC 8410, version 0), followed by the 32-byte seed. */
    private static final byte[] PKCS8_PREFIX = {0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65,
        0x70, 0x04, 0x22, 0x04, 0x20};

    private final Ed25519PrivateKeyParameters params;
    private final VerifyingKey publicKey;

    private SigningKey(byte[] seed) {
        this.params = new Ed25519PrivateKeyParameters(seed, 0);
        this.publicKey = VerifyingKey.of(params.generatePublicKey().getEncoded());
    }

    /** A new key from {@code random}. */
    public static SigningKey generate(SecureRandom random) {
        byte[] seed = new byte[32];
        random.nextBytes(seed);
        return new SigningKey(seed);
    }

    /**
     * Reads a PEM "PRIVATE KEY" block holding an Ed25519 key (RFC 8410 PKCS #8, as {@code openssl genpkey -algorithm
     * ed25519} writes it).
     */
    public static SigningKey fromPem(String pem) throws AuditFormatException {
        byte[] der = Pem.decode(pem, "PRIVATE KEY");
        // Version 0 is the prefix and the seed; version 1 may add the public key after it, which is derived anyway.
        byte[] v0 = PKCS8_PREFIX;
        boolean ok = der.length >= v0.length + 32 && der[0] == 0x30 && der[4] <= 1
                && Arrays.equals(Arrays.copyOfRange(der, 5, 16), Arrays.copyOfRange(v0, 5, 16));
        if (!ok) {
            throw new AuditFormatException("the PEM block is not an Ed25519 private key (RFC 8410 PKCS #8); create "
                    + "one with 'openssl genpkey -algorithm ed25519'");
        }
        return new SigningKey(Arrays.copyOfRange(der, 16, 48));
    }

    /** The key as a PEM "PRIVATE KEY" block (PKCS #8 version 0). */
    public String toPem() {
        byte[] der = Arrays.copyOf(PKCS8_PREFIX, PKCS8_PREFIX.length + 32);
        System.arraycopy(params.getEncoded(), 0, der, PKCS8_PREFIX.length, 32);
        return Pem.encode(der, "PRIVATE KEY");
    }

    public VerifyingKey publicKey() {
        return publicKey;
    }

    public KeyId id() {
        return publicKey.id();
    }

    /** The 64-byte Ed25519 signature of {@code message}. */
    public byte[] sign(byte[] message) {
        Ed25519Signer s = new Ed25519Signer();
        s.init(true, params);
        s.update(message, 0, message.length);
        return s.generateSignature();
    }

    @Override
    public String toString() {
        return "Ed25519 signing key " + id();
    }
}
