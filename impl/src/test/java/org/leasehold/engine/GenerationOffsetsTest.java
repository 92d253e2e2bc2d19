package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The keyed hash behind first generations is SipHash-2-4: the reference vectors (key 00 01 .. 0f, message 00 01 ..
 * n-1) for every even length, the message's bytes read as the UTF-16 code units of a name (low byte first).
 */
class GenerationOffsetsTest {
    private static final GenerationOffsets REFERENCE_KEY = new GenerationOffsets(0x0706050403020100L,
            0x0f0e0d0c0b0a0908L);

    /** The name whose UTF-16 code units, low byte first, are the bytes 00 01 .. {@code bytes - 1}. */
    private static String counting(int bytes) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < bytes; i += 2) {
            sb.append((char) (i | (i + 1) << 8));
        }
        return sb.toString();
    }

    @Test
    void theHashIsSipHash24OnTheReferenceVectors() {
        assertEquals(0x726fdb47dd0e0e31L, REFERENCE_KEY.hash(counting(0)));
        assertEquals(0x0d6c8009d9a94f5aL, REFERENCE_KEY.hash(counting(2)));
        assertEquals(0xcbc9466e58fee3ceL, REFERENCE_KEY.hash(counting(6)));
        assertEquals(0x93f5f5799a932462L, REFERENCE_KEY.hash(counting(8)), "one full word, an empty last one");
        assertEquals(0xf723ca908e7af2eeL, REFERENCE_KEY.hash(counting(14)));
        assertEquals(0x3f2acc7f57c29bdbL, REFERENCE_KEY.hash(counting(16)));
        assertEquals(0x93536795e3a33e88L, REFERENCE_KEY.hash(counting(22)));
        assertEquals(0xe51b38608ef25f57L, REFERENCE_KEY.hash(counting(62)));
    }

    @Test
    void namesBeyondLatinAreHashedByTheirCodeUnitsAndReducedToTheOffsetRange() {
        assertEquals(0x11bb6f387ed056b3L, REFERENCE_KEY.hash("orders/2026"));
        assertEquals(0x44c2beaf6d2fd970L, REFERENCE_KEY.hash("Grüße/日本"));
        assertEquals(0x44c2beaf6d2fd970L & (EmbeddedLeaseService.OFFSET_RANGE - 1),
                REFERENCE_KEY.offset("Grüße/日本"));
        assertEquals(REFERENCE_KEY.hash("x") & (EmbeddedLeaseService.OFFSET_RANGE - 1), REFERENCE_KEY.offset("x"));
    }
}
