package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.lease;
import static org.leasehold.store.StoreFixture.req;
import static org.leasehold.store.StoreFixture.texts;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ReadRequest;
import org.leasehold.fs.PolicedFileSystem;
import org.leasehold.time.ManualTimeSource;

/**
 * Invariant 8: the store uses only NFS-safe operations. The whole store (appends in several buckets, group commit,
 * a new data file after a timestamp goes back, late writes, sealing by the metronome and by hand, a successor's
 * sealing of missing buckets, reads of sealed and unsealed buckets, the interval flush policy's re-opens, compaction
 * into a segment and reads through it, retention of the compacted buckets (their files unlinked, their directories
 * and the emptied time directories above them removed) and reads after it) runs over a
 * file system that records every call and refuses anything outside the allowed list.
 */
class NfsSafeOperationsTest {
    private static final Set<String> ALLOWED = Set.of("LIST", "MKDIR", "CREATE_NEW", "LINK", "OPEN_WRITE", "OPEN_READ",
            "CHMOD", "UNLINK", "UNLINK_BUCKET", "RMDIR");

    @Test
    void theStoreUsesOnlyTheAllowedOperations() throws Exception {
        Path real = freshDir("nfs-safe-store");
        PolicedFileSystem fs = new PolicedFileSystem(false);
        Path root = fs.wrap(real);
        ManualTimeSource time = StoreFixture.clock();
        ScriptedHooks hooks = new ScriptedHooks();
        try (FileBagStore store = FileBagStore.open(config(root).metronome(true).build(), time, hooks);
                FileBagStore other = FileBagStore.open(config(root).flushPolicy(FlushPolicy.interval(
                        Duration.ofMillis(100))).build(), time)) {
            LeaseStamp l = lease("acct/1", 1);
            for (int i = 0; i < 5; i++) {
                store.append(req("log", List.of(l), "a" + i));
                other.append(req("log", List.of(l), "b" + i));
                time.advance(Duration.ofMillis(300));
            }
            store.append(req("log", List.of(l), "back in time").at(T0.plusMillis(1_400)));
            time.advance(Duration.ofMillis(200));
            texts(store, ReadRequest.all("log"));
            // A late write finding its bucket sealed meanwhile.
            hooks.beforeWrite.set(() -> {
                time.set(T0.plusMillis(4_200));
                try {
                    other.sealThrough("log", T0.plusSeconds(1), T0.plusSeconds(1).plusMillis(1));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            assertThrows(BucketSealedException.class, () -> store.append(req("log", List.of(l), "late")
                    .at(T0.plusMillis(1_900))));
            time.set(T0.plusSeconds(8));
            store.runMetronome();
            other.sealThrough("log", T0, T0.plusSeconds(3));
            Instant deadline = T0.plusSeconds(4);
            other.sealForSuccessor("log", deadline);
            List<String> got = texts(store, ReadRequest.all("log"));
            assertEquals(11, got.size(), got.toString());
            // Compaction (segments written, linked, prepared files unlinked) and reads through the segment.
            ReadRequest first = ReadRequest.all("log").underAnyOf(Set.of("acct/1")).between(T0, T0.plusMillis(1));
            List<String> firstTexts = texts(store, first);
            time.set(T0.plusSeconds(3_600));
            assertEquals(1, other.compact("log", Duration.ofSeconds(3)).published().size());
            assertEquals(got, texts(store, ReadRequest.all("log")));
            assertEquals(List.of("a0", "b0"), firstTexts);
            assertEquals(firstTexts, texts(store, first));
            // Retention: the first run marks the segment, one after the delay removes its buckets' files.
            try (FileBagStore retiring = FileBagStore.open(config(root).writerId("retire").metronome(false)
                    .removeCompactedBuckets(true).retentionDelay(Duration.ofSeconds(10)).build(), time)) {
                assertEquals(0, retiring.compact("log", Duration.ofSeconds(3)).bucketsRemoved());
                time.advance(Duration.ofSeconds(11));
                assertTrue(retiring.compact("log", Duration.ofSeconds(3)).bucketsRemoved() > 0);
            }
            assertEquals(got, texts(store, ReadRequest.all("log")));
            assertEquals(firstTexts, texts(store, first));
        }
        assertEquals(List.of(), fs.violations(), "refused operations");
        Set<String> kinds = fs.kinds();
        assertTrue(ALLOWED.containsAll(kinds), "operations outside the allowed list: " + kinds);
        assertEquals(ALLOWED, kinds, "the scenario exercised every allowed operation");
        for (String op : fs.operations()) {
            assertTrue(op.contains(real.toString()), "every call went to the store's root: " + op);
        }
    }
}
