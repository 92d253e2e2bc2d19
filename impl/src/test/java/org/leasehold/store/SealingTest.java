package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.SealReport;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/** The five sealing steps, idempotence, races between sealers, and the metronome. */
class SealingTest {

    @Test
    void sealingFollowsTheFiveStepsAndListsEveryDataFileWithItsSize() throws Exception {
        Path root = freshDir("seal-steps");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore a = FileBagStore.open(config(root).build(), time);
                FileBagStore b = FileBagStore.open(config(root).build(), time)) {
            Appended x = a.append(req("log", List.of(), "from a"));
            Appended y = b.append(req("log", List.of(), "from b", "and again"));
            assertThrows(BucketNotDueException.class, () -> a.sealThrough("log", T0, T0.plusSeconds(1)));
            time.advance(Duration.ofSeconds(3));
            SealReport r = a.sealThrough("log", T0, T0.plusSeconds(1));
            assertEquals(1, r.buckets().size());
            SealReport.BucketSeal s = r.buckets().get(0);
            assertEquals(SealReport.Outcome.SEALED, s.outcome());
            assertEquals(2, s.files());
            assertEquals(x.length() + y.length(), s.bytes());

            Path dir = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0));
            assertTrue(Files.exists(dir.resolve("prelock")), "step 1");
            assertEquals("r--r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(x.file()))),
                    "step 2");
            assertEquals("r--r--r--", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir.resolve(y.file()))));
            assertTrue(Files.exists(dir.resolve("lock")), "step 4");
            assertEquals("r-xr-xr-x", PosixFilePermissions.toString(Files.getPosixFilePermissions(dir)), "step 5");
            List<String> prepared;
            try (Stream<Path> l = Files.list(dir)) {
                prepared = l.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("lock.")).toList();
            }
            assertEquals(1, prepared.size(), "the prepared lock file stays (the store never deletes)");
            assertTrue(prepared.get(0).startsWith("lock." + a.writerId() + "."));
            assertTrue(Files.isSameFile(dir.resolve("lock"), dir.resolve(prepared.get(0))), "step 4 is a link(2)");

            LogChecker.Result c = LogChecker.check(root.resolve("log"));
            assertEquals(List.of(), c.violations());
            LogChecker.Lock lock = c.bucket(Micros.of(T0)).lock();
            assertEquals("log", lock.log());
            assertEquals(1_000_000L, lock.width());
            assertEquals(a.writerId(), lock.sealer());
            assertEquals((long) x.length(), lock.sizes().get(x.file()));
            assertEquals((long) y.length(), lock.sizes().get(y.file()));

            byte[] before = Files.readAllBytes(dir.resolve("lock"));
            SealReport again = b.sealThrough("log", T0, T0.plusSeconds(1));
            assertEquals(SealReport.Outcome.ALREADY_SEALED, again.buckets().get(0).outcome(), "idempotent");
            assertArrayEquals(before, Files.readAllBytes(dir.resolve("lock")));
            assertEquals(List.of("from a", "from b", "and again"), texts(b, ReadRequest.all("log").sealedOnly()));
        }
    }

    @Test
    void racingSealersProduceExactlyOneLockAndAgreeOnIt() throws Exception {
        Path root = freshDir("seal-race");
        ManualTimeSource time = StoreFixture.clock();
        int stores = 4;
        List<FileBagStore> all = new ArrayList<>();
        try {
            for (int i = 0; i < stores; i++) {
                all.add(FileBagStore.open(config(root).build(), time));
            }
            for (int i = 0; i < stores; i++) {
                for (int k = 0; k < 5; k++) {
                    all.get(i).append(req("log", List.of(), "w" + i + "-" + k).at(T0.plusMillis(100L * k + i)));
                }
            }
            time.advance(Duration.ofSeconds(5));
            ExecutorService pool = Executors.newFixedThreadPool(8);
            CountDownLatch go = new CountDownLatch(1);
            List<Future<SealReport>> reports = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                FileBagStore s = all.get(t % stores);
                reports.add(pool.submit(() -> {
                    go.await();
                    return s.sealThrough("log", T0.minusSeconds(1), T0.plusSeconds(2));
                }));
            }
            go.countDown();
            int sealedByUs = 0;
            Set<Long> bytes = new HashSet<>();
            for (Future<SealReport> f : reports) {
                SealReport r = f.get();
                assertEquals(3, r.buckets().size());
                SealReport.BucketSeal mid = r.buckets().get(1);
                if (mid.outcome() == SealReport.Outcome.SEALED) {
                    sealedByUs++;
                }
                bytes.add(mid.bytes());
            }
            pool.shutdown();
            assertEquals(1, sealedByUs, "exactly one sealer's lock file was linked");
            assertEquals(1, bytes.size(), "every sealer reports the same lock file");
            LogChecker.Result c = LogChecker.check(root.resolve("log"));
            assertEquals(List.of(), c.violations());
            assertEquals(3, c.buckets().size());
            assertTrue(c.allSealed());
            assertEquals(20, c.ordered().size());
            assertEquals(c.ordered().stream().map(LogChecker.Msg::text).toList(),
                    texts(all.get(0), ReadRequest.all("log")));
        } finally {
            for (FileBagStore s : all) {
                s.close();
            }
        }
    }

    @Test
    void theMetronomeSealsBucketsPastGraceInTheLogsItWritesTo() throws Exception {
        Path root = freshDir("seal-metronome");
        ManualTimeSource time = StoreFixture.clock();
        FileBagStore ticking = FileBagStore.open(config(root).metronome(true).build(), time);
        try (FileBagStore quiet = FileBagStore.open(config(root).build(), time)) {
            ticking.append(req("log", List.of(), "mine"));
            // Another writer's bucket in the same log, which the metronome finds by listing.
            time.set(T0.plusMillis(1_200));
            quiet.append(req("log", List.of(), "theirs"));
            // A log the ticking store never wrote to is not its business.
            quiet.append(req("other", List.of(), "elsewhere"));
            Path mine = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0));
            Path theirs = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0.plusSeconds(1)));
            Path other = LogGeometry.bucketDir(root.resolve("other"), Micros.of(T0.plusSeconds(1)));

            time.set(T0.plusMillis(2_900));
            ticking.runMetronome();
            assertFalse(Files.exists(mine.resolve("lock")), "not before end + grace");

            time.set(T0.plusMillis(3_100));
            ticking.runMetronome();
            assertTrue(Files.exists(mine.resolve("lock")), "sealed once due");
            assertFalse(Files.exists(theirs.resolve("lock")));

            time.set(T0.plusMillis(4_100));
            ticking.runMetronome();
            assertTrue(Files.exists(theirs.resolve("lock")), "another writer's bucket in the same log");
            assertFalse(Files.exists(other.resolve("lock")), "only logs this store writes to");
            assertTrue(ticking.stats().sealed() >= 2);

            ticking.close();
            Path later = LogGeometry.bucketDir(root.resolve("log"), Micros.of(T0.plusSeconds(6)));
            time.set(T0.plusSeconds(6));
            quiet.append(req("log", List.of(), "after close"));
            time.set(T0.plusSeconds(20));
            assertFalse(Files.exists(later.resolve("lock")), "a closed metronome seals nothing");
        } finally {
            ticking.close();
        }
    }
}
