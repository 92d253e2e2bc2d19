package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.Test;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.ViewSnapshotFile;

/** The view snapshot file as docs/FORMAT.md describes it, written here by hand from the page's table. */
class ViewSnapshotFileTest {

    @Test
    void theBytesAreThoseOfThePageAndEveryFlippedByteIsRefused() throws Exception {
        byte[] digest = MessageDigest.getInstance("SHA-256").digest("balances 1".getBytes(StandardCharsets.UTF_8));
        byte[] state = "some state".getBytes(StandardCharsets.US_ASCII);
        long boundary = 1_795_315_390_000_000L;
        ByteBuffer b = ByteBuffer.allocate(74 + 8 + state.length);
        b.putInt(0x4C485657).putShort((short) 1).putShort((short) 0).putLong(boundary).put(digest);
        b.putShort((short) 8).put("balances".getBytes(StandardCharsets.US_ASCII)).putLong(state.length).put(state);
        b.putLong(boundary);
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, b.position());
        b.putInt((int) crc.getValue()).putInt(0x4C485645);
        byte[] byHand = b.array();

        assertArrayEquals(digest, ViewSnapshotFile.versionDigest("balances 1"));
        byte[] encoded = ViewSnapshotFile.encode(new ViewSnapshotFile.Snapshot(boundary, digest, "balances", state));
        assertArrayEquals(byHand, encoded);
        ViewSnapshotFile.Snapshot s = ViewSnapshotFile.decode(encoded);
        assertEquals(boundary, s.boundary());
        assertEquals("balances", s.view());
        assertArrayEquals(state, s.state());

        for (int i = 0; i < encoded.length; i++) {
            byte[] bad = encoded.clone();
            bad[i] ^= 0x10;
            int at = i;
            assertThrows(FormatException.class, () -> ViewSnapshotFile.decode(bad), "byte " + at);
        }
        for (int n = 0; n < encoded.length; n++) {
            byte[] cut = java.util.Arrays.copyOf(encoded, n);
            assertThrows(FormatException.class, () -> ViewSnapshotFile.decode(cut), n + " bytes");
        }
        // A view whose state is empty (nothing folded yet, or a view that encodes nothing) is a valid snapshot.
        byte[] empty = ViewSnapshotFile.encode(new ViewSnapshotFile.Snapshot(boundary, digest, "balances", new byte[0]));
        assertEquals(0, ViewSnapshotFile.decode(empty).state().length);
    }

    @Test
    void namesCarryTheBoundaryAndTheVersionAndAreNotPreparedNames() {
        byte[] v1 = ViewSnapshotFile.versionDigest("v1");
        byte[] v2 = ViewSnapshotFile.versionDigest("v2");
        String name = ViewSnapshotFile.name(1_795_315_390_000_000L, v1);
        assertEquals("1795315390000000-" + HexFormat.of().formatHex(v1, 0, 8) + ".snapshot", name);
        assertEquals(1_795_315_390_000_000L, ViewSnapshotFile.parseName(name, v1));
        assertEquals(-1, ViewSnapshotFile.parseName(name, v2), "another version's snapshot");
        assertEquals(-1, ViewSnapshotFile.parseName(name + ".w-a.0123456789abcdef", v1), "a prepared file");
        assertEquals(-1, ViewSnapshotFile.parseName("x" + name, v1));
        assertEquals(-1, ViewSnapshotFile.parseName("+" + name, v1), "digits only, no sign Long.parseLong would take");
        String digest = HexFormat.of().formatHex(v1, 0, 8);
        assertEquals(-1, ViewSnapshotFile.parseName("-" + digest + ".snapshot", v1), "no boundary at all");
        assertEquals(Long.MAX_VALUE, ViewSnapshotFile.parseName(Long.MAX_VALUE + "-" + digest + ".snapshot", v1),
                "the longest boundary, 19 digits");
        assertEquals(-1, ViewSnapshotFile.parseName("9" + Long.MAX_VALUE + "-" + digest + ".snapshot", v1),
                "20 digits");
        assertFalse(NfsSafeFiles.isPreparedName(name));
        assertTrue(NfsSafeFiles.isPreparedName(name + ".w-a.0123456789abcdef"));
    }
}
