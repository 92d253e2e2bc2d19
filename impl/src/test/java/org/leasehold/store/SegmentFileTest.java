package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.store.format.SegmentFile.Bucket;
import org.leasehold.store.format.SegmentFile.Source;
import org.leasehold.store.format.SegmentFile.State;
import org.leasehold.store.format.SegmentFile.Trailer;

/**
 * The segment file's header, trailer, bucket table, index and names, each rule at its edge, with metadata encoded
 * here and then bent by hand so that the rule under test is the one that refuses.
 */
class SegmentFileTest {
    private static final long INDEX = 1_000;

    private static byte[] trailerBytes(long from, long to, long width, long index, long table, int version) {
        return ByteBuffer.allocate(SegmentFile.TRAILER).putLong(from).putLong(to).putLong(width).putLong(index)
                .putLong(table).putLong(0).putShort((short) version).putShort((short) 0).putInt(0)
                .putInt(SegmentFile.END_MAGIC).array();
    }

    private static String trailerRefused(long from, long to, long width, long index, long table, long fileSize) {
        return assertThrows(FormatException.class, () -> SegmentFile.trailer(trailerBytes(from, to, width, index,
                table, 1), fileSize)).getMessage();
    }

    @Test
    void theTrailerHoldsAConsistentLayoutAndEachBoundIsInclusiveWhereItShouldBe() throws Exception {
        long size = 2_000;
        Trailer t = SegmentFile.trailer(trailerBytes(5, 6, 1, SegmentFile.HEADER, SegmentFile.HEADER, 1), size);
        assertEquals(new Trailer(5, 6, 1, SegmentFile.HEADER, SegmentFile.HEADER, 0), t, "every lower edge");
        SegmentFile.trailer(trailerBytes(5, 6, 1, 100, size - SegmentFile.TRAILER, 1), size);
        long huge = SegmentFile.HEADER + (long) SegmentFile.MAX_META;
        SegmentFile.trailer(trailerBytes(5, 6, 1, SegmentFile.HEADER, SegmentFile.HEADER, 1), huge);

        assertTrue(trailerRefused(5, 6, 1, SegmentFile.HEADER - 1, 100, size).startsWith(
                "the segment's trailer is inconsistent: Trailer[from=5, to=6, width"));
        trailerRefused(5, 6, 1, 100, 99, size);
        trailerRefused(5, 6, 1, 100, size - SegmentFile.TRAILER + 1, size);
        trailerRefused(5, 6, 1, SegmentFile.HEADER, SegmentFile.HEADER, huge + 1);
        trailerRefused(5, 5, 1, 100, 100, size);
        trailerRefused(5, 4, 1, 100, 100, size);
        trailerRefused(5, 6, 0, 100, 100, size);

        FormatException v2 = assertThrows(FormatException.class, () -> SegmentFile.trailer(trailerBytes(5, 6, 1, 100,
                100, 2), size));
        assertEquals(2, v2.version());
        assertEquals(size - SegmentFile.TRAILER, v2.offset());
        byte[] noMagic = trailerBytes(5, 6, 1, 100, 100, 1);
        noMagic[SegmentFile.TRAILER - 1] ^= 1;
        FormatException missing = assertThrows(FormatException.class, () -> SegmentFile.trailer(noMagic, size));
        assertEquals("the segment's trailer is missing (bad end magic)", missing.getMessage());
        assertEquals(size, missing.offset());
        assertThrows(FormatException.class, () -> SegmentFile.trailer(Arrays.copyOf(trailerBytes(5, 6, 1, 100, 100, 1),
                SegmentFile.TRAILER + 1), size));
    }

    @Test
    void theFileHeaderIsMagicThenVersion() throws Exception {
        SegmentFile.checkHeader(SegmentFile.header());
        assertEquals("not a segment file (bad magic)", assertThrows(FormatException.class,
                () -> SegmentFile.checkHeader(Arrays.copyOf(SegmentFile.header(), SegmentFile.HEADER - 1)))
                .getMessage());
        byte[] v3 = SegmentFile.header();
        v3[5] = 3;
        assertEquals(3, assertThrows(FormatException.class, () -> SegmentFile.checkHeader(v3)).version());
        byte[] other = SegmentFile.header();
        other[0] = 0;
        assertThrows(FormatException.class, () -> SegmentFile.checkHeader(other));
    }

    private static byte[] meta(List<Bucket> buckets) {
        Map<String, long[]> index = new LinkedHashMap<>();
        index.put("b", new long[] {40, 30, 100, 10});
        index.put("a", new long[] {8, 20, 40, 30});
        return SegmentFile.encodeMeta(0, 3_000_000, 1_000_000, INDEX, 3, index, buckets);
    }

    private static Trailer trailerOf(byte[] meta) throws FormatException {
        return SegmentFile.trailer(Arrays.copyOfRange(meta, meta.length - SegmentFile.TRAILER, meta.length),
                INDEX + meta.length);
    }

    @Test
    void aBucketOfTheTableLiesBetweenTheHeaderAndTheIndexBothEdgesIncluded() throws Exception {
        List<Source> files = List.of(new Source("w-a.0.data", 12), new Source("w-b.1.data", 0));
        List<Bucket> ok = List.of(new Bucket(0, State.INCLUDED, SegmentFile.HEADER, SegmentFile.HEADER, files),
                new Bucket(1_000_000, State.UNSEALED, SegmentFile.HEADER, INDEX, List.of()),
                new Bucket(2_000_000, State.UNREADABLE, INDEX, INDEX, List.of()));
        byte[] meta = meta(ok);
        SegmentFile.checkMeta(meta, INDEX);
        Trailer t = trailerOf(meta);
        assertEquals(new Trailer(0, 3_000_000, 1_000_000, INDEX, t.tableOffset(), 3), t);
        assertEquals(ok, SegmentFile.table(meta, t));
        SegmentFile.Table table = SegmentFile.tableIndex(meta, t);
        assertEquals(3, table.size());
        assertEquals(State.UNREADABLE, table.state()[2]);
        assertEquals(INDEX, table.end()[1]);
        assertEquals(files, SegmentFile.sources(meta, table, 0));
        assertEquals(List.of(), SegmentFile.sources(meta, table, 1));

        for (Bucket bad : List.of(new Bucket(0, State.INCLUDED, SegmentFile.HEADER - 1, 100, List.of()),
                new Bucket(0, State.INCLUDED, 100, 99, List.of()),
                new Bucket(0, State.INCLUDED, 100, INDEX + 1, List.of()))) {
            byte[] m = meta(List.of(bad));
            Trailer bt = trailerOf(m);
            assertEquals("bucket 0 of the segment's table is invalid", assertThrows(FormatException.class,
                    () -> SegmentFile.table(m, bt), bad.toString()).getMessage());
            assertEquals("bucket 0 of the segment's table is invalid", assertThrows(FormatException.class,
                    () -> SegmentFile.tableIndex(m, bt), bad.toString()).getMessage());
        }
        byte[] unknownState = meta(List.of(new Bucket(0, State.INCLUDED, 100, 200, List.of())));
        Trailer ut = trailerOf(unknownState);
        unknownState[(int) (ut.tableOffset() - INDEX) + 4 + 8] = 4;
        assertThrows(FormatException.class, () -> SegmentFile.table(unknownState, ut));
        assertThrows(FormatException.class, () -> SegmentFile.tableIndex(unknownState, ut));
    }

    @Test
    void aTableCountThatCannotFitIsRefusedBeforeAllocating() throws Exception {
        byte[] meta = meta(List.of(new Bucket(0, State.INCLUDED, 100, 200, List.of())));
        Trailer t = trailerOf(meta);
        int at = (int) (t.tableOffset() - INDEX);
        int fit = (meta.length - at - 4) / 29;
        ByteBuffer.wrap(meta).putInt(at, fit + 1);
        assertEquals("the segment's table lists " + (fit + 1) + " buckets, more than fit", assertThrows(
                FormatException.class, () -> SegmentFile.tableIndex(meta, t)).getMessage());
        ByteBuffer.wrap(meta).putInt(at, -1);
        assertThrows(FormatException.class, () -> SegmentFile.tableIndex(meta, t));
    }

    @Test
    void theIndexGivesTheEntriesNamingAnyOfTheNamesEachOnceInOffsetOrder() throws Exception {
        byte[] meta = meta(List.of());
        assertArrayEquals(new long[] {8, 20, 40, 30}, SegmentFile.entriesNaming(meta, Set.of("a")));
        assertArrayEquals(new long[] {40, 30, 100, 10}, SegmentFile.entriesNaming(meta, Set.of("b", "zz")));
        assertArrayEquals(new long[] {8, 20, 40, 30, 100, 10}, SegmentFile.entriesNaming(meta, Set.of("a", "b")));
        assertArrayEquals(new long[0], SegmentFile.entriesNaming(meta, Set.of("c", "")));
        // The index lists its names in the order of their bytes ("b" was given first), as FORMAT.md says.
        assertEquals(1, Frames.getUShort(meta, 4));
        assertEquals((byte) 'a', meta[6]);
        // Lists that interleave are merged by offset, and an entry naming both names is given once.
        Map<String, long[]> interleaved = new LinkedHashMap<>();
        interleaved.put("x", new long[] {8, 20, 100, 10});
        interleaved.put("y", new long[] {40, 30, 100, 10, 200, 5});
        byte[] other = SegmentFile.encodeMeta(0, 3_000_000, 1_000_000, INDEX, 4, interleaved, List.of());
        assertArrayEquals(new long[] {8, 20, 40, 30, 100, 10, 200, 5},
                SegmentFile.entriesNaming(other, Set.of("x", "y")));
        // The first name's entry count, made negative.
        ByteBuffer.wrap(meta).putInt(4 + 2 + 1, -1);
        assertEquals("index entry 0 runs past the index", assertThrows(FormatException.class,
                () -> SegmentFile.entriesNaming(meta, Set.of("a"))).getMessage());
    }

    @Test
    void publishedNamesAreTwoNumbersOfAtMostEighteenDigitsInOrder() {
        assertArrayEquals(new long[] {0, 1}, SegmentFile.parseName("0-1.segment"));
        assertEquals("5-9.segment", SegmentFile.name(5, 9));
        assertArrayEquals(new long[] {1, 999_999_999_999_999_999L},
                SegmentFile.parseName("1-999999999999999999.segment"));
        assertArrayEquals(new long[] {999_999_999_999_999_998L, 999_999_999_999_999_999L},
                SegmentFile.parseName("999999999999999998-999999999999999999.segment"));
        for (String bad : List.of("1-1.segment", "2-1.segment", "-1.segment", "1-.segment", "1-2.segmen",
                "1a-2.segment", "1-2b.segment", "1-1000000000000000000.segment", "1000000000000000000-1.segment",
                "1-2-3.segment")) {
            assertNull(SegmentFile.parseName(bad), bad);
        }
    }
}
