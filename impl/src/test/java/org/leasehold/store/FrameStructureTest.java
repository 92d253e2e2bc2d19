package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.time.Micros;

/**
 * The data-file frame's structure rules, each at its edge: frames encoded here, then bent by hand and given a correct
 * length field and checksum, so that only the structure is wrong (a frame written this way, as a reader meets it).
 */
class FrameStructureTest {

    private static byte[] frame(List<LeaseStamp> leases, String... payloads) {
        List<byte[]> p = Arrays.stream(payloads).map(s -> s.getBytes(StandardCharsets.UTF_8)).toList();
        byte[][] names = Frames.names(leases);
        int size = (int) Frames.size(leases, names, p);
        return Frames.encode(Micros.of(T0), leases, names, p, size).array();
    }

    /** {@code a} with its length field and checksum made right for its length. */
    private static byte[] resealed(byte[] a) {
        ByteBuffer.wrap(a).putInt(8, a.length);
        ByteBuffer.wrap(a).putInt(12, Frames.checksum(a, 0, a.length));
        return a;
    }

    private static String refused(byte[] a) {
        assertEquals(a.length, assertDoesNotThrowHeader(a));
        assertTrue(Frames.checksumMatches(a, 0, a.length));
        return assertThrows(FormatException.class, () -> Frames.decode(a, 0, a.length, 77)).getMessage();
    }

    private static int assertDoesNotThrowHeader(byte[] a) {
        try {
            return Frames.checkHeader(a, 0, 0, 1 << 20);
        } catch (FormatException e) {
            throw new AssertionError(e);
        }
    }

    private static final int LEASES_AT = Frames.HEADER + 8;

    @Test
    void aFrameOfEmptyMessagesOnlyIsValidAndOneMessageCountTooManyIsNot() throws Exception {
        byte[] three = frame(List.of(), "", "", "");
        Frames.Body b = Frames.decode(three, 0, three.length, 0);
        assertEquals(3, b.count());
        assertEquals(0, b.payload(2).length);
        int m = LEASES_AT + 2;
        byte[] four = three.clone();
        ByteBuffer.wrap(four).putInt(m, 4);
        assertEquals("frame structure: message count 4 is invalid for the frame's length", refused(resealed(four)));
        byte[] none = three.clone();
        ByteBuffer.wrap(none).putInt(m, 0);
        assertEquals("frame structure: message count 0 is invalid for the frame's length", refused(resealed(none)));
    }

    @Test
    void aMessageEndingExactlyAtTheFrameEndIsValidAndOneByteLongerIsNot() throws Exception {
        byte[] a = frame(List.of(), "abc");
        assertEquals("abc", new String(Frames.decode(a, 0, a.length, 0).payload(0), StandardCharsets.UTF_8));
        int len = LEASES_AT + 2 + 4;
        ByteBuffer.wrap(a).putInt(len, 4);
        assertEquals("frame structure: message 0 length 4 runs past the frame", refused(resealed(a)));
        ByteBuffer.wrap(a).putInt(len, -1);
        assertEquals("frame structure: message 0 length -1 runs past the frame", refused(resealed(a)));
        ByteBuffer.wrap(a).putInt(len, 2);
        assertEquals("frame structure: 1 unexplained bytes at the end of the frame", refused(resealed(a)));
    }

    @Test
    void aSecondMessageWhoseLengthFieldIsCutRunsPastTheFrame() {
        byte[] a = frame(List.of(), "", "");
        // Claim two messages but keep the bytes of one message and two of the second's length field.
        byte[] cut = Arrays.copyOf(a, a.length - 2);
        ByteBuffer.wrap(cut).putInt(LEASES_AT + 2, 1);
        assertEquals("frame structure: 2 unexplained bytes at the end of the frame", refused(resealed(cut)));
        byte[] two = Arrays.copyOf(a, a.length - 2);
        assertEquals("frame structure: message count 2 is invalid for the frame's length", refused(resealed(two)));
        // Room for two length fields by the count's check, but the first message's bytes take the second's.
        byte[] six = frame(List.of(), "abcdef", "");
        byte[] sixCut = Arrays.copyOf(six, six.length - 2);
        assertEquals("frame structure: message 1 runs past the frame", refused(resealed(sixCut)));
    }

    @Test
    void leasesAreCheckedOneByOneAgainstTheFrameEnd() {
        LeaseStamp x = new LeaseStamp("x", 1, T0, T0.plusSeconds(1), T0, null, new byte[] {9, 9});
        byte[] one = frame(List.of(x), "p");
        int nameLen = LEASES_AT + 2;
        byte[] empty = one.clone();
        ByteBuffer.wrap(empty).putShort(nameLen, (short) 0);
        assertEquals("frame structure: lease 0 name length 0 is empty or runs past the frame", refused(
                resealed(empty)));
        int witnessLen = nameLen + 2 + 1 + 8;
        byte[] negative = one.clone();
        ByteBuffer.wrap(negative).putInt(witnessLen, -1);
        assertEquals("frame structure: lease 0 witness length -1 is invalid", refused(resealed(negative)));
        byte[] past = one.clone();
        int toEnd = past.length - (witnessLen + 4);
        ByteBuffer.wrap(past).putInt(witnessLen, toEnd + 1);
        assertEquals("frame structure: lease 0 witness length " + (toEnd + 1) + " is invalid", refused(
                resealed(past)));
        byte[] whole = one.clone();
        ByteBuffer.wrap(whole).putInt(witnessLen, toEnd);
        assertEquals("frame structure: message count runs past the frame", refused(resealed(whole)),
                "a witness up to the frame's end is the lease's; what is missing is the messages");
        // A frame that ends right after its message count: the count is read, and no count fits.
        byte[] countLast = Arrays.copyOf(one, one.length - 4 - 1);
        assertEquals("frame structure: message count 1 is invalid for the frame's length", refused(
                resealed(countLast)));
        byte[] more = one.clone();
        ByteBuffer.wrap(more).putShort(LEASES_AT, (short) 2);
        assertTrue(refused(resealed(more)).startsWith("frame structure: lease 1 "));

        // The lease's fixed part (name, generation, witness length) ends exactly at the frame's end.
        byte[] bare = Arrays.copyOf(one, nameLen + 2 + 1 + 8 + 4);
        ByteBuffer.wrap(bare).putInt(witnessLen, 0);
        assertEquals("frame structure: message count runs past the frame", refused(resealed(bare)));
        byte[] shortOfIt = Arrays.copyOf(one, nameLen + 2 + 1 + 8 + 3);
        assertEquals("frame structure: lease 0 name length 1 is empty or runs past the frame",
                refused(resealed(shortOfIt)));
        // A second lease with one byte left for its name length, then with exactly its two.
        byte[] oneLeft = one.clone();
        ByteBuffer.wrap(oneLeft).putShort(LEASES_AT, (short) 2).putInt(witnessLen, toEnd - 1);
        assertEquals("frame structure: lease 1 runs past the frame", refused(resealed(oneLeft)));
        byte[] twoLeft = one.clone();
        ByteBuffer.wrap(twoLeft).putShort(LEASES_AT, (short) 2).putInt(witnessLen, toEnd - 2);
        assertTrue(refused(resealed(twoLeft)).startsWith("frame structure: lease 1 name length "));
    }

    @Test
    void aWitnessOfTheLargestSizeIsValidAndOneByteMoreIsNot() throws Exception {
        LeaseStamp big = new LeaseStamp("w", 1, T0, T0.plusSeconds(1), T0, null, new byte[Frames.MAX_WITNESS]);
        byte[] a = frame(List.of(big), "p");
        assertEquals(Frames.MAX_WITNESS, Frames.decode(a, 0, a.length, 0).leases().get(0).witness().length);
        byte[] over = new byte[a.length + 1];
        int witnessLen = LEASES_AT + 2 + 2 + 1 + 8;
        System.arraycopy(a, 0, over, 0, witnessLen);
        ByteBuffer.wrap(over).putInt(witnessLen, Frames.MAX_WITNESS + 1);
        System.arraycopy(a, witnessLen + 4, over, witnessLen + 4 + 1, a.length - witnessLen - 4);
        assertEquals("frame structure: lease 0 witness length " + (Frames.MAX_WITNESS + 1) + " is invalid",
                refused(resealed(over)));
    }

    @Test
    void theHeaderBoundsTheFrameLengthBothEdgesIncluded() throws Exception {
        byte[] min = frame(List.of(), "");
        assertEquals(Frames.MIN_FRAME, min.length);
        assertEquals(Frames.MIN_FRAME, Frames.checkHeader(min, 0, 0, Frames.MIN_FRAME), "the smallest and the limit");
        byte[] small = min.clone();
        ByteBuffer.wrap(small).putInt(8, Frames.MIN_FRAME - 1);
        assertEquals("frame length " + (Frames.MIN_FRAME - 1) + " outside [" + Frames.MIN_FRAME + ", 100]",
                assertThrows(FormatException.class, () -> Frames.checkHeader(small, 0, 5, 100)).getMessage());
        byte[] a = frame(List.of(), "12345");
        assertEquals(a.length, Frames.checkHeader(a, 0, 0, a.length));
        FormatException over = assertThrows(FormatException.class, () -> Frames.checkHeader(a, 0, 9, a.length - 1));
        assertEquals(9, over.offset());
        assertEquals(0, over.version());
        byte[] flags = a.clone();
        flags[7] = 2;
        assertEquals("unknown flags 0x2", assertThrows(FormatException.class,
                () -> Frames.checkHeader(flags, 0, 0, 1 << 20)).getMessage());
        byte[] magic = a.clone();
        magic[0] = 0;
        assertEquals("bad magic 0x00484246 (expected 0x4C484246)", assertThrows(FormatException.class,
                () -> Frames.checkHeader(magic, 0, 0, 1 << 20)).getMessage());
    }

    @Test
    void framesUnderTheSameLeasesShareOneListAndAFilterSeesThem() throws Exception {
        LeaseStamp x = new LeaseStamp("x", 1, T0, T0.plusSeconds(1), T0, null, new byte[] {1});
        LeaseStamp y = new LeaseStamp("y", 2, T0, T0.plusSeconds(1), T0, null, null);
        byte[] a = frame(List.of(x, y), "a");
        byte[] b = frame(List.of(x, y), "b");
        byte[] c = frame(List.of(x), "c");
        Frames.LeaseCache cache = new Frames.LeaseCache();
        Frames.View v = new Frames.View();
        assertTrue(Frames.decode(a, 0, a.length, 0, null, cache, v));
        var first = v.leases();
        assertEquals(2, first.size());
        assertEquals("y", first.get(1).name());
        assertTrue(Frames.decode(b, 0, b.length, 0, null, cache, v));
        assertSame(first, v.leases());
        assertEquals("b", new String(v.array(), v.offset(0), v.length(0), StandardCharsets.UTF_8));
        assertTrue(Frames.decode(c, 0, c.length, 0, null, cache, v));
        assertNotSame(first, v.leases());
        assertEquals(1, v.leases().size());
        assertFalse(Frames.decode(a, 0, a.length, 0, l -> l.size() == 1, cache, v), "filtered out");
        assertEquals("c", new String(v.array(), v.offset(0), v.length(0), StandardCharsets.UTF_8),
                "a filtered frame leaves the view as it was");
    }
}
