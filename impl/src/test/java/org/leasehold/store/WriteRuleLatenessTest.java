package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The committer's half of the write rule ({@link LatenessCheck}) at the exact edges of its windows (default geometry:
 * bucket [T0, T0 + 1 s) is on time until T0 + 2.5 s and due at T0 + 3 s), before and after the write.
 */
class WriteRuleLatenessTest {

    private static Path bucketDir(Path root, long start) {
        return LogGeometry.bucketDir(root.resolve("log"), start);
    }

    @Test
    void aWriteFinishedExactlyWhenTheBucketStopsBeingOnTimeIsCheckedLateAndOneMicrosecondEarlierIsNot()
            throws Exception {
        Path root = freshDir("late-edge-on-time");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            store.append(req("log", List.of(), "first"));
            time.set(T0.plusMillis(2_500).minusNanos(1_000));
            store.append(req("log", List.of(), "on time").at(T0.plusMillis(400)));
            assertEquals(0, store.stats().lateChecks(), "1 µs before end + grace - clock error: on time");
            time.set(T0.plusMillis(2_500));
            Appended late = store.append(req("log", List.of(), "checked").at(T0.plusMillis(500)));
            assertEquals(1, store.stats().lateChecks(), "from end + grace - clock error the bucket is listed");
            assertEquals(T0.plusMillis(500), late.timestamp());
            assertEquals(List.of("first", "on time", "checked"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void aPrelockFoundExactlyWhenTheBucketStopsBeingOnTimeRefusesBeforeWriting() throws Exception {
        Path root = freshDir("late-edge-gate");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time)) {
            Appended first = store.append(req("log", List.of(), "first"));
            Path dir = bucketDir(root, Micros.of(T0));
            Files.createFile(dir.resolve(Names.PRELOCK));
            time.set(T0.plusMillis(2_500));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "refused").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.SEALED, e.reason(), "refused by the gate, before writing");
            assertEquals(first.length(), Files.size(dir.resolve(first.file())), "nothing was written");
            assertEquals(0, store.stats().lateChecks());
        }
    }

    @Test
    void aBucketThatBecomesDueBetweenTheRuleAndTheCommitterIsRefusedBeforeWriting() throws Exception {
        Path root = freshDir("late-edge-due");
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time, hooks)) {
            Appended first = store.append(req("log", List.of(), "first"));
            time.set(T0.plusMillis(2_900));
            hooks.afterEncode.set(() -> time.set(T0.plusSeconds(3)));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "paused").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.PAST_GRACE, e.reason());
            assertEquals(T0, e.bucketStart());
            assertTrue(e.getMessage().contains("ended at " + T0.plusSeconds(1) + " and its grace ran out at "
                    + T0.plusSeconds(3) + " (this process's clock reads " + T0.plusSeconds(3) + ")"), e.getMessage());
            Path dir = bucketDir(root, Micros.of(T0));
            assertEquals(first.length(), Files.size(dir.resolve(first.file())), "nothing was written");
            assertTrue(!Files.exists(dir.resolve(Names.LOCK)), "and the writer did not seal it");
        }
    }

    @Test
    void aWriteFinishedExactlyWhenTheBucketIsDueSealsItWithoutTheWrite() throws Exception {
        Path root = freshDir("late-edge-seal");
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore store = FileBagStore.open(config(root).build(), time, hooks)) {
            Appended first = store.append(req("log", List.of(), "first"));
            time.set(T0.plusMillis(2_600));
            hooks.afterWrite.set(() -> time.set(T0.plusSeconds(3)));
            BucketSealedException e = assertThrows(BucketSealedException.class,
                    () -> store.append(req("log", List.of(), "paused").at(T0.plusMillis(500))));
            assertEquals(BucketSealedException.Reason.LATE, e.reason());
            assertTrue(e.getMessage().contains("at offset " + first.length() + " of bucket "), e.getMessage());
            assertTrue(e.getMessage().contains("the lock file lists that file at " + first.length() + " bytes"),
                    e.getMessage());
            Path dir = bucketDir(root, Micros.of(T0));
            assertTrue(Files.exists(dir.resolve(Names.LOCK)), "the writer sealed the due bucket itself");
            assertEquals(List.of("first"), texts(store, ReadRequest.all("log")));
        }
    }

    @Test
    void aLateWriteWhoseBucketCannotBeSealedHasAnUnknownOutcomeNeverAnAcknowledgement() throws Exception {
        Path root = freshDir("late-read-only");
        String[] why = new String[1];
        Tmpfs mount = Tmpfs.mount(root, "size=1m", why);
        Assumptions.assumeTrue(mount != null, () -> why[0]);
        try {
            ManualTimeSource time = StoreFixture.clock();
            ScriptedHooks hooks = new ScriptedHooks();
            // Files closed after each batch, so that the file system can be made read-only under the writer.
            try (FileBagStore store = FileBagStore.open(config(root).flushPolicy(FlushPolicy.never()).build(), time,
                    hooks)) {
                store.append(req("log", List.of(), "first"));
                time.set(T0.plusMillis(2_600));
                hooks.afterWrite.set(() -> {
                    time.set(T0.plusSeconds(3));
                    try {
                        mount.remount("ro");
                    } catch (java.io.IOException | InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                });
                WriteOutcomeUnknownException e = assertThrows(WriteOutcomeUnknownException.class,
                        () -> store.append(req("log", List.of(), "late").at(T0.plusMillis(500))));
                assertTrue(e.getMessage().contains("was written late (this clock read " + T0.plusSeconds(3)
                        + ", on time until " + T0.plusMillis(2_500) + ") and checking whether sealing had begun failed"),
                        e.getMessage());
                assertTrue(e.getMessage().contains("could not seal bucket 2026/11/22/02/43/10.000000 of log 'log'"),
                        e.getMessage());
                assertTrue(e.getMessage().endsWith("read the bucket once it is sealed to find out"), e.getMessage());
                assertEquals(1, store.stats().lateChecks());
            }
        } finally {
            mount.close();
        }
    }
}
