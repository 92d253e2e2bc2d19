package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Appended;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.CompactionReport;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code log compact} and the segment rows of {@code log stats} on a real store written through {@code FileBagStore}
 * on a manual clock: log {@code orders} with one frame every 7 s for 176 s from {@link TestStore#T0} (02:43:10), every
 * bucket of that range sealed, so that one-minute segments cover 02:43 to 02:47. The JSON summary is checked against
 * the segment files on disk and the bucket directories {@code log stats} counts, and reads before and after compaction
 * are compared.
 */
class LogCompactTest {
    private static final Instant T0 = TestStore.T0;
    private static final Instant MINUTE = Instant.parse("2026-11-22T02:43:00Z");
    /** The clock of the compaction runs: with a 5-minute horizon, segments end at or before 02:48. */
    private static final Instant NOW = T0.plus(Duration.ofMinutes(10));

    private TestStore fx;
    private String root;
    private final Set<Appended> frames = new HashSet<>();

    @BeforeEach
    void write() throws Exception {
        fx = new TestStore(getClass().getSimpleName());
        root = fx.root.toString();
        for (int i = 0; i < 26; i++) {
            fx.clock.set(T0.plusSeconds(7L * i).plusMillis(1));
            List<org.leasehold.bag.LeaseStamp> leases = i % 5 == 0
                    ? List.of(TestStore.lease("account/" + (i % 3), 1), TestStore.lease("account/9", 2))
                    : List.of(TestStore.lease("account/" + (i % 3), 1));
            frames.add(fx.append("orders", leases, "payload-" + i, "second-" + i));
        }
        fx.clock.set(T0.plusSeconds(200));
        fx.store.sealThrough("orders", T0, T0.plusSeconds(176));
        fx.clock.set(NOW);
    }

    @AfterEach
    void close() {
        fx.close();
    }

    private CliRun run(String... args) {
        return CliRun.of(fx.clock, args);
    }

    private List<Path> segmentFiles() throws IOException {
        Path dir = fx.root.resolve("orders").resolve("segments");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".segment")).sorted().toList();
        }
    }

    private static String segmentName(Instant from, Instant to) {
        return Micros.of(from) + "-" + Micros.of(to) + ".segment";
    }

    @Test
    void compactPublishesOneSegmentASpanAndReadsReturnTheSameMessages() throws Exception {
        List<String> allBefore = run("log", "cat", "--store", root, "--log", "orders", "--json").lines();
        List<String> namedBefore = run("log", "cat", "--store", root, "--log", "orders", "--json", "--name",
                "account/9").lines();
        assertEquals(2 * 26, allBefore.size());
        assertEquals(2 * 6, namedBefore.size());
        Instant limit = MINUTE.plus(Duration.ofMinutes(5));
        long buckets = run("log", "stats", "--store", root, "--log", "orders", "--to", limit.toString(), "--json")
                .json().get(0).get("buckets").asLong();
        assertEquals(176, buckets);

        CliRun r = run("log", "compact", "--store", root, "--log", "orders", "--horizon", "5m", "--segment-span", "1m",
                "--json");
        assertEquals(0, r.code(), r::toString);
        assertEquals("", r.err(), "no progress bar when standard error is not a terminal");
        assertEquals(1, r.lines().size(), r::toString);
        JsonNode s = r.json().get(0);
        assertEquals("orders", s.get("log").asText());
        assertEquals(300_000_000L, s.get("horizonMicros").asLong());
        assertEquals(60_000_000L, s.get("segmentSpanMicros").asLong());
        assertEquals(limit.toString(), s.get("through").asText());
        List<String> want = new ArrayList<>();
        for (int m = 0; m < 4; m++) {
            want.add(segmentName(MINUTE.plus(Duration.ofMinutes(m)), MINUTE.plus(Duration.ofMinutes(m + 1))));
        }
        List<String> published = new ArrayList<>();
        s.get("publishedSegments").forEach(n -> published.add(n.asText()));
        assertEquals(want, published);
        assertEquals(4, s.get("published").asInt());
        List<Path> onDisk = segmentFiles();
        assertEquals(want, onDisk.stream().map(p -> p.getFileName().toString()).toList());
        long bytes = 0;
        for (Path p : onDisk) {
            bytes += Files.size(p);
        }
        assertEquals(bytes, s.get("bytes").asLong());
        assertEquals(buckets, s.get("buckets").asLong());
        assertEquals(frames.size(), s.get("frames").asLong());
        assertEquals(0, s.get("lost").asInt());
        assertEquals(0, s.get("alreadyPublished").asInt());
        assertEquals(0, s.get("preparedRemoved").asInt());
        assertEquals(0, s.get("tookMicros").asLong(), "the manual clock did not move");

        assertEquals(allBefore, run("log", "cat", "--store", root, "--log", "orders", "--json").lines());
        assertEquals(namedBefore, run("log", "cat", "--store", root, "--log", "orders", "--json", "--name", "account/9")
                .lines());

        JsonNode stats = run("log", "stats", "--store", root, "--log", "orders", "--json").json().get(0);
        assertEquals(4, stats.get("segments").asLong());
        assertEquals(MINUTE.toString(), stats.get("segmentsFrom").asText());
        assertEquals(MINUTE.plus(Duration.ofMinutes(4)).toString(), stats.get("segmentsTo").asText());
        assertEquals(240_000_000L, stats.get("segmentsCoveredMicros").asLong());
        assertEquals(bytes, stats.get("segmentBytes").asLong());
        assertEquals(0, stats.get("preparedSegments").asLong());
        CliRun text = run("log", "stats", "--store", root, "--log", "orders");
        assertTrue(text.out().contains("segments           4 (" + MINUTE + " to " + MINUTE.plus(Duration.ofMinutes(4))
                + ", PT4M covered), " + bytes + " bytes\n"), text::toString);
    }

    @Test
    void aSecondRunPublishesNothingAndRemovesPreparedLeftovers() throws Exception {
        assertEquals(0, run("log", "compact", "--store", root, "--log", "orders", "--horizon", "5m", "--segment-span",
                "1m").code());
        List<Path> before = segmentFiles();
        // What a compactor that crashed after linking leaves beside a published segment.
        Path leftover = fx.root.resolve("orders").resolve("segments").resolve(segmentName(MINUTE,
                MINUTE.plus(Duration.ofMinutes(1))) + ".crashed-writer.0123456789abcdef");
        Files.write(leftover, new byte[] {1, 2, 3});
        assertEquals(1, run("log", "stats", "--store", root, "--log", "orders", "--json").json().get(0)
                .get("preparedSegments").asLong());

        CliRun again = run("log", "compact", "--store", root, "--log", "orders", "--horizon", "5m", "--segment-span",
                "1m");
        assertEquals(0, again.code(), again::toString);
        assertEquals(List.of("compacted log 'orders' through " + MINUTE.plus(Duration.ofMinutes(5)) + " (horizon PT5M, "
                + "segments of PT1M): 0 segments published, 0 lost to another compactor, 4 already published; 0 buckets, "
                + "0 frames, 0 bytes written; 1 prepared files removed; took PT0S"), again.lines());
        assertFalse(Files.exists(leftover));
        assertEquals(before, segmentFiles());
        for (Path p : before) {
            assertTrue(Files.size(p) > 0, p::toString);
        }

        JsonNode third = run("log", "compact", "--store", root, "--log", "orders", "--horizon", "5m", "--segment-span",
                "1m", "--json").json().get(0);
        assertEquals(0, third.get("published").asInt());
        assertEquals(0, third.get("publishedSegments").size());
        assertEquals(4, third.get("alreadyPublished").asInt());
        assertEquals(0, third.get("preparedRemoved").asInt());
    }

    @Test
    void theDefaultsAreTheStoresOneHourHorizonAndSpanAndAWriterIdentityIsTakenWhileItRuns() throws Exception {
        // The surefire JVM's java.io.tmpdir is target/, where a store without localLockDir keeps its writer locks.
        Path locks = Paths.get(System.getProperty("java.io.tmpdir"), "leasehold-writers");
        TestStore.deleteTree(locks);
        // 02:53:10: the span 02:00-03:00 has not ended an hour ago.
        JsonNode early = run("log", "compact", "--store", root, "--log", "orders", "--json").json().get(0);
        assertEquals(0, early.get("published").asInt());
        assertEquals(3_600_000_000L, early.get("horizonMicros").asLong());
        assertEquals(3_600_000_000L, early.get("segmentSpanMicros").asLong());
        assertEquals(List.of(), segmentFiles());
        assertTrue(Files.exists(locks), "compaction takes a writer identity while it runs");

        fx.clock.set(Instant.parse("2026-11-22T04:00:00Z"));
        JsonNode s = run("log", "compact", "--store", root, "--log", "orders", "--json").json().get(0);
        assertEquals(Instant.parse("2026-11-22T03:00:00Z").toString(), s.get("through").asText());
        String name = segmentName(Instant.parse("2026-11-22T02:00:00Z"), Instant.parse("2026-11-22T03:00:00Z"));
        assertEquals(name, s.get("publishedSegments").get(0).asText());
        assertEquals(List.of(name), segmentFiles().stream().map(p -> p.getFileName().toString()).toList());
        assertEquals(176, s.get("buckets").asLong());
        assertEquals(frames.size(), s.get("frames").asLong());
    }

    @Test
    void errorsAreOneLineWithTheRightExitCode() throws Exception {
        CliRun unknown = run("log", "compact", "--store", root, "--log", "nosuch");
        assertEquals(1, unknown.code(), unknown::toString);
        assertEquals(List.of("leasehold: log 'nosuch' does not exist under " + root + ": nothing was ever appended to it "
                + "or sealed in it. Check the name ('leasehold log list --store DIR' shows the logs)"), unknown.errLines());
        assertFalse(Files.exists(fx.root.resolve("nosuch")), "compaction created the log");

        CliRun missing = run("log", "compact", "--store", fx.root.resolve("absent").toString(), "--log", "orders");
        assertEquals(1, missing.code(), missing::toString);
        assertEquals(List.of("leasehold: the bag store's root " + fx.root.resolve("absent") + " does not exist: create it "
                + "(or mount the shared file system there) before opening the store"), missing.errLines());
        assertFalse(Files.exists(fx.root.resolve("absent")), "compaction created the store");

        // The log's grace (2 s by default) plus clock error (500 ms by default): 2.5 s, refused as too short.
        CliRun shortHorizon = run("log", "compact", "--store", root, "--log", "orders", "--horizon", "2500ms");
        assertEquals(2, shortHorizon.code(), shortHorizon::toString);
        assertEquals(List.of("leasehold: --horizon PT2.5S is not longer than the grace plus clock error of log 'orders' "
                + "(PT2.5S): younger buckets may still be written to or sealed; give a longer --horizon",
                "Try 'leasehold log compact --help' for more information."), shortHorizon.errLines());
        assertEquals(List.of(), segmentFiles());
        assertFalse(Files.exists(fx.root.resolve("orders").resolve("segments")), "a refused compaction wrote nothing");

        CliRun badHorizon = run("log", "compact", "--store", root, "--log", "orders", "--horizon", "soon");
        assertEquals(2, badHorizon.code(), badHorizon::toString);
        assertEquals(List.of("leasehold: Invalid value for option '--horizon': 'soon' is not a duration: give 500ms, 90s, "
                + "10m, 1h, 1d or ISO-8601 such as PT1H", "Try 'leasehold log compact --help' for more information."),
                badHorizon.errLines());

        CliRun badSpan = run("log", "compact", "--store", root, "--log", "orders", "--segment-span", "7m");
        assertEquals(2, badSpan.code(), badSpan::toString);
        assertTrue(badSpan.errLines().get(0).startsWith("leasehold: --segment-span: segmentSpan is PT7M; "),
                badSpan::toString);

        CliRun noLog = run("log", "compact", "--store", root);
        assertEquals(2, noLog.code());
        assertEquals("leasehold: Missing required option: '--log=NAME'", noLog.errLines().get(0));
    }

    @Test
    void theProgressBarCountsSpansToTheEnd() throws Exception {
        ByteArrayOutputStream drawn = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(drawn, true, StandardCharsets.UTF_8);
        List<Long> totals = new ArrayList<>();
        CompactionReport r;
        try (FileBagStore compactor = FileBagStore.open(BagStoreConfig.builder(fx.root)
                .localLockDir(TestStore.BASE.resolve("writer-locks")).metronome(false)
                .segmentSpan(Duration.ofMinutes(1)).build(), fx.clock);
                RangeProgress progress = new RangeProgress(total -> {
                    totals.add(total);
                    return Progress.bar(out, "compacting orders", total, "spans");
                })) {
            r = compactor.compact("orders", Duration.ofMinutes(5), progress);
            assertEquals(Micros.of(MINUTE), progress.from);
            assertEquals(Micros.of(MINUTE.plus(Duration.ofMinutes(5))), progress.limit);
        }
        assertEquals(4, r.published().size());
        // 02:43 to 02:48: four spans with buckets, one without.
        assertEquals(List.of(5L), totals);
        String text = drawn.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("compacting orders") && text.contains("100%") && text.contains("5/5 spans"), text);
    }
}
