package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Every {@code log} command on a real store written through {@code FileBagStore} on a manual clock: six one-second
 * buckets of log {@code orders} (the first four sealed, the last two not), an empty log {@code empty} and a stray
 * file at the root. JSON output is parsed and checked field by field against what was appended.
 */
class LogCommandsTest {
    private static final Instant T0 = TestStore.T0;

    private TestStore fx;
    private String root;

    @BeforeEach
    void write() throws Exception {
        fx = new TestStore(getClass().getSimpleName());
        root = fx.root.toString();
        for (int i = 0; i < 12; i++) {
            fx.clock.set(T0.plusMillis(500L * i + 1));
            fx.append("orders", List.of(TestStore.lease("account/" + (i % 3), 1 + i % 3)), "payload-" + i);
            if (i == 4) {
                fx.clock.set(T0.plusMillis(2_250));
                fx.append("orders", List.of(TestStore.lease("account/0", 1), TestStore.lease("account/1", 2)), "both-a",
                        "both-b");
                fx.append("orders", List.of(), new byte[] {(byte) 0xff, 0, 1}, new byte[0]);
            }
        }
        fx.store.createLog("empty");
        Files.writeString(fx.root.resolve("README.txt"), "not a log");
        fx.clock.set(T0.plusSeconds(7));
        fx.store.sealThrough("orders", T0, T0.plusSeconds(4));
    }

    @AfterEach
    void close() {
        fx.close();
    }

    private CliRun run(String... args) {
        return CliRun.of(fx.clock, args);
    }

    @Test
    void listNamesTheLogsSortedAndNothingElse() throws Exception {
        CliRun r = run("log", "list", "--store", root);
        assertEquals(0, r.code(), r::toString);
        assertEquals(List.of("empty", "orders"), r.lines());
        assertEquals("", r.err());
        List<JsonNode> json = run("log", "list", "--store", root, "--json").json();
        assertEquals(2, json.size());
        assertEquals("empty", json.get(0).get("log").asText());
        assertEquals("orders", json.get(1).get("log").asText());
    }

    @Test
    void catJsonGivesEveryMessageWithItsFieldsInReadOrder() throws Exception {
        CliRun r = run("log", "cat", "--store", root, "--log", "orders", "--json");
        assertEquals(0, r.code(), r::toString);
        assertEquals("", r.err());
        List<JsonNode> got = r.json();
        List<TestStore.Expected> want = fx.expected("orders");
        assertEquals(16, want.size());
        assertEquals(want.size(), got.size(), r::toString);
        Instant sealedUntil = T0.plusSeconds(4);
        for (int i = 0; i < want.size(); i++) {
            check(want.get(i), got.get(i), want.get(i).at().timestamp().isBefore(sealedUntil));
        }
    }

    private static void check(TestStore.Expected e, JsonNode m, boolean sealed) {
        String where = "message " + m;
        assertEquals(e.log(), m.get("log").asText(), where);
        assertEquals(e.at().bucket().toString(), m.get("bucket").asText(), where);
        assertEquals(e.at().timestamp().toString(), m.get("timestamp").asText(), where);
        assertEquals(Micros.of(e.at().timestamp()), m.get("timestampMicros").asLong(), where);
        assertEquals(e.at().writer(), m.get("writer").asText(), where);
        assertEquals(e.at().file(), m.get("file").asText(), where);
        assertEquals(e.at().offset(), m.get("offset").asLong(), where);
        assertEquals(e.index(), m.get("index").asInt(), where);
        assertEquals(sealed, m.get("sealed").asBoolean(), where);
        assertEquals(e.leases().size(), m.get("leases").size(), where);
        for (int j = 0; j < e.leases().size(); j++) {
            LeaseStamp l = e.leases().get(j);
            JsonNode jl = m.get("leases").get(j);
            assertEquals(l.name(), jl.get("name").asText(), where);
            assertEquals(l.generation(), jl.get("generation").asLong(), where);
            assertEquals("", jl.get("witness").asText(), where);
        }
        assertEquals(e.payload().length, m.get("payloadLength").asInt(), where);
        assertArrayEquals(e.payload(), Base64.getDecoder().decode(m.get("payload").asText()), where);
        if (e.payload().length > 0 && (e.payload()[0] & 0xff) == 0xff) {
            assertTrue(m.get("text").isNull(), where);
        } else {
            assertEquals(new String(e.payload(), StandardCharsets.UTF_8), m.get("text").asText(), where);
        }
    }

    @Test
    void catFiltersByNameAndTimeAbsoluteOrRelative() throws Exception {
        List<TestStore.Expected> all = fx.expected("orders");
        List<JsonNode> named = run("log", "cat", "--store", root, "--log", "orders", "--json", "--name", "account/1")
                .json();
        List<String> want = new ArrayList<>();
        for (TestStore.Expected e : all) {
            if (e.leases().stream().anyMatch(l -> l.name().equals("account/1"))) {
                want.add(new String(e.payload(), StandardCharsets.UTF_8));
            }
        }
        assertEquals(want, named.stream().map(n -> n.get("text").asText()).toList());
        assertEquals(6, want.size());

        // [T0 + 1 s, T0 + 3 s): the clock reads T0 + 7 s, so -6s is T0 + 1 s.
        CliRun ranged = run("log", "cat", "--store", root, "--log", "orders", "--json", "--from", "-6s", "--to",
                T0.plusSeconds(3).toString());
        List<String> inRange = new ArrayList<>();
        for (TestStore.Expected e : all) {
            Instant t = e.at().timestamp();
            if (!t.isBefore(T0.plusSeconds(1)) && t.isBefore(T0.plusSeconds(3))) {
                inRange.add(e.at().timestamp() + "#" + e.index());
            }
        }
        assertEquals(inRange, ranged.json().stream().map(n -> n.get("timestamp").asText() + "#" + n.get("index").asInt())
                .toList());
        assertEquals(8, inRange.size());

        List<JsonNode> sealed = run("log", "cat", "--store", root, "--log", "orders", "--json", "--sealed-only").json();
        assertEquals(12, sealed.size());
        assertTrue(sealed.stream().allMatch(n -> n.get("sealed").asBoolean()));
    }

    @Test
    void catTextIsOneTabSeparatedLineAMessage() {
        CliRun r = run("log", "cat", "--store", root, "--log", "orders");
        assertEquals(0, r.code(), r::toString);
        List<String> lines = r.lines();
        assertEquals(16, lines.size());
        TestStore.Expected first = fx.expected("orders").get(0);
        assertEquals(first.at().timestamp() + "\tsealed\t" + first.at().writer() + "\taccount/0@1\tpayload-0", lines.get(0));
        assertTrue(lines.contains(fx.expected("orders").stream().filter(e -> e.payload().length == 3).findFirst()
                .orElseThrow().at().timestamp() + "\tsealed\t" + first.at().writer() + "\t-\tbase64:/wAB"), r::toString);
        assertTrue(lines.get(15).contains("\ttentative\t"), lines.get(15));
    }

    @Test
    void statsSurveysBucketsFilesBytesAndSealLag() throws Exception {
        CliRun r = run("log", "stats", "--store", root, "--log", "orders", "--json");
        assertEquals(0, r.code(), r::toString);
        JsonNode s = r.json().get(0);
        assertEquals("orders", s.get("log").asText());
        assertEquals(1_000_000, s.get("bucketWidthMicros").asLong());
        assertEquals(2_000_000, s.get("graceMicros").asLong());
        assertEquals(500_000, s.get("maxClockErrorMicros").asLong());
        assertEquals(6, s.get("buckets").asLong());
        assertEquals(4, s.get("sealedBuckets").asLong());
        assertEquals(2, s.get("unsealedBuckets").asLong());
        // Bucket T0 + 4 s is due at T0 + 7 s (end plus grace), the clock's time; T0 + 5 s is not yet.
        assertEquals(1, s.get("dueUnsealedBuckets").asLong());
        assertEquals(6, s.get("dataFiles").asLong());
        assertEquals(fx.dataBytes("orders"), s.get("bytes").asLong());
        assertEquals(s.get("bytes").asLong(), s.get("sealedBytes").asLong() + s.get("unsealedBytes").asLong());
        assertEquals(0, s.get("refusedBytes").asLong());
        assertEquals(T0.toString(), s.get("firstBucket").asText());
        assertEquals(T0.plusSeconds(5).toString(), s.get("lastBucket").asText());
        assertEquals(T0.plusSeconds(4).toString(), s.get("newestSealedEnd").asText());
        assertEquals(T0.plusSeconds(4).toString(), s.get("oldestUnsealed").asText());
        assertEquals(3_000_000, s.get("sealLagMicros").asLong());
        assertEquals(T0.plusSeconds(7).toString(), s.get("surveyedAt").asText());

        CliRun text = run("log", "stats", "--store", root, "--log", "orders");
        assertTrue(text.out().contains("seal lag           PT3S"), text::toString);
        assertTrue(text.out().contains("buckets            6 (4 sealed, 2 unsealed, of which 1 due)"), text::toString);

        JsonNode empty = run("log", "stats", "--store", root, "--log", "empty", "--json").json().get(0);
        assertEquals(0, empty.get("buckets").asLong());
        assertTrue(empty.get("sealLagMicros").isNull());
        assertTrue(empty.get("firstBucket").isNull());
    }

    @Test
    void sealSealsThroughAnInstantAndReportsIt() throws Exception {
        fx.clock.set(T0.plusSeconds(9));
        CliRun r = run("log", "seal", "--store", root, "--log", "orders", "--through", T0.plusSeconds(7).toString(),
                "--json", "--list");
        assertEquals(0, r.code(), r::toString);
        List<JsonNode> lines = r.json();
        assertEquals(8, lines.size(), r::toString);
        JsonNode summary = lines.get(7);
        assertEquals("orders", summary.get("log").asText());
        assertEquals(T0.toString(), summary.get("from").asText());
        assertEquals(T0.plusSeconds(7).toString(), summary.get("through").asText());
        assertEquals(7, summary.get("buckets").asInt());
        assertEquals(3, summary.get("sealed").asInt());
        assertEquals(4, summary.get("alreadySealed").asInt());
        assertEquals(0, summary.get("helped").asInt());
        assertEquals(6, summary.get("files").asLong());
        assertEquals(fx.dataBytes("orders"), summary.get("bytes").asLong());
        assertEquals(T0.plusSeconds(6).toString(), lines.get(6).get("bucket").asText());
        assertEquals("SEALED", lines.get(6).get("outcome").asText());
        assertEquals(0, lines.get(6).get("files").asInt());

        JsonNode s = run("log", "stats", "--store", root, "--log", "orders", "--json").json().get(0);
        assertEquals(7, s.get("buckets").asLong());
        assertEquals(7, s.get("sealedBuckets").asLong());
        assertTrue(run("log", "cat", "--store", root, "--log", "orders", "--json").json().stream()
                .allMatch(n -> n.get("sealed").asBoolean()));

        CliRun again = run("log", "seal", "--store", root, "--log", "orders", "--from", T0.toString(), "--through",
                "-2s");
        assertEquals(0, again.code(), again::toString);
        assertEquals("sealed log 'orders' from " + T0 + " through " + T0.plusSeconds(7) + ": 7 buckets (0 sealed now, 7 "
                + "already sealed, 0 helped), 6 data files, " + fx.dataBytes("orders") + " bytes", again.lines().get(0));
    }

    @Test
    void sealRefusesABucketThatIsNotDueAndAnUnknownLog() throws Exception {
        CliRun r = run("log", "seal", "--store", root, "--log", "orders", "--through", "now");
        assertEquals(1, r.code(), r::toString);
        assertEquals(1, r.errLines().size(), r::toString);
        assertTrue(r.err().startsWith("leasehold: bucket 2026/11/22/02/43/16.000000 of log 'orders' may be sealed only "
                + "from " + T0.plusSeconds(9)), r::toString);
        assertEquals(4, run("log", "stats", "--store", root, "--log", "orders", "--json").json().get(0)
                .get("sealedBuckets").asLong());

        CliRun unknown = run("log", "seal", "--store", root, "--log", "nosuch", "--through", T0.toString());
        assertEquals(1, unknown.code(), unknown::toString);
        assertTrue(unknown.err().startsWith("leasehold: log 'nosuch' does not exist under " + root), unknown::toString);
        assertFalse(Files.exists(fx.root.resolve("nosuch")), "sealing created the log");
    }

    @Test
    void tailPrintsTheLastMessages() {
        CliRun r = run("log", "tail", "--store", root, "--log", "orders", "-n", "3");
        assertEquals(0, r.code(), r::toString);
        List<String> lines = r.lines();
        assertEquals(3, lines.size());
        assertTrue(lines.get(0).endsWith("\tpayload-9"), lines::toString);
        assertTrue(lines.get(2).endsWith("\tpayload-11"), lines::toString);
        assertEquals(2, run("log", "tail", "--store", root, "--log", "orders", "-n", "2", "--sealed-only").lines()
                .size());
    }

    @Test
    void readingCommandsTakeNoWriterIdentityAndCreateNothing() throws Exception {
        // The surefire JVM's java.io.tmpdir is target/, where a store without localLockDir keeps its writer locks.
        Path locks = Paths.get(System.getProperty("java.io.tmpdir"), "leasehold-writers");
        TestStore.deleteTree(locks);
        for (String[] args : List.of(new String[] {"log", "list", "--store", root},
                new String[] {"log", "stats", "--store", root, "--log", "orders"},
                new String[] {"log", "cat", "--store", root, "--log", "orders"},
                new String[] {"log", "tail", "--store", root, "--log", "orders"},
                new String[] {"log", "cat", "--store", root, "--log", "nosuch"})) {
            CliRun r = run(args);
            assertFalse(Files.exists(locks), () -> String.join(" ", args) + " took a writer identity");
        }
        assertFalse(Files.exists(fx.root.resolve("nosuch")), "a read created the log");
        assertEquals(0, run("log", "seal", "--store", root, "--log", "orders", "--through", "-3s").code());
        assertTrue(Files.exists(locks), "sealing takes a writer identity while it runs");
    }

    @Test
    void errorsAreOneLineWithTheRightExitCode() {
        CliRun missing = run("log", "cat", "--store", fx.root.resolve("absent").toString(), "--log", "orders");
        assertEquals(1, missing.code(), missing::toString);
        assertEquals(List.of("leasehold: the bag store's root " + fx.root.resolve("absent") + " does not exist: create it "
                + "(or mount the shared file system there) before opening the store"), missing.errLines());
        assertEquals("", missing.out());

        CliRun verbose = run("log", "cat", "--store", fx.root.resolve("absent").toString(), "--log", "orders",
                "--verbose");
        assertEquals(1, verbose.code());
        assertTrue(verbose.err().contains("\tat org.leasehold."), verbose::toString);

        CliRun unknown = run("log", "cat", "--store", root, "--log", "nosuch");
        assertEquals(1, unknown.code());
        assertEquals(List.of("leasehold: log 'nosuch' does not exist under " + root + ": nothing was ever appended to it or "
                + "sealed in it. Check the name ('leasehold log list --store DIR' shows the logs)"), unknown.errLines());

        CliRun badTime = run("log", "cat", "--store", root, "--log", "orders", "--from", "yesterday");
        assertEquals(2, badTime.code(), badTime::toString);
        assertEquals(List.of("leasehold: Invalid value for option '--from': 'yesterday' is not a time: give an ISO-8601 "
                + "instant such as 2026-11-22T02:43:10Z, 'now', or an offset from now such as -10m, -90s, -2h, -1d",
                "Try 'leasehold log cat --help' for more information."), badTime.errLines());

        CliRun badOption = run("log", "stats", "--store", root, "--log", "orders", "--colour");
        assertEquals(2, badOption.code(), badOption::toString);
        assertEquals("leasehold: Unknown option: '--colour'", badOption.errLines().get(0));
        assertEquals("Try 'leasehold log stats --help' for more information.",
                badOption.errLines().get(badOption.errLines().size() - 1));

        CliRun noStore = run("log", "list");
        assertEquals(2, noStore.code());
        assertEquals(List.of("leasehold: Missing required option: '--store=DIR'",
                "Try 'leasehold log list --help' for more information."), noStore.errLines());

        CliRun noCommand = run("log");
        assertEquals(2, noCommand.code());
        assertEquals("leasehold: Missing command: give one of list, stats, cat, tail, seal, compact", noCommand.errLines().get(0));

        CliRun followTo = run("log", "tail", "--store", root, "--log", "orders", "-f", "--to", "now");
        assertEquals(2, followTo.code());
        assertEquals("leasehold: --to cannot be combined with -f: a followed log has no end", followTo.errLines().get(0));
    }

    @Test
    void helpAndVersion() {
        for (String[] args : List.of(new String[] {"--help"}, new String[] {"log", "--help"},
                new String[] {"log", "list", "--help"}, new String[] {"log", "stats", "--help"},
                new String[] {"log", "cat", "--help"}, new String[] {"log", "tail", "--help"},
                new String[] {"log", "seal", "--help"}, new String[] {"log", "compact", "--help"},
                new String[] {"leases", "--help"},
                new String[] {"leases", "inspect", "--help"}, new String[] {"verify", "--help"})) {
            CliRun r = run(args);
            assertEquals(0, r.code(), r::toString);
            assertTrue(r.out().startsWith("Usage: leasehold"), r::toString);
            assertEquals("", r.err());
        }
        CliRun v = run("--version");
        assertEquals(0, v.code());
        assertTrue(v.out().matches("(?s)leasehold \\d+\\.\\d+\\.\\d+(-SNAPSHOT)?\nJava .*"), v::toString);
    }

    @Test
    void progressBarDrawsTheTaskOnTheGivenStream() {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (Progress p = Progress.bar(new java.io.PrintStream(bytes, true, StandardCharsets.UTF_8), "sealing orders",
                40)) {
            p.advance(40);
        }
        String drawn = bytes.toString(StandardCharsets.UTF_8);
        assertTrue(drawn.contains("sealing orders") && drawn.contains("100%") && drawn.contains("40/40"), drawn);
    }
}
