package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.ReadRequest;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.ManualTimeSource;

/**
 * Compactor processes on one log: two and three racing publish one segment per range, and a compactor killed with
 * {@code kill -9} at each publication step leaves nothing a reader uses damaged; a re-run completes and removes the
 * prepared file left behind. Readers see every message once, before, between and after.
 */
class CompactionProcessTest {
    private static final String LOG = SegmentsRandomizedTest.LOG;

    /** A log of about ten seconds, every bucket sealed; returns the reads to compare. */
    private static Map<ReadRequest, SegmentsRandomizedTest.Outcome> writeLog(Path root, long seed) throws Exception {
        ManualTimeSource time = StoreFixture.clock();
        List<FileBagStore> stores = new ArrayList<>();
        try {
            for (String w : List.of("p-a", "p-b")) {
                stores.add(FileBagStore.open(SegmentsRandomizedTest.config(root, w).build(), time));
            }
            Random rnd = new Random(seed);
            Instant end = SegmentsRandomizedTest.write(rnd, time, stores, 250);
            time.set(end.plusSeconds(2));
            stores.get(0).sealThrough(LOG, T0, end.plusMillis(100));
            Map<ReadRequest, SegmentsRandomizedTest.Outcome> before = new LinkedHashMap<>();
            for (ReadRequest r : SegmentsRandomizedTest.requests(rnd, T0, end)) {
                before.put(r, SegmentsRandomizedTest.read(stores.get(0), r));
            }
            return before;
        } finally {
            for (FileBagStore s : stores) {
                s.close();
            }
        }
    }

    private static void assertReadsUnchanged(Path root, Map<ReadRequest, SegmentsRandomizedTest.Outcome> before,
            String why) throws Exception {
        try (FileBagStore reader = FileBagStore.open(SegmentsRandomizedTest.config(root, "reader").build(),
                StoreFixture.clock())) {
            for (Map.Entry<ReadRequest, SegmentsRandomizedTest.Outcome> e : before.entrySet()) {
                SegmentsRandomizedTest.assertSame(e.getValue(), SegmentsRandomizedTest.read(reader, e.getKey()), why
                        + ", " + e.getKey());
            }
        }
    }

    private static List<String> segmentNames(Path root) throws IOException {
        Path dir = root.resolve(LOG).resolve(Compactor.SEGMENTS);
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static void assertAllPublishedAndClean(Path root, String why) throws Exception {
        List<String> names = segmentNames(root);
        assertTrue(names.stream().noneMatch(NfsSafeFiles::isPreparedName), why + ": no prepared file left: " + names);
        assertTrue(names.size() >= 8, why + ": a segment per second of the log: " + names);
        NfsSafeFiles fs = new NfsSafeFiles();
        for (String n : names) {
            assertNotNull(SegmentFile.parseName(n), n);
            assertEquals(null, SegmentReader.verify(fs, root.resolve(LOG).resolve(Compactor.SEGMENTS).resolve(n)), n);
        }
    }

    @Test
    void racingCompactorProcessesPublishOneSegmentPerRange() throws Exception {
        for (int n = 2; n <= 3; n++) {
            String why = n + " compactors";
            Path root = freshDir("compact-race-" + n);
            Path locks = freshDir("compact-race-locks-" + n);
            Path err = root.resolve("children.err");
            Files.createFile(err);
            Map<ReadRequest, SegmentsRandomizedTest.Outcome> before = writeLog(root, 7 + n);
            List<Children.Child> children = new ArrayList<>();
            try {
                for (int i = 0; i < n; i++) {
                    children.add(Children.start(err, "compact", root.toString(), locks.toString(), LOG, "-"));
                }
                for (Children.Child c : children) {
                    assertNotNull(c.await("READY"::equals, 60_000), why + ": the child started");
                }
                for (Children.Child c : children) {
                    c.tell("go");
                }
                Map<String, Integer> publishers = new HashMap<>();
                for (Children.Child c : children) {
                    assertEquals(0, c.waitFor(120_000), why + ": " + c.lines());
                    for (String l : c.lines()) {
                        if (l.startsWith("PUBLISHED ")) {
                            publishers.merge(l.substring(10), 1, Integer::sum);
                        }
                    }
                }
                List<String> names = segmentNames(root);
                assertEquals(names.size(), publishers.size(), why + ": " + publishers + " vs " + names);
                for (Map.Entry<String, Integer> e : publishers.entrySet()) {
                    assertEquals(1, e.getValue(), why + ": " + e.getKey() + " was published once");
                    assertTrue(names.contains(e.getKey()), why);
                }
                assertAllPublishedAndClean(root, why);
                assertReadsUnchanged(root, before, why);
            } finally {
                for (Children.Child c : children) {
                    c.close();
                }
            }
        }
    }

    @Test
    void aCompactorKilledAtEachPublicationStepLeavesReadersWhole() throws Exception {
        for (String step : List.of("writing", "prepared", "linked", "unlinked")) {
            String why = "killed at " + step;
            Path root = freshDir("compact-kill-" + step);
            Path locks = freshDir("compact-kill-locks-" + step);
            Path err = root.resolve("children.err");
            Files.createFile(err);
            Map<ReadRequest, SegmentsRandomizedTest.Outcome> before = writeLog(root, step.hashCode());
            try (Children.Child c = Children.start(err, "compact", root.toString(), locks.toString(), LOG, step)) {
                assertNotNull(c.await("READY"::equals, 60_000), why);
                c.tell("go");
                assertNotNull(c.await(l -> l.startsWith("STEP " + step + " "), 60_000), why + ": " + c.lines());
                c.kill();
            }
            List<String> left = segmentNames(root);
            boolean prepared = left.stream().anyMatch(NfsSafeFiles::isPreparedName);
            boolean published = left.stream().anyMatch(x -> SegmentFile.parseName(x) != null);
            assertEquals(!step.equals("unlinked"), prepared, why + ": " + left);
            assertEquals(step.equals("linked") || step.equals("unlinked"), published, why + ": " + left);
            assertReadsUnchanged(root, before, why + ", before the re-run");

            ManualTimeSource late = new ManualTimeSource(T0.plusSeconds(3_600));
            try (FileBagStore again = FileBagStore.open(SegmentsRandomizedTest.config(root, "again").build(), late)) {
                CompactionReport r = again.compact(LOG);
                assertEquals(step.equals("unlinked") ? 0 : 1, r.preparedRemoved(), why + ": " + r);
                assertEquals(Set.of(), Set.copyOf(r.lost()), why);
            }
            assertAllPublishedAndClean(root, why);
            assertReadsUnchanged(root, before, why + ", after the re-run");
        }
    }
}
