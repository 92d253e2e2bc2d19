package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.flip;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;

/**
 * Segments one at a time: a read by name opens only the index's entries; a damaged entry or a damaged index sends
 * the read back to the buckets with the same result; a compaction stopped before or after its link leaves a prepared
 * file that readers ignore and the next run removes; the settings are checked.
 */
class SegmentsTest {
    private static final String LOG = "log";

    /** Five seconds of appends under acct/0..3, one under "rare", every bucket sealed; the clock an hour later. */
    private static Instant build(FileBagStore store, ManualTimeSource time) throws Exception {
        for (int i = 0; i < 100; i++) {
            String n = "acct/" + (i % 4);
            store.append(req(LOG, List.of(lease(n, 1)), "m" + i, "n" + i));
            if (i == 57) {
                store.append(req(LOG, List.of(lease("rare", 1), lease(n, 1)), "rare"));
            }
            time.advance(Duration.ofMillis(50));
        }
        Instant end = time.now();
        time.set(end.plusSeconds(1));
        store.sealThrough(LOG, T0, end.plusMillis(100));
        time.set(T0.plusSeconds(3_600));
        return end;
    }

    private static long lists(FileBagStore s) {
        return s.stats().fileOps().getOrDefault(NfsSafeFiles.Op.LIST, 0L);
    }

    private static List<Path> segments(Path root) throws Exception {
        try (Stream<Path> s = Files.list(root.resolve(LOG).resolve(Compactor.SEGMENTS))) {
            return s.filter(p -> SegmentFile.parseName(p.getFileName().toString()) != null).sorted().toList();
        }
    }

    private static byte[] meta(Path segment) throws Exception {
        byte[] a = Files.readAllBytes(segment);
        SegmentFile.Trailer t = SegmentFile.trailer(java.util.Arrays.copyOfRange(a, a.length - SegmentFile.TRAILER,
                a.length), a.length);
        return java.util.Arrays.copyOfRange(a, (int) t.indexOffset(), a.length);
    }

    @Test
    void aReadByNameUsesTheIndexAndADamagedSegmentFallsBackToTheBuckets() throws Exception {
        Path root = freshDir("segments-damage");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            build(store, time);
            ReadRequest all = ReadRequest.all(LOG);
            ReadRequest rare = all.underAnyOf(Set.of("rare"));
            SegmentsRandomizedTest.Outcome allBefore = SegmentsRandomizedTest.read(store, all);
            SegmentsRandomizedTest.Outcome rareBefore = SegmentsRandomizedTest.read(store, rare);
            assertEquals(1, rareBefore.messages().size());
            long l0 = lists(store);
            SegmentsRandomizedTest.read(store, all);
            long bucketLists = lists(store) - l0;

            CompactionReport r = store.compact(LOG);
            assertEquals(6, r.published().size(), r.toString());
            long l1 = lists(store);
            SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(store, all), "compacted");
            long segmentLists = lists(store) - l1;
            // The segments directory, and the walks before the first segment and after the last (six levels each,
            // and the segments directory again before each walk).
            assertTrue(segmentLists <= 15 && bucketLists > 51, "a read lists " + segmentLists + " directories "
                    + "instead of " + bucketLists);
            l1 = lists(store);
            SegmentsRandomizedTest.assertSame(rareBefore, SegmentsRandomizedTest.read(store, rare), "by name");
            long rareLists = lists(store) - l1;

            // Damage, in every segment with entries, the first, which does not name "rare": a read by name never
            // reads it.
            for (Path seg : segments(root)) {
                if (Files.size(seg) - meta(seg).length == SegmentFile.HEADER) {
                    continue;
                }
                long[] rareEntries = SegmentFile.entriesNaming(meta(seg), Set.of("rare"));
                assertTrue(rareEntries.length == 0 || rareEntries[0] > SegmentFile.HEADER, "rare is not first");
                flip(seg, SegmentFile.HEADER + SegmentFile.ENTRY_HEADER + 30);
            }
            l1 = lists(store);
            SegmentsRandomizedTest.assertSame(rareBefore, SegmentsRandomizedTest.read(store, rare), "by name, damaged");
            assertEquals(rareLists, lists(store) - l1, "the read by name used the segments, not the buckets");
            // Damage the entry that names "rare" itself: the read by name copies it out of the mapped segment, finds
            // it wrong, and reads that segment's buckets instead.
            int damaged = 0;
            for (Path seg : segments(root)) {
                long[] rareEntries = SegmentFile.entriesNaming(meta(seg), Set.of("rare"));
                if (rareEntries.length > 0) {
                    flip(seg, rareEntries[0] + SegmentFile.ENTRY_HEADER + 30);
                    damaged++;
                }
            }
            assertEquals(1, damaged, "one segment holds the message of 'rare'");
            l1 = lists(store);
            SegmentsRandomizedTest.assertSame(rareBefore, SegmentsRandomizedTest.read(store, rare),
                    "by name, its own entry damaged");
            assertTrue(lists(store) - l1 > rareLists, "the segment with the damaged entry was replaced by its buckets");
            l1 = lists(store);
            SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(store, all), "damaged entries");
            assertTrue(lists(store) - l1 > segmentLists, "the damaged segments were replaced by their buckets");
            for (int i = 0; i < 5; i++) {
                Instant a = T0.plusMillis(300 + 900 * i);
                ReadRequest part = all.between(a, a.plusMillis(1_700));
                SegmentsRandomizedTest.Outcome expected = new SegmentsRandomizedTest.Outcome(allBefore.messages()
                        .stream().filter(m -> !m.timestamp().isBefore(a) && m.timestamp().isBefore(a.plusMillis(1_700)))
                        .toList(), List.of(), null);
                SegmentsRandomizedTest.assertSame(expected, SegmentsRandomizedTest.read(store, part), "range " + a);
            }

            // A damaged index: the whole segment is replaced by its buckets. This store verified the segment's
            // index before the damage and keeps using what it verified; a store opened now meets the damage.
            Path seg = segments(root).get(2);
            long size = Files.size(seg);
            flip(seg, size - SegmentFile.TRAILER - 3);
            assertTrue(SegmentReader.verify(new NfsSafeFiles(), seg) != null);
            long hits = store.context().segments().counts()[0];
            SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(store, all), "damaged index");
            assertTrue(store.context().segments().counts()[0] > hits, "the verified index was used");
            try (FileBagStore fresh = FileBagStore.open(SegmentsRandomizedTest.config(root, "w3").build(), time)) {
                long f0 = lists(fresh);
                SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(fresh, all), "damaged index");
                assertTrue(lists(fresh) - f0 > segmentLists, "the segment with a damaged index was replaced by its "
                        + "buckets");
                SegmentsRandomizedTest.assertSame(rareBefore, SegmentsRandomizedTest.read(fresh, rare),
                        "damaged index");
            }
        }
    }

    @Test
    void aStoreVerifiesASegmentsIndexOnceAndMeetsAReplacedSegment() throws Exception {
        Path root = freshDir("segments-cache");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            build(store, time);
            ReadRequest all = ReadRequest.all(LOG);
            ReadRequest rare = all.underAnyOf(Set.of("rare"));
            SegmentsRandomizedTest.Outcome allBefore = SegmentsRandomizedTest.read(store, all);
            store.compact(LOG);
            SegmentMetaCache cache = store.context().segments();
            SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(store, all), "first read");
            long[] first = cache.counts();
            assertEquals(6, first[1], "each segment verified once");
            assertTrue(cache.bytes() > 0);
            SegmentsRandomizedTest.read(store, all);
            SegmentsRandomizedTest.read(store, rare);
            long[] then = cache.counts();
            assertEquals(first[1], then[1], "no segment verified again");
            assertEquals(first[0] + 12, then[0], "both reads took every segment's index from the cache");

            // A segment replaced under its name by a file of other contents (here its bytes but the last, so that its
            // trailer no longer reads): the store verifies the new file, refuses it and reads the buckets instead.
            Path seg = segments(root).get(2);
            byte[] whole = Files.readAllBytes(seg);
            Path other = seg.resolveSibling("replacement");
            Files.write(other, java.util.Arrays.copyOf(whole, whole.length - 1));
            Files.move(other, seg, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            SegmentsRandomizedTest.assertSame(allBefore, SegmentsRandomizedTest.read(store, all), "replaced");
            assertEquals(then[1] + 1, cache.counts()[1], "the replaced segment was verified (and refused)");
        }
    }

    @Test
    void theCacheKeepsTheMostRecentlyUsedWithinItsBudget() {
        SegmentMetaCache cache = new SegmentMetaCache(100);
        SegmentFile.Trailer t = new SegmentFile.Trailer(0, 1, 1, 8, 8, 0);
        SegmentFile.Table table = new SegmentFile.Table(new long[0], new SegmentFile.State[0], new long[0],
                new long[0], new int[1], new int[0]);
        byte[] tail = {1};
        cache.put("a", 1, tail, new SegmentMetaCache.Meta(t, new byte[40], table));
        cache.put("b", 1, tail, new SegmentMetaCache.Meta(t, new byte[40], table));
        assertTrue(cache.get("a", 1, tail) != null);
        cache.put("c", 1, tail, new SegmentMetaCache.Meta(t, new byte[40], table));
        assertEquals(80, cache.bytes());
        assertTrue(cache.get("b", 1, tail) == null, "the least recently used went first");
        assertTrue(cache.get("a", 1, tail) != null && cache.get("c", 1, tail) != null);
        assertTrue(cache.get("a", 2, tail) == null && cache.get("a", 1, new byte[] {2}) == null, "size and trailer "
                + "are part of the key");
        cache.put("big", 1, tail, new SegmentMetaCache.Meta(t, new byte[101], table));
        assertTrue(cache.get("big", 1, tail) == null, "larger than the budget: not kept");
        assertEquals(80, cache.bytes());
    }

    /** Hooks that fail the compaction at one publication step, as a crash there would stop it. */
    private static final class StopAt implements StoreHooks {
        private final String step;

        StopAt(String step) {
            this.step = step;
        }

        @Override
        public void compactionStep(String log, long from, String s) {
            if (s.equals(step)) {
                throw new IllegalStateException("stopped at " + s);
            }
        }
    }

    @Test
    void aStoppedCompactionLeavesAPreparedFileThatReadersIgnoreAndTheNextRunRemoves() throws Exception {
        for (String step : List.of("prepared", "linked")) {
            Path root = freshDir("segments-stopped-" + step);
            ManualTimeSource time = StoreFixture.clock();
            try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time,
                    new StopAt(step))) {
                build(store, time);
                SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG));
                assertThrows(IllegalStateException.class, () -> store.compact(LOG));
                List<String> names = new ArrayList<>();
                try (Stream<Path> s = Files.list(root.resolve(LOG).resolve(Compactor.SEGMENTS))) {
                    s.forEach(p -> names.add(p.getFileName().toString()));
                }
                assertEquals(step.equals("linked") ? 2 : 1, names.size(), names.toString());
                assertTrue(names.stream().anyMatch(NfsSafeFiles::isPreparedName), names.toString());
                SegmentsRandomizedTest.assertSame(before, SegmentsRandomizedTest.read(store, ReadRequest.all(LOG)),
                        step);
            }
            try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w2").build(), time)) {
                SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG));
                CompactionReport r = store.compact(LOG);
                assertEquals(1, r.preparedRemoved(), r.toString());
                assertEquals(step.equals("linked") ? 5 : 6, r.published().size(), r.toString());
                assertEquals(step.equals("linked") ? 1 : 0, r.alreadyThere(), r.toString());
                SegmentsRandomizedTest.assertSame(before, SegmentsRandomizedTest.read(store, ReadRequest.all(LOG)),
                        step);
                CompactionReport again = store.compact(LOG);
                assertEquals(List.of(), again.published());
                assertEquals(0, again.preparedRemoved());
                assertEquals(6, again.alreadyThere());
            }
        }
    }

    @Test
    void onlyBucketsPastTheHorizonAreCompacted() throws Exception {
        Path root = freshDir("segments-horizon");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            Instant end = build(store, time);
            time.set(end.plusSeconds(1));
            // The horizon reaches back to the start of the log's third second: two segments.
            CompactionReport r = store.compact(LOG, Duration.between(T0.plusSeconds(2), end.plusSeconds(1)));
            assertEquals(2, r.published().size(), r.toString());
            assertFalse(r.published().contains(SegmentFile.name(
                    org.leasehold.time.Micros.of(T0.plusSeconds(2)), org.leasehold.time.Micros.of(T0.plusSeconds(3)))));
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> store.compact(LOG, Duration.ofMillis(250)));
            assertTrue(e.getMessage().startsWith("horizon is PT0.25S; use more than the grace plus clock error of log 'log'"),
                    e.getMessage());
            assertThrows(UnknownLogException.class, () -> store.compact("nothing-here"));
        }
    }

    @Test
    void theSettingsAreChecked() {
        Path root = Path.of("target");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .compactionHorizon(Duration.ofSeconds(2)).build());
        assertEquals("compactionHorizon is PT2S; use more than grace plus maxClockError (PT2.5S): a bucket younger "
                + "than that may still be written to or sealed", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .segmentSpan(Duration.ofMinutes(7)).build());
        assertEquals("segmentSpan is PT7M; use whole microseconds that divide a day evenly (for example 10 min, 1 h or "
                + "1 day)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root).segmentSpan(Duration.ZERO)
                .build());
        BagStoreConfig d = BagStoreConfig.defaults(root);
        assertEquals(Duration.ofHours(1), d.compactionHorizon());
        assertEquals(Duration.ofHours(1), d.segmentSpan());
    }
}
