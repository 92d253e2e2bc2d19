package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.SystemTimeSource;

/**
 * {@code kill -9} of a writer JVM in the middle of a batch: every acknowledged message stays readable, the torn tail
 * is dropped whole (and reported), and a restarted writer with the same identity never appends after it.
 */
class CrashProcessTest {

    private static String id(Message m) {
        byte[] p = m.payload();
        int n = 0;
        while (n < p.length && p[n] != 0) {
            n++;
        }
        return new String(p, 0, n, StandardCharsets.UTF_8);
    }

    private static void collect(List<String> lines, Set<String> acked, Set<String> sent) {
        for (String l : lines) {
            if (l.startsWith("ACK ")) {
                acked.add(l.substring(4));
            } else if (l.startsWith("SENT ")) {
                sent.add(l.substring(5));
            }
        }
    }

    @Test
    void killedMidBatchLosesNothingAcknowledgedAndItsTornTailIsDropped() throws Exception {
        Path root = freshDir("crash");
        Path locks = freshDir("crash-locks");
        Path err = root.resolve("children.err");
        Files.createFile(err);
        Set<String> acked = new HashSet<>();
        Set<String> sent = new HashSet<>();
        String writerId;
        String tornFile;
        try (SystemTimeSource time = new SystemTimeSource("crash-test")) {
            Instant start = time.now();
            // 1. Torn on purpose: half of batch 40 is written and forced, then the process is killed.
            try (Children.Child c = Children.start(err, "crash", root.toString(), locks.toString(), "log", "8", "40")) {
                String torn = c.await(l -> l.startsWith("TORN "), 60_000);
                assertNotNull(torn, "the child tore a batch");
                tornFile = torn.substring(5);
                c.kill();
                collect(c.lines(), acked, sent);
                writerId = c.lines().get(0).substring("WRITER ".length());
            }
            // 2. Killed at a random moment (probably mid-batch: eight threads keep the committer busy).
            try (Children.Child c = Children.start(err, "crash", root.toString(), locks.toString(), "log", "8", "0")) {
                assertTrue(c.awaitCount(l -> l.startsWith("ACK "), 20, 60_000), "20 acknowledgements before the kill");
                Thread.sleep(100 + (long) (Math.random() * 300));
                c.kill();
                collect(c.lines(), acked, sent);
                assertEquals("WRITER " + writerId, c.lines().get(0), "the killed writer's identity was free again");
            }
            assertTrue(acked.size() >= 40, "acknowledged before the kills: " + acked.size());

            try (FileBagStore reader = FileBagStore.open(StoreFixture.config(root).localLockDir(locks).build(), time)) {
                Thread.sleep(3_100);
                reader.sealThrough("log", start.minusSeconds(1), time.now().minusSeconds(3));
                Set<String> read = new HashSet<>();
                List<ReadProblem> problems;
                try (MessageStream s = reader.read(ReadRequest.all("log"))) {
                    Message m;
                    while ((m = s.next()) != null) {
                        assertTrue(read.add(id(m)), "no duplicates");
                    }
                    problems = s.problems();
                }
                for (String a : acked) {
                    assertTrue(read.contains(a), "acknowledged " + a + " is readable");
                }
                Set<String> unsent = new HashSet<>(read);
                unsent.removeAll(sent);
                assertEquals(Set.of(), unsent, "only appended messages are read (" + sent.size() + " sent)");
                assertTrue(problems.stream().anyMatch(p -> p.kind() == ReadProblem.Kind.TORN_TAIL
                        && p.file().equals(tornFile)), "the torn batch is reported: " + problems);
                for (ReadProblem p : problems) {
                    assertEquals(ReadProblem.Kind.TORN_TAIL, p.kind(), p.toString());
                }
                LogChecker.Result c = LogChecker.check(root.resolve("log"));
                assertEquals(List.of(), c.violations(), "torn tails only at the end of a file");
                assertTrue(c.buckets().stream().mapToInt(LogChecker.Bucket::tornTails).sum() >= 1);
                List<String> files = new ArrayList<>();
                for (LogChecker.Bucket b : c.buckets()) {
                    files.addAll(b.fileSizes().keySet());
                }
                assertTrue(files.stream().allMatch(f -> f.startsWith(writerId + ".")), files.toString());
            }
        }
    }
}
