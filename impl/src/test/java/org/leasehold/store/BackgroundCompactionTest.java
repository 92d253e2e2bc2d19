package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;

/**
 * Background compaction: off by default; on, the store compacts the logs it writes to every interval of its clock,
 * on its own worker, and retires their buckets once the retention delay has passed; reads return the same messages.
 */
class BackgroundCompactionTest {
    private static final String LOG = "log";

    private static List<String> segments(Path root) throws IOException {
        Path dir = root.resolve(LOG).resolve(Compactor.SEGMENTS);
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> SegmentFile.parseName(n) != null).sorted()
                    .toList();
        }
    }

    @Test
    void offByDefault() throws Exception {
        assertTrue(BagStoreConfig.defaults(Path.of("target")).compactionInterval().isZero());
        Path root = freshDir("background-off");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            store.append(req(LOG, List.of(lease("acct/1", 1)), "a"));
            assertNull(store.background());
            time.advance(Duration.ofDays(2));
            assertEquals(List.of(), segments(root));
        }
    }

    @Test
    void theStoreCompactsAndRetiresTheLogsItWritesToEveryInterval() throws Exception {
        Path root = freshDir("background-on");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w")
                .compactionInterval(Duration.ofMinutes(10)).removeCompactedBuckets(true)
                .retentionDelay(Duration.ofMinutes(5)).build(), time)) {
            for (int i = 0; i < 40; i++) {
                store.append(req(LOG, List.of(lease("acct/" + (i % 3), 1)), "m" + i));
                time.advance(Duration.ofMillis(50));
            }
            time.advance(Duration.ofSeconds(1));
            store.sealThrough(LOG, T0, time.now().minusMillis(500));
            SegmentsRandomizedTest.Outcome before = SegmentsRandomizedTest.read(store, ReadRequest.all(LOG));
            int dirs = SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size();
            BackgroundCompaction bg = store.background();
            time.advance(Duration.ofMinutes(5));
            bg.awaitIdle();
            assertEquals(List.of(), segments(root), "not before the interval");
            assertEquals(0, bg.runs.sum());
            // The timer fires on this thread as the clock moves; the compaction runs on the worker.
            time.advance(Duration.ofMinutes(5));
            bg.awaitIdle();
            assertEquals(1, bg.runs.sum());
            assertEquals(3, segments(root).size(), "every second of the log compacted");
            assertEquals(dirs, SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size(), "marked, not removed yet");
            time.advance(Duration.ofMinutes(10));
            bg.awaitIdle();
            assertEquals(2, bg.runs.sum());
            assertEquals(0, bg.failures.sum());
            assertEquals(0, SegmentsRandomizedTest.bucketDirs(root.resolve(LOG)).size(), "retired");
            SegmentsRandomizedTest.assertSame(before, SegmentsRandomizedTest.read(store, ReadRequest.all(LOG)),
                    "after background compaction and retention");
        }
    }

    @Test
    void theIntervalIsChecked() {
        Path root = Path.of("target");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .compactionInterval(Duration.ofMillis(500)).build());
        assertEquals("compactionInterval is PT0.5S; use 0 (no background compaction) or 1 s to 1 day", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .compactionInterval(Duration.ofDays(2)).build());
        assertThrows(IllegalArgumentException.class, () -> BagStoreConfig.builder(root)
                .compactionInterval(Duration.ofSeconds(-1)).build());
        assertTrue(BagStoreConfig.builder(root).compactionInterval(Duration.ofHours(1)).build().compactionInterval()
                .equals(Duration.ofHours(1)));
    }
}
