package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewEncodingException;
import org.leasehold.bag.ViewState;
import org.leasehold.store.format.ViewSnapshotFile;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * Materialized views on real directories: a view read equals a full fold of the log (random logs of three writers,
 * with and without a name filter, snapshots at random boundaries, before and after compaction); builders racing in
 * threads and in processes publish one file with the same bytes; a damaged snapshot is passed over; an unsealed
 * tail is applied and flagged; a definition that encodes differently is refused and replaces nothing.
 */
class ViewsTest {
    private static final String LOG = SegmentsRandomizedTest.LOG;
    private static final Duration WIDTH = SegmentsRandomizedTest.WIDTH;

    /** The bytes of {@code def}'s fold over a read. */
    static byte[] fold(FileBagStore store, TallyView def, ReadRequest r) throws Exception {
        TallyView.State s = def.initial();
        try (MessageStream in = store.read(r.underAnyOf(def.leaseNames()))) {
            Message m;
            while ((m = in.next()) != null) {
                s = def.apply(s, m);
            }
        }
        return def.encode(s);
    }

    static List<Path> files(Path dir) throws Exception {
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.sorted().toList();
        }
    }

    static Path viewDir(Path root, String view) {
        return root.resolve(LOG).resolve(Views.VIEWS).resolve(view);
    }

    private static void flip(Path file, long at) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x21)).rewind();
            ch.write(one, at);
        }
    }

    /** Asserts that the view, read both ways, equals the full folds, and returns the sealed-only read. */
    private static ViewState<TallyView.State> check(FileBagStore store, TallyView def, String why) throws Exception {
        ViewState<TallyView.State> now = store.view(LOG, def);
        assertArrayEquals(fold(store, def, ReadRequest.all(LOG)), def.encode(now.state()), why + ": current");
        ViewState<TallyView.State> sealed = store.view(LOG, def, false);
        assertArrayEquals(fold(store, def, ReadRequest.all(LOG).sealedOnly()), def.encode(sealed.state()),
                why + ": sealed");
        assertFalse(sealed.tentative(), why);
        assertEquals(now.boundary(), sealed.boundary(), why);
        return sealed;
    }

    /** A snapshot's state holds exactly the messages before its boundary. */
    private static void checkSnapshot(FileBagStore store, Path root, TallyView def, ViewSnapshotReport r, String why)
            throws Exception {
        ViewSnapshotFile.Snapshot s = ViewSnapshotFile.decode(Files.readAllBytes(viewDir(root, def.name())
                .resolve(r.file())));
        assertEquals(Micros.of(r.boundary()), s.boundary(), why);
        assertArrayEquals(fold(store, def, ReadRequest.all(LOG).sealedOnly().between(null, r.boundary())), s.state(),
                why + ": the snapshot at " + r.boundary());
    }

    @Test
    void aViewIsTheFullFoldOnRandomLogsBeforeAndAfterCompaction() throws Exception {
        long seed = Long.getLong("views.seed", System.nanoTime());
        for (int round = 0; round < 3; round++) {
            randomRound(seed + round);
        }
    }

    private void randomRound(long seed) throws Exception {
        String why = "seed " + seed;
        Random rnd = new Random(seed);
        Path root = freshDir("views-random");
        ManualTimeSource time = StoreFixture.clock();
        List<FileBagStore> stores = new ArrayList<>();
        try {
            for (String w : List.of("w-a", "w-b", "w-c")) {
                stores.add(FileBagStore.open(SegmentsRandomizedTest.config(root, w).build(), time));
            }
            FileBagStore store = stores.get(0);
            List<TallyView> defs = List.of(new TallyView("all"), new TallyView("some", "tally 1",
                    Set.of(SegmentsRandomizedTest.NAMES.get(1), SegmentsRandomizedTest.NAMES.get(4)), 0));
            store.createLog(LOG);
            for (TallyView d : defs) {
                ViewState<TallyView.State> v = check(store, d, why + " empty");
                assertEquals(0, v.state().messages, why);
            }
            Instant first = time.now();
            Instant end = SegmentsRandomizedTest.write(rnd, time, stores, 300);
            int snapshots = 0;
            for (int i = 0; i < 6; i++) {
                for (TallyView d : defs) {
                    ViewState<TallyView.State> before = check(store, d, why + " before build " + i);
                    Instant through = first.plusMillis(rnd.nextLong(Duration.between(first, end).toMillis() + 500));
                    ViewSnapshotReport r = store.buildView(LOG, d, through);
                    assertTrue(!r.boundary().isAfter(through), why + " " + r);
                    assertEquals(0, Micros.of(r.boundary()) % Micros.of(WIDTH), why + " " + r);
                    checkSnapshot(store, root, d, r, why);
                    snapshots += r.outcome() == ViewSnapshotReport.Outcome.PUBLISHED ? 1 : 0;
                    ViewState<TallyView.State> after = check(store, d, why + " after build " + i);
                    assertTrue(after.boundary() != null && !after.boundary().isBefore(r.boundary())
                            || before.boundary() != null && after.boundary().equals(before.boundary()),
                            why + ": the read starts from the latest snapshot " + after.boundary() + " / " + r);
                }
                // More messages, some in buckets the build sealed (refused), most after.
                end = SegmentsRandomizedTest.write(rnd, time, stores, 60);
            }
            assertTrue(snapshots >= 4, why + ": " + snapshots + " snapshots published");

            // Every bucket before the latest boundary is sealed.
            time.advance(Duration.ofSeconds(5));
            ViewSnapshotReport last = store.buildView(LOG, defs.get(0), time.now());
            assertTrue(T0.isBefore(last.boundary()), why);
            BucketWalker walk = new BucketWalker(new org.leasehold.fs.NfsSafeFiles(), root.resolve(LOG),
                    Micros.of(WIDTH), LogGeometry.MIN_MICROS, Micros.of(last.boundary()));
            int buckets = 0;
            for (long b = walk.next(); b >= 0; b = walk.next()) {
                Path dir = LogGeometry.bucketDir(root.resolve(LOG), b);
                assertTrue(Files.exists(dir.resolve(Names.LOCK)), why + ": " + dir + " is before " + last);
                buckets++;
            }
            assertTrue(buckets > 10, why + ": " + buckets + " buckets");
            Map<String, byte[]> beforeCompaction = new TreeMap<>();
            for (TallyView d : defs) {
                beforeCompaction.put(d.name(), fold(store, d, ReadRequest.all(LOG)));
            }
            time.advance(Duration.ofSeconds(5));
            assertFalse(store.compact(LOG).published().isEmpty(), why);
            for (TallyView d : defs) {
                assertArrayEquals(beforeCompaction.get(d.name()), def(store, d), why + ": after compaction");
                check(store, d, why + " after compaction");
                // A view of another name folded from the segments publishes the same state.
                TallyView twin = new TallyView(d.name() + "-twin", d.version(), d.leaseNames(), 0);
                ViewSnapshotReport a = store.buildView(LOG, d, last.boundary());
                ViewSnapshotReport b = store.buildView(LOG, twin, last.boundary());
                assertEquals(a.boundary(), b.boundary(), why);
                assertArrayEquals(ViewSnapshotFile.decode(Files.readAllBytes(viewDir(root, d.name()).resolve(a.file())))
                        .state(), ViewSnapshotFile.decode(Files.readAllBytes(viewDir(root, twin.name())
                        .resolve(b.file()))).state(), why + ": the snapshot folded from segments");
            }
        } finally {
            for (FileBagStore s : stores) {
                s.close();
            }
        }
    }

    private static byte[] def(FileBagStore store, TallyView d) throws Exception {
        return d.encode(store.view(LOG, d).state());
    }

    /** Five seconds of appends under acct/0..3 from one writer; returns the time after the last. */
    private static Instant simpleLog(FileBagStore store, ManualTimeSource time) throws Exception {
        for (int i = 0; i < 100; i++) {
            store.append(req(LOG, List.of(lease("acct/" + (i % 4), 1)), "m" + i, "n" + i));
            time.advance(Duration.ofMillis(50));
        }
        return time.now();
    }

    @Test
    void anUnsealedTailIsAppliedAndFlaggedAndSnapshotsStopBeforeIt() throws Exception {
        Path root = freshDir("views-tail");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            TallyView d = new TallyView("tally");
            Instant end = simpleLog(store, time);
            ViewSnapshotReport r = store.buildView(LOG, d, end.plusSeconds(10));
            // The boundary is the latest one whose last bucket ended more than grace plus clock error (250 ms) ago.
            Instant latest = Micros.toInstant(Math.floorDiv(Micros.of(end.minusMillis(250)) - 1, Micros.of(WIDTH))
                    * Micros.of(WIDTH));
            assertEquals(latest, r.boundary());
            assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, r.outcome());
            ViewState<TallyView.State> now = store.view(LOG, d);
            assertEquals(r.boundary(), now.boundary());
            assertTrue(now.tentative(), "the last buckets are not sealed");
            assertEquals(100 * 2, now.state().messages);
            assertTrue(now.tailMessages() > 0 && now.tailMessages() < 20, now.toString());
            ViewState<TallyView.State> sealed = store.view(LOG, d, false);
            assertEquals(200 - now.tailMessages(), sealed.state().messages, "the sealed read stops at the boundary");
            assertEquals(0, sealed.tailMessages());
            check(store, d, "tail");

            // A second build at the same boundary does nothing.
            ViewSnapshotReport again = store.buildView(LOG, d, Instant.MAX);
            assertEquals(ViewSnapshotReport.Outcome.ALREADY_PUBLISHED, again.outcome());
            assertEquals(0, again.messages());
            assertEquals(1, files(viewDir(root, "tally")).size());

            assertThrows(IllegalArgumentException.class, () -> store.view(LOG, new TallyView("../x")));
            assertThrows(IllegalArgumentException.class, () -> store.buildView(LOG, new TallyView(".hidden"), end));
        }
    }

    @Test
    void aDamagedSnapshotIsPassedOverForAnOlderOneOrAFullFold() throws Exception {
        Path root = freshDir("views-damage");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            TallyView d = new TallyView("tally");
            simpleLog(store, time);
            ViewSnapshotReport r1 = store.buildView(LOG, d, T0.plusSeconds(2));
            ViewSnapshotReport r2 = store.buildView(LOG, d, T0.plusSeconds(4));
            assertEquals(T0.plusSeconds(2), r1.boundary());
            assertEquals(T0.plusSeconds(4), r2.boundary());
            assertEquals(80, r2.messages(), "the second build started from the first snapshot (two messages an append)");
            Path dir = viewDir(root, "tally");
            assertEquals(T0.plusSeconds(4), check(store, d, "intact").boundary());

            flip(dir.resolve(r2.file()), 60);
            assertEquals(T0.plusSeconds(2), check(store, d, "latest damaged").boundary());
            // A build over the damaged one starts from the older one.
            ViewSnapshotReport r3 = store.buildView(LOG, d, T0.plusMillis(4_500));
            assertEquals(100, r3.messages(), "from the first snapshot");
            assertEquals(T0.plusMillis(4_500), check(store, d, "built past the damage").boundary());

            // Truncated, and a state the definition cannot decode: passed over too.
            byte[] a = Files.readAllBytes(dir.resolve(r3.file()));
            Files.write(dir.resolve(r3.file()), java.util.Arrays.copyOf(a, a.length - 5));
            Path r1File = dir.resolve(r1.file());
            byte[] s1 = ViewSnapshotFile.decode(Files.readAllBytes(r1File)).state();
            byte[] bad = ViewSnapshotFile.encode(new ViewSnapshotFile.Snapshot(Micros.of(r1.boundary()),
                    ViewSnapshotFile.versionDigest(d.version()), d.name(), java.util.Arrays.copyOf(s1, s1.length + 3)));
            Files.write(r1File, bad);
            ViewState<TallyView.State> v = check(store, d, "all damaged");
            assertNull(v.boundary(), "folded from the beginning");
            assertEquals(180, v.state().messages, "sealed: up to the last boundary");
            assertEquals(200, store.view(LOG, d).state().messages, "current");

            // Another version never reads these snapshots.
            TallyView v2 = new TallyView("tally", "tally 2", Set.of(), 0);
            assertNull(store.view(LOG, v2).boundary());
            ViewSnapshotReport r4 = store.buildView(LOG, v2, T0.plusSeconds(2));
            assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, r4.outcome());
            assertFalse(r4.file().equals(r1.file()));
        }
    }

    @Test
    void aBuildRemovesTheSnapshotsOlderThanTheOneItStartedFromAndNoOthers() throws Exception {
        Path root = freshDir("views-superseded");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            TallyView d = new TallyView("tally");
            TallyView other = new TallyView("tally", "tally 2", Set.of(), 0);
            simpleLog(store, time);
            Path dir = viewDir(root, "tally");
            String otherVersion = store.buildView(LOG, other, T0.plusSeconds(1)).file();
            List<String> published = new ArrayList<>();
            for (int s = 1; s <= 4; s++) {
                ViewSnapshotReport r = store.buildView(LOG, d, T0.plusSeconds(s));
                assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, r.outcome());
                published.add(r.file());
                // The new snapshot and the one it started from stay; older ones of this version go.
                Set<String> expected = new java.util.HashSet<>(published.subList(Math.max(0, s - 2), s));
                expected.add(otherVersion);
                assertEquals(expected, names(dir), "after the build at +" + s + " s");
                assertEquals(T0.plusSeconds(s), check(store, d, "after +" + s + " s").boundary());
            }
            assertEquals(ViewSnapshotReport.Outcome.ALREADY_PUBLISHED, store.buildView(LOG, d, T0.plusSeconds(4))
                    .outcome());
            assertEquals(3, names(dir).size(), "a build that publishes nothing removes nothing");

            // A damaged latest snapshot is passed over and stays until a build starts above it.
            flip(dir.resolve(published.get(3)), 60);
            ViewSnapshotReport past = store.buildView(LOG, d, T0.plusMillis(4_500));
            assertEquals(Set.of(otherVersion, published.get(2), published.get(3), past.file()), names(dir),
                    "started from +3 s: nothing older than it to remove");
            time.advance(Duration.ofSeconds(1));
            ViewSnapshotReport next = store.buildView(LOG, d, T0.plusSeconds(5));
            assertEquals(Set.of(otherVersion, past.file(), next.file()), names(dir));
            assertEquals(T0.plusSeconds(5), check(store, d, "after the damage").boundary());
            assertEquals(T0.plusSeconds(1), store.view(LOG, other).boundary(), "the other version's snapshot");
        }
    }

    private static Set<String> names(Path dir) throws Exception {
        Set<String> n = new java.util.TreeSet<>();
        for (Path p : files(dir)) {
            n.add(p.getFileName().toString());
        }
        return n;
    }

    @Test
    void threadsRacingPublishOneSnapshotWithTheSameBytes() throws Exception {
        Path root = freshDir("views-threads");
        ManualTimeSource time = StoreFixture.clock();
        BagStoreConfig config = SegmentsRandomizedTest.config(root, "w").build();
        int n = 4;
        ExecutorService pool = Executors.newFixedThreadPool(n);
        try (FileBagStore store = FileBagStore.open(config, time)) {
            simpleLog(store, time);
            LogHandle log = new LogHandle(LOG, root.resolve(LOG), LogGeometry.of(config));
            CyclicBarrier prepared = new CyclicBarrier(n);
            List<Future<ViewSnapshotReport>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Views v = new Views(store.context(), store, () -> {
                    try {
                        prepared.await();
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                fs.add(pool.submit(() -> v.build(log, new TallyView("tally"), Micros.of(T0.plusSeconds(3)))));
            }
            Map<ViewSnapshotReport.Outcome, Integer> outcomes = new TreeMap<>();
            for (Future<ViewSnapshotReport> f : fs) {
                outcomes.merge(f.get().outcome(), 1, Integer::sum);
            }
            assertEquals(Map.of(ViewSnapshotReport.Outcome.PUBLISHED, 1, ViewSnapshotReport.Outcome.IDENTICAL, n - 1),
                    outcomes);
            List<Path> left = files(viewDir(root, "tally"));
            assertEquals(1, left.size(), "one published file, no prepared file left: " + left);
            TallyView d = new TallyView("tally");
            assertArrayEquals(fold(store, d, ReadRequest.all(LOG).between(null, T0.plusSeconds(3))),
                    ViewSnapshotFile.decode(Files.readAllBytes(left.get(0))).state());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aDefinitionThatEncodesDifferentlyIsRefusedAndReplacesNothing() throws Exception {
        Path root = freshDir("views-nondeterministic");
        ManualTimeSource time = StoreFixture.clock();
        BagStoreConfig config = SegmentsRandomizedTest.config(root, "w").build();
        try (FileBagStore store = FileBagStore.open(config, time)) {
            simpleLog(store, time);
            LogHandle log = new LogHandle(LOG, root.resolve(LOG), LogGeometry.of(config));
            long through = Micros.of(T0.plusSeconds(3));
            Path dir = viewDir(root, "tally");
            ViewSnapshotReport[] other = new ViewSnapshotReport[1];
            Views loser = new Views(store.context(), store, () -> {
                try {
                    other[0] = new Views(store.context(), store).build(log, new TallyView("tally", "tally 1", Set.of(),
                            2), through);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            ViewEncodingException e = assertThrows(ViewEncodingException.class, () -> loser.build(log,
                    new TallyView("tally", "tally 1", Set.of(), 1), through));
            assertTrue(e.getMessage().contains("not deterministic") && e.getMessage().contains(other[0].file()),
                    e.getMessage());
            assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, other[0].outcome());
            List<Path> left = files(dir);
            assertEquals(List.of(dir.resolve(other[0].file())), left, "the winner's file only");
            byte[] state = ViewSnapshotFile.decode(Files.readAllBytes(left.get(0))).state();
            assertEquals(2, state[state.length - 1], "the winner's bytes stay");

            // A winner whose file is damaged: the loser reports it, keeps nothing, replaces nothing.
            Path dir2 = viewDir(root, "other");
            ViewSnapshotReport[] first = new ViewSnapshotReport[1];
            Views second = new Views(store.context(), store, () -> {
                try {
                    first[0] = new Views(store.context(), store).build(log, new TallyView("other"), through);
                    flip(dir2.resolve(first[0].file()), 30);
                } catch (Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            ViewSnapshotReport r = second.build(log, new TallyView("other"), through);
            assertEquals(ViewSnapshotReport.Outcome.DAMAGED, r.outcome());
            assertEquals(List.of(dir2.resolve(r.file())), files(dir2));
            assertNull(check(store, new TallyView("other"), "damaged winner").boundary());
        }
    }

    @Test
    void twoProcessesRacingPublishOneSnapshotAndRemoveACrashedBuildersFile() throws Exception {
        Path root = freshDir("views-processes");
        Path err = root.resolve("children.err");
        ManualTimeSource time = StoreFixture.clock();
        Instant through = T0.plusSeconds(3);
        byte[] expected;
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            simpleLog(store, time);
            store.sealThrough(LOG, T0, through);
            expected = fold(store, new TallyView("tally"), ReadRequest.all(LOG).between(null, through));
        }
        String locks = StoreFixture.LOCKS.toString();
        Path dir = viewDir(root, "tally");
        try (Children.Child a = start(err, root, locks, "v-a", through);
                Children.Child b = start(err, root, locks, "v-b", through)) {
            for (Children.Child c : List.of(a, b)) {
                assertEquals("READY", c.await("READY"::equals, 60_000), c.lines().toString());
            }
            a.tell("go");
            b.tell("go");
            for (Children.Child c : List.of(a, b)) {
                assertEquals("PREPARED", c.await("PREPARED"::equals, 60_000), c.lines().toString());
            }
            a.tell("link");
            b.tell("link");
            List<String> outcomes = new ArrayList<>();
            for (Children.Child c : List.of(a, b)) {
                String l = c.await(x -> x.startsWith("OUTCOME ") || x.startsWith("FAILED "), 60_000);
                outcomes.add(l == null ? c.lines().toString() : l.split(" ")[1]);
            }
            outcomes.sort(null);
            assertEquals(List.of("IDENTICAL", "PUBLISHED"), outcomes);
        }
        List<Path> left = files(dir);
        assertEquals(1, left.size(), left.toString());
        assertArrayEquals(expected, ViewSnapshotFile.decode(Files.readAllBytes(left.get(0))).state());

        // A builder killed after forcing its prepared file leaves it; the next one to publish removes it.
        try (Children.Child c = start(err, root, locks, "v-c", through.plusSeconds(1))) {
            assertEquals("READY", c.await("READY"::equals, 60_000), c.lines().toString());
            c.tell("go");
            assertEquals("PREPARED", c.await("PREPARED"::equals, 60_000), c.lines().toString());
            c.kill();
        }
        assertEquals(2, files(dir).size(), "the crashed builder's prepared file: " + files(dir));
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(root, "w").build(), time)) {
            ViewSnapshotReport r = store.buildView(LOG, new TallyView("tally"), through.plusSeconds(1));
            assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, r.outcome());
            assertEquals(List.of(left.get(0), dir.resolve(r.file())), files(dir));
            assertEquals(40, r.messages(), "folded from the snapshot the processes published");
        }
    }

    private static Children.Child start(Path err, Path root, String locks, String writer, Instant through)
            throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ViewChild.class.getName());
        cmd.addAll(List.of(root.toString(), locks, LOG, writer, through.toString()));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.appendTo(err.toFile()));
        return new Children.Child(pb.start());
    }
}
