package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.freshDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.check.LogChecker;
import org.leasehold.time.SystemTimeSource;

/**
 * Sealing races across processes on the real clock (100 ms buckets, 200 ms grace, 50 ms clock error): three writer
 * JVMs (four threads each, a third of their appends timed near the grace boundary) and two sealer JVMs that seal every
 * due bucket over and over, besides the writers' metronomes. Afterwards: every acknowledged append is readable, at the
 * file and offset its acknowledgement named; no refused append is; nothing past a lock file's sizes is returned; the
 * store's reader and the independent checker agree message by message.
 */
class SealingRaceProcessTest {

    @Test
    void acknowledgedWritesSurviveSealingRacesAndRefusedOnesNeverAppear() throws Exception {
        Path root = freshDir("race");
        Path locks = freshDir("race-locks");
        Path err = root.resolve("children.err");
        Files.createFile(err);
        int writers = 3;
        long millis = 2_500;
        List<Children.Child> kids = new ArrayList<>();
        Instant start;
        try (SystemTimeSource time = new SystemTimeSource("race-test")) {
            start = time.now();
            for (int i = 0; i < writers; i++) {
                kids.add(Children.start(err, "writer", root.toString(), locks.toString(), "race", "4",
                        Long.toString(millis), root.resolve("out-" + i + ".txt").toString()));
            }
            for (int i = 0; i < 2; i++) {
                kids.add(Children.start(err, "sealer", root.toString(), locks.toString(), "race",
                        Long.toString(millis + 500)));
            }
            for (Children.Child k : kids) {
                assertEquals(0, k.waitFor(120_000), () -> "a child failed: " + readQuietly(err));
            }

            Map<String, String> acked = new HashMap<>();
            Set<String> refused = new HashSet<>();
            long lateChecks = 0;
            for (int i = 0; i < writers; i++) {
                for (String l : Files.readAllLines(root.resolve("out-" + i + ".txt"))) {
                    String[] f = l.split(" ");
                    switch (f[0]) {
                        case "ACK" -> acked.put(f[1], f[2] + "@" + f[3]);
                        case "REFUSED" -> refused.add(f[1]);
                        case "STATS" -> lateChecks += Long.parseLong(f[1]);
                        default -> {
                            // UNKNOWN: in doubt; neither set.
                        }
                    }
                }
            }
            // Each of the 12 writer threads made at least MIN_PER_THREAD appends; a third aimed near the boundary.
            assertTrue(acked.size() > 200, "acknowledged: " + acked.size());
            assertTrue(lateChecks > 0, "some writes finished near the boundary and were checked as late");

            try (FileBagStore reader = FileBagStore.open(StoreChild.raceConfig(root, locks).metronome(false).build(),
                    time)) {
                // Seal everything the run touched, once it is all due.
                Instant through = time.now().plusMillis(1);
                Thread.sleep(StoreChild.WIDTH.plus(StoreChild.GRACE).toMillis() + 50);
                reader.sealThrough("race", start.minusSeconds(2), through);

                List<String> order = new ArrayList<>();
                Map<String, String> where = new HashMap<>();
                try (MessageStream s = reader.read(ReadRequest.all("race").sealedOnly())) {
                    Message m;
                    while ((m = s.next()) != null) {
                        String id = new String(m.payload(), StandardCharsets.UTF_8);
                        order.add(id);
                        where.put(id, m.file() + "@" + m.offset());
                    }
                    assertEquals(List.of(), s.problems(), "no torn tails or corruption");
                }
                for (Map.Entry<String, String> e : acked.entrySet()) {
                    assertEquals(e.getValue(), where.get(e.getKey()), "acknowledged " + e.getKey()
                            + " is readable where its acknowledgement said");
                }
                for (String r : refused) {
                    assertTrue(!where.containsKey(r), "refused " + r + " must not be readable");
                }

                LogChecker.Result c = LogChecker.check(root.resolve("race"));
                assertEquals(List.of(), c.violations());
                assertTrue(c.allSealed(), "every bucket is sealed");
                assertEquals(order, c.ordered().stream().map(LogChecker.Msg::text).toList(),
                        "the reader returns exactly what the lock files cover, in the checker's order");
                long beyond = 0;
                for (LogChecker.Bucket b : c.buckets()) {
                    for (Map.Entry<String, Long> f : b.fileSizes().entrySet()) {
                        Long listed = b.lock().sizes().get(f.getKey());
                        beyond += f.getValue() - (listed == null ? 0 : listed);
                    }
                }
                System.out.printf("race: %d acknowledged, %d refused, %d late checks, %d buckets, %d bytes past "
                        + "lock sizes%n", acked.size(), refused.size(), lateChecks, c.buckets().size(), beyond);
            }
        } finally {
            for (Children.Child k : kids) {
                k.close();
            }
        }
    }

    private static String readQuietly(Path p) {
        try {
            return Files.readString(p);
        } catch (java.io.IOException e) {
            return e.toString();
        }
    }
}
