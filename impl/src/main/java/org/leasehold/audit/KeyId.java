package org.leasehold.audit;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The id of an Ed25519 public key: the first 16 bytes of the SHA-256 digest of its 32 raw bytes, so anyone holding
 * the key computes the same id. Written as 32 lower-case hexadecimal digits.
 */
public record KeyId(long high, long low) {

    /** The id of the raw 32-byte Ed25519 public key {@code publicKey}. */
    public static KeyId of(byte[] publicKey) {
        byte[] d = sha256(publicKey);
        return fromBytes(d, 0);
    }

    /** Reads 16 bytes at {@code offset}. */
    static KeyId fromBytes(byte[] b, int offset) {
        long hi = 0;
        long lo = 0;
        for (int i = 0; i < 8; i++) {
            hi = (hi << 8) | (b[offset + i] & 0xFF);
            lo = (lo << 8) | (b[offset + 8 + i] & 0xFF);
        }
        return new KeyId(hi, lo);
    }

    /** Parses the 32 hexadecimal digits {@link #toString()} produces. */
    public static KeyId parse(String text) {
        if (text == null || text.length() != 32) {
            throw new IllegalArgumentException("a key id is 32 hexadecimal digits, got: " + text);
        }
        HexFormat hex = HexFormat.of();
        try {
            return new KeyId(hex.fromHexDigitsToLong(text, 0, 16), hex.fromHexDigitsToLong(text, 16, 32));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("a key id is 32 hexadecimal digits, got: " + text, e);
        }
    }

    static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    @Override
    public String toString() {
        HexFormat hex = HexFormat.of();
        return hex.toHexDigits(high) + hex.toHexDigits(low);
    }
}
