package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.time.ManualTimeSource;

/** B9: two JVMs on one machine never share a writer log; the identity is guarded by a machine-local lock. */
class WriterExclusionTest {

    @Test
    void twoProcessesGetDistinctIdentitiesAndAnExplicitOneIsExclusive() throws Exception {
        Path root = freshDir("exclusion");
        Path locks = freshDir("exclusion-locks");
        Path err = root.resolve("child.err");
        ManualTimeSource time = StoreFixture.clock();
        try (Children.Child child = Children.start(err, "hold", root.toString(), locks.toString(), "-");
                Children.Child named = Children.start(err, "hold", root.toString(), locks.toString(), "fixed-writer")) {
            String line = child.await(l -> l.startsWith("WRITER ") || l.startsWith("FAILED "), 30_000);
            assertNotNull(line, "the child opened its store");
            String childId = line.substring("WRITER ".length());
            assertTrue(childId.endsWith("-0"), "the lowest free instance: " + childId);
            assertEquals("WRITER fixed-writer", named.await(l -> l.startsWith("WRITER ") || l.startsWith("FAILED "),
                    30_000));

            try (FileBagStore mine = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).build(), time)) {
                assertNotEquals(childId, mine.writerId(), "another JVM holds " + childId);
                assertEquals(childId.substring(0, childId.length() - 1) + "1", mine.writerId());
            }
            StoreUnavailableException e = assertThrows(StoreUnavailableException.class, () -> FileBagStore.open(
                    StoreFixture.config(root).localLockDir(locks).writerId("fixed-writer").build(), time));
            assertTrue(e.getMessage().contains("'fixed-writer' is in use"), e.getMessage());

            named.tell("bye");
            named.process.getOutputStream().close();
            assertEquals(0, named.waitFor(30_000));
            try (FileBagStore now = FileBagStore.open(StoreFixture.config(root).localLockDir(locks)
                    .writerId("fixed-writer").build(), time)) {
                assertEquals("fixed-writer", now.writerId(), "released when the other process closed its store");
            }

            // A process killed with -9 releases its identity too (the OS drops its locks).
            child.kill();
            try (FileBagStore after = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).build(), time)) {
                assertEquals(childId, after.writerId());
            }
        }
    }

    @Test
    void storesInOneJvmAreExcludedToo() throws Exception {
        Path root = freshDir("exclusion-jvm");
        Path locks = freshDir("exclusion-jvm-locks");
        ManualTimeSource time = StoreFixture.clock();
        try (FileBagStore a = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).host("node.example")
                .build(), time);
                FileBagStore b = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).host("node.example")
                        .build(), time)) {
            assertEquals("node-example-0", a.writerId());
            assertEquals("node-example-1", b.writerId());
        }
    }
}
