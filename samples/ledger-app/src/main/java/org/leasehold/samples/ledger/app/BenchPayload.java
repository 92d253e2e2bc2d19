package org.leasehold.samples.ledger.app;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;

/** The benchmark's message: 256 bytes, a readable prefix naming the key, then random bytes (so nothing compresses). */
final class BenchPayload {

    /** Size of every benchmark message, in bytes. */
    static final int SIZE = 256;

    private BenchPayload() {
    }

    static byte[] of(int key) {
        byte[] payload = new byte[SIZE];
        ThreadLocalRandom.current().nextBytes(payload);
        byte[] prefix = ("bench " + key + " ").getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(prefix, 0, payload, 0, Math.min(prefix.length, SIZE));
        return payload;
    }
}
