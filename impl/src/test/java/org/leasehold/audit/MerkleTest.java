package org.leasehold.audit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.security.MessageDigest;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

/** The batch tree against RFC 9162's recursive definition, written here independently. */
class MerkleTest {

    private static byte[] sha(byte prefix, byte[]... parts) throws Exception {
        MessageDigest d = MessageDigest.getInstance("SHA-256");
        d.update(prefix);
        for (byte[] p : parts) {
            d.update(p);
        }
        return d.digest();
    }

    /** MTH(D[n]) of RFC 9162 section 2.1.1. */
    private static byte[] mth(byte[][] leaves, int from, int to) throws Exception {
        int n = to - from;
        if (n == 1) {
            return sha((byte) 0, leaves[from]);
        }
        int k = Integer.highestOneBit(n - 1);
        return sha((byte) 1, mth(leaves, from, from + k), mth(leaves, from + k, to));
    }

    @Test
    void everyLeafOfEveryTreeUpTo70ReachesTheRfcRoot() throws Exception {
        for (int n = 1; n <= 70; n++) {
            byte[][] leaves = new byte[n][];
            byte[][] hashes = new byte[n][];
            for (int i = 0; i < n; i++) {
                leaves[i] = ("leaf " + i + " of " + n).getBytes();
                hashes[i] = Merkle.leafHash(leaves[i]);
            }
            byte[] expected = mth(leaves, 0, n);
            List<byte[][]> levels = Merkle.levels(hashes);
            assertArrayEquals(expected, levels.get(levels.size() - 1)[0], "root of " + n);
            for (int i = 0; i < n; i++) {
                byte[][] path = Merkle.path(levels, i);
                assertArrayEquals(expected, Merkle.rootFromPath(hashes[i], i, n, path), i + " of " + n);
                if (n > 1) {
                    byte[] other = Merkle.rootFromPath(hashes[i], (i + 1) % n, n, path);
                    assertFalse(other != null && Arrays.equals(other, expected), "another index, " + i + " of " + n);
                    byte[][] flipped = path.clone();
                    flipped[0] = flipped[0].clone();
                    flipped[0][5] ^= 0x10;
                    assertFalse(Arrays.equals(expected, Merkle.rootFromPath(hashes[i], i, n, flipped)));
                    assertNull(Merkle.rootFromPath(hashes[i], i, n, Arrays.copyOf(path, path.length + 1)),
                            "a path one hash too long");
                }
            }
        }
    }
}
