package org.leasehold.engine;

/**
 * The offset of a name's first generation: SipHash-2-4 of the name's UTF-16 code units under a key drawn at random
 * at each start, reduced to [0, {@link EmbeddedLeaseService#OFFSET_RANGE}). A keyed hash, not a counter or a plain
 * hash, so that the generations of the names a caller can see say nothing of the generations of names it cannot.
 */
final class GenerationOffsets {
    private final long k0;
    private final long k1;

    GenerationOffsets(long k0, long k1) {
        this.k0 = k0;
        this.k1 = k1;
    }

    long offset(String name) {
        return hash(name) & (EmbeddedLeaseService.OFFSET_RANGE - 1);
    }

    /** SipHash-2-4 of the name's chars, four to a 64-bit word (little-endian), the length in bytes in the last. */
    long hash(String name) {
        long[] v = {0x736f6d6570736575L ^ k0, 0x646f72616e646f6dL ^ k1, 0x6c7967656e657261L ^ k0,
            0x7465646279746573L ^ k1};
        int n = name.length();
        int i = 0;
        for (; i + 4 <= n; i += 4) {
            compress(v, name.charAt(i) | (long) name.charAt(i + 1) << 16 | (long) name.charAt(i + 2) << 32
                    | (long) name.charAt(i + 3) << 48);
        }
        long last = (long) (n * 2 & 0xff) << 56;
        for (int j = 0; i < n; i++, j++) {
            last |= (long) name.charAt(i) << (16 * j);
        }
        compress(v, last);
        v[2] ^= 0xff;
        for (int r = 0; r < 4; r++) {
            round(v);
        }
        return v[0] ^ v[1] ^ v[2] ^ v[3];
    }

    private static void compress(long[] v, long m) {
        v[3] ^= m;
        round(v);
        round(v);
        v[0] ^= m;
    }

    private static void round(long[] v) {
        v[0] += v[1];
        v[1] = Long.rotateLeft(v[1], 13) ^ v[0];
        v[0] = Long.rotateLeft(v[0], 32);
        v[2] += v[3];
        v[3] = Long.rotateLeft(v[3], 16) ^ v[2];
        v[0] += v[3];
        v[3] = Long.rotateLeft(v[3], 21) ^ v[0];
        v[2] += v[1];
        v[1] = Long.rotateLeft(v[1], 17) ^ v[2];
        v[2] = Long.rotateLeft(v[2], 32);
    }
}
