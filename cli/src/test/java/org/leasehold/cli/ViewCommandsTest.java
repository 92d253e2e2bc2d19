package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.ViewSnapshotReport;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code view build}, {@code view show} and the view rows of {@code log stats} on a real store written through
 * {@code FileBagStore} on a manual clock, with a view definition compiled by the test into a jar of its own (so that
 * it reaches the CLI only through {@code --classpath}): log {@code orders} with one frame every 1.5 s from
 * {@link TestStore#T0} for 30 s under three lease names, nothing sealed, then two frames at T0 + 58.5 s. At T0 + 60 s
 * the latest sealed boundary is T0 + 57 s (grace 2 s and clock error 0.5 s by default).
 */
class ViewCommandsTest {
    private static final Instant T0 = TestStore.T0;
    private static final Instant NOW = T0.plusSeconds(60);
    private static final Instant BOUNDARY = T0.plusSeconds(57);
    private static Path jar;

    private TestStore fx;
    private String root;

    @BeforeAll
    static void compileDefinitions() throws Exception {
        Path dir = TestStore.BASE.resolve("view-jar");
        TestStore.deleteTree(dir);
        Path src = dir.resolve("src").resolve("example");
        Path classes = dir.resolve("classes");
        Files.createDirectories(src);
        Files.createDirectories(classes);
        List<String> args = new ArrayList<>(List.of("-d", classes.toString(), "-classpath",
                Path.of(ViewDefinition.class.getProtectionDomain().getCodeSource().getLocation().toURI()).toString()));
        for (String n : List.of("BalanceView", "NotAView", "NeedsArgument")) {
            try (InputStream in = ViewCommandsTest.class.getResourceAsStream("/views/" + n + ".java.txt")) {
                Path f = src.resolve(n + ".java");
                Files.write(f, in.readAllBytes());
                args.add(f.toString());
            }
        }
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertEquals(0, javac.run(null, null, null, args.toArray(String[]::new)), "the test definitions compile");
        jar = dir.resolve("views.jar");
        try (OutputStream o = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(o);
                Stream<Path> files = Files.walk(classes)) {
            for (Path p : files.filter(Files::isRegularFile).sorted().toList()) {
                j.putNextEntry(new JarEntry(classes.relativize(p).toString().replace('\\', '/')));
                j.write(Files.readAllBytes(p));
                j.closeEntry();
            }
        }
    }

    @BeforeEach
    void write() throws Exception {
        fx = new TestStore(getClass().getSimpleName());
        root = fx.root.toString();
        for (int i = 0; i < 20; i++) {
            fx.clock.set(T0.plusMillis(1_500L * i + 100));
            fx.append("orders", List.of(TestStore.lease("account/" + (i % 3), 1)), "credit-" + "x".repeat(i));
        }
        fx.clock.set(T0.plusMillis(58_500));
        fx.append("orders", List.of(TestStore.lease("account/1", 1)), "late-1");
        fx.append("orders", List.of(TestStore.lease("account/1", 1)), "late-22");
        fx.store.createLog("empty");
        fx.clock.set(NOW);
    }

    @AfterEach
    void close() {
        fx.close();
        RacingView.beforeEncode = null;
    }

    private CliRun run(String... args) {
        return CliRun.of(fx.clock, args);
    }

    private CliRun build(String... more) {
        List<String> a = new ArrayList<>(List.of("view", "build", "--store", root, "--log", "orders", "--definition",
                "example.BalanceView", "--classpath", jar.toString()));
        a.addAll(List.of(more));
        return run(a.toArray(String[]::new));
    }

    /** The balance view's encoding of the messages appended before {@code before}, computed here from the appends. */
    private String balance(Instant before) {
        TreeMap<String, long[]> s = new TreeMap<>();
        for (TestStore.Expected e : fx.expected("orders")) {
            if (e.at().timestamp().isBefore(before)) {
                for (LeaseStamp l : e.leases()) {
                    long[] t = s.computeIfAbsent(l.name(), k -> new long[2]);
                    t[0]++;
                    t[1] += e.payload().length;
                }
            }
        }
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, long[]> x : s.entrySet()) {
            b.append(x.getKey()).append(' ').append(x.getValue()[0]).append(' ').append(x.getValue()[1]).append('\n');
        }
        return b.toString();
    }

    private long appendedBefore(Instant before) {
        return fx.expected("orders").stream().filter(e -> e.at().timestamp().isBefore(before)).count();
    }

    private Path snapshot(String file) {
        return fx.root.resolve("orders").resolve("views").resolve("balance").resolve(file);
    }

    @Test
    void buildPublishesTheSnapshotAtTheLatestSealedBoundaryThenFindsItPublished() throws Exception {
        CliRun r = build("--json");
        assertEquals(0, r.code(), r::toString);
        JsonNode n = r.json().get(0);
        assertEquals("orders", n.get("log").asText());
        assertEquals("balance", n.get("view").asText());
        assertEquals("balance 1", n.get("version").asText());
        assertEquals(BOUNDARY.toString(), n.get("boundary").asText());
        assertEquals(Micros.of(BOUNDARY), n.get("boundaryMicros").asLong());
        assertEquals("PUBLISHED", n.get("outcome").asText());
        assertTrue(n.get("published").asBoolean());
        assertEquals(20, n.get("messages").asLong());
        assertEquals(appendedBefore(BOUNDARY), n.get("messages").asLong());
        Path file = snapshot(n.get("file").asText());
        assertTrue(Files.isRegularFile(file), file::toString);
        assertEquals(Files.size(file), n.get("bytes").asLong());
        assertTrue(n.get("file").asText().startsWith(Micros.of(BOUNDARY) + "-"), n::toString);
        // The buckets before the boundary were sealed by the build; the one of the late frames was not.
        assertTrue(Files.exists(fx.root.resolve("orders").resolve("2026/11/22/02/43/10.000000/lock")),
                "the first bucket is sealed");
        assertFalse(Files.exists(fx.root.resolve("orders").resolve("2026/11/22/02/44/08.000000/lock")),
                "the bucket after the boundary is not sealed");

        CliRun again = build("--json");
        assertEquals(0, again.code(), again::toString);
        JsonNode a = again.json().get(0);
        assertEquals("ALREADY_PUBLISHED", a.get("outcome").asText());
        assertEquals(0, a.get("messages").asLong());
        assertEquals(n.get("file").asText(), a.get("file").asText());
        assertEquals(n.get("bytes").asLong(), a.get("bytes").asLong());

        CliRun text = build();
        assertEquals(0, text.code(), text::toString);
        assertEquals(1, text.lines().size(), text::toString);
        assertTrue(text.lines().get(0).startsWith("built view 'balance' of log 'orders' at " + BOUNDARY
                + ": already published, snapshot " + n.get("file").asText() + ", 0 messages folded, "
                + n.get("bytes").asLong() + " bytes; took "), text::toString);
    }

    @Test
    void aLaterBuildFoldsOnlyTheMessagesAfterTheOlderSnapshot() throws Exception {
        Instant early = T0.plusSeconds(20);
        JsonNode first = build("--through", early.toString(), "--json").json().get(0);
        assertEquals(early.toString(), first.get("boundary").asText());
        assertEquals(appendedBefore(early), first.get("messages").asLong());
        assertEquals(14, first.get("messages").asLong());
        // A relative --through: now minus 3 s, 02:44:07, gives the boundary 02:44:07.
        JsonNode rel = build("--through", "-3s", "--json").json().get(0);
        assertEquals(NOW.minusSeconds(3).toString(), rel.get("boundary").asText());
        assertEquals(appendedBefore(BOUNDARY) - 14, rel.get("messages").asLong());
        assertTrue(new String(Files.readAllBytes(snapshot(rel.get("file").asText())), StandardCharsets.ISO_8859_1)
                .contains(balance(BOUNDARY)), "the snapshot holds the state of every message before its boundary");
        assertTrue(new String(Files.readAllBytes(snapshot(first.get("file").asText())), StandardCharsets.ISO_8859_1)
                .contains(balance(early)), "the older snapshot holds the state before its own boundary");

        JsonNode stats = run("log", "stats", "--store", root, "--log", "orders", "--json").json().get(0);
        JsonNode views = stats.get("views");
        assertEquals(1, views.size(), stats::toString);
        assertEquals("balance", views.get(0).get("view").asText());
        assertEquals(2, views.get(0).get("snapshots").asLong());
        assertEquals(1, views.get(0).get("versions").asInt());
        assertEquals(BOUNDARY.toString(), views.get(0).get("latestBoundary").asText());
        assertEquals(rel.get("file").asText(), views.get(0).get("latestFile").asText());
        assertEquals(first.get("bytes").asLong() + rel.get("bytes").asLong(), views.get(0).get("bytes").asLong());
        assertEquals(0, views.get(0).get("preparedSnapshots").asLong());
        List<String> text = run("log", "stats", "--store", root, "--log", "orders").lines();
        assertTrue(text.contains("views              1"), text::toString);
        assertTrue(text.contains("view balance       2 snapshots (1 versions), latest " + BOUNDARY + ", "
                + views.get(0).get("bytes").asLong() + " bytes, 0 prepared"), text::toString);
        JsonNode none = run("log", "stats", "--store", root, "--log", "empty", "--json").json().get(0);
        assertEquals(0, none.get("views").size());
    }

    @Test
    void showPrintsTheStateNowFromTheSnapshotAndTheTail() throws Exception {
        CliRun before = run("view", "show", "--store", root, "--log", "orders", "--definition", "example.BalanceView",
                "--classpath", jar.toString(), "--json");
        assertEquals(0, before.code(), before::toString);
        JsonNode b = before.json().get(0);
        assertTrue(b.get("snapshotBoundary").isNull(), b::toString);
        assertEquals(22, b.get("tailMessages").asLong());
        assertEquals(balance(NOW), b.get("text").asText());
        assertTrue(b.get("tentative").asBoolean());
        assertFalse(Files.exists(fx.root.resolve("orders").resolve("views")), "show built nothing");

        build();
        CliRun after = run("view", "show", "--store", root, "--log", "orders", "--definition", "example.BalanceView",
                "--classpath", jar.toString(), "--json");
        JsonNode a = after.json().get(0);
        assertEquals(BOUNDARY.toString(), a.get("snapshotBoundary").asText());
        assertEquals(2, a.get("tailMessages").asLong());
        assertTrue(a.get("tentative").asBoolean());
        byte[] state = balance(NOW).getBytes(StandardCharsets.UTF_8);
        assertEquals(balance(NOW), a.get("text").asText());
        assertEquals(Base64.getEncoder().encodeToString(state), a.get("state").asText());
        assertEquals(state.length, a.get("stateBytes").asInt());
        assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(state)),
                a.get("stateSha256").asText());

        JsonNode sealed = run("view", "show", "--store", root, "--log", "orders", "--definition", "example.BalanceView",
                "--classpath", jar.toString(), "--sealed-only", "--json").json().get(0);
        assertEquals(0, sealed.get("tailMessages").asLong());
        assertFalse(sealed.get("tentative").asBoolean());
        assertEquals(balance(BOUNDARY), sealed.get("text").asText());

        List<String> text = run("view", "show", "--store", root, "--log", "orders", "--definition",
                "example.BalanceView", "--classpath", jar.toString()).lines();
        assertEquals("snapshot        " + BOUNDARY, text.get(3), text::toString);
        assertEquals("tail messages   2", text.get(4));
        assertEquals("state           " + balance(NOW).lines().findFirst().orElseThrow(), text.get(8));
    }

    @Test
    void errorsAreOneLineWithTheRightExitCode() throws Exception {
        CliRun unknownClass = run("view", "build", "--store", root, "--log", "orders", "--definition",
                "example.Nosuch", "--classpath", jar.toString());
        assertEquals(2, unknownClass.code(), unknownClass::toString);
        assertEquals(List.of("leasehold: --definition: class 'example.Nosuch' is not on --classpath " + jar + ": give "
                + "the fully qualified name of the view definition's class and the jars that hold it",
                "Try 'leasehold view build --help' for more information."), unknownClass.errLines());

        CliRun noJar = run("view", "build", "--store", root, "--log", "orders", "--definition",
                "example.BalanceView");
        assertEquals(2, noJar.code(), noJar::toString);
        assertEquals("leasehold: --definition: class 'example.BalanceView' is not on the CLI's class path (no "
                + "--classpath given): give the fully qualified name of the view definition's class and the jars that "
                + "hold it", noJar.errLines().get(0));

        CliRun notAView = run("view", "build", "--store", root, "--log", "orders", "--definition", "example.NotAView",
                "--classpath", jar.toString());
        assertEquals(2, notAView.code(), notAView::toString);
        assertEquals("leasehold: --definition: class 'example.NotAView' is not a view definition: it must be a "
                + "concrete class implementing org.leasehold.bag.ViewDefinition", notAView.errLines().get(0));

        CliRun noCtor = run("view", "show", "--store", root, "--log", "orders", "--definition",
                "example.NeedsArgument", "--classpath", jar.toString());
        assertEquals(2, noCtor.code(), noCtor::toString);
        assertEquals("leasehold: --definition: class 'example.NeedsArgument' has no public constructor without "
                + "parameters: add one (the CLI creates the definition with it)", noCtor.errLines().get(0));

        Path absent = fx.root.resolve("absent.jar");
        CliRun missingJar = run("view", "build", "--store", root, "--log", "orders", "--definition",
                "example.BalanceView", "--classpath", jar + java.io.File.pathSeparator + absent);
        assertEquals(2, missingJar.code(), missingJar::toString);
        assertEquals("leasehold: --classpath: " + absent + " does not exist: give the jars (or class directories) "
                + "holding the view definition and what it needs", missingJar.errLines().get(0));

        CliRun noDefinition = run("view", "build", "--store", root, "--log", "orders");
        assertEquals(2, noDefinition.code(), noDefinition::toString);
        assertEquals("leasehold: Missing required option: '--definition=CLASS'", noDefinition.errLines().get(0));

        CliRun empty = run("view", "build", "--store", root, "--log", "empty", "--definition", "example.BalanceView",
                "--classpath", jar.toString());
        assertEquals(1, empty.code(), empty::toString);
        assertEquals(List.of("leasehold: log 'empty' has no sealed boundary yet: it has no bucket, so a view of it has "
                + "nothing to fold; append to it first"), empty.errLines());

        CliRun tooEarly = build("--through", T0.plusMillis(500).toString());
        assertEquals(1, tooEarly.code(), tooEarly::toString);
        assertEquals(List.of("leasehold: log 'orders' has no sealed boundary at or before " + T0.plusMillis(500)
                + ": its first bucket starts at " + T0 + "; give a --through after " + T0.plusSeconds(1)),
                tooEarly.errLines());

        fx.clock.set(T0.plusMillis(3_000));
        CliRun notYet = build();
        assertEquals(1, notYet.code(), notYet::toString);
        assertEquals(List.of("leasehold: log 'orders' has no sealed boundary yet: its first bucket ends at "
                + T0.plusSeconds(1) + " and may be sealed only from " + T0.plusMillis(3_500) + " (its end plus grace "
                + "plus clock error); this clock reads " + T0.plusMillis(3_000) + ". Nothing was built: retry then"),
                notYet.errLines());
        assertFalse(Files.exists(fx.root.resolve("orders").resolve("views")), "a refused build wrote nothing");
        fx.clock.set(NOW);

        CliRun unknownLog = run("view", "build", "--store", root, "--log", "nosuch", "--definition",
                "example.BalanceView", "--classpath", jar.toString());
        assertEquals(1, unknownLog.code(), unknownLog::toString);
        assertEquals(List.of("leasehold: log 'nosuch' does not exist under " + root + ": nothing was ever appended to it "
                + "or sealed in it. Check the name ('leasehold log list --store DIR' shows the logs)"),
                unknownLog.errLines());
        assertFalse(Files.exists(fx.root.resolve("nosuch")), "the build created the log");
    }

    @Test
    void aNonDeterministicDefinitionIsRefusedWhenAnotherBuilderPublishedOtherBytes() throws Exception {
        ViewSnapshotReport[] other = new ViewSnapshotReport[1];
        RacingView.beforeEncode = () -> {
            // Another builder, in another store instance, publishes the same boundary first with its own salt.
            try (FileBagStore b = FileBagStore.open(BagStoreConfig.builder(fx.root)
                    .localLockDir(TestStore.BASE.resolve("writer-locks")).metronome(false).build(), fx.clock)) {
                other[0] = b.buildView("orders", new RacingView(), BOUNDARY);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        };
        CliRun r = run("view", "build", "--store", root, "--log", "orders", "--definition",
                RacingView.class.getName());
        assertEquals(1, r.code(), r::toString);
        assertNotNull(other[0], "the other builder ran");
        assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, other[0].outcome());
        assertEquals(1, r.errLines().size(), r::toString);
        String line = r.errLines().get(0);
        assertTrue(line.startsWith("leasehold: snapshot " + other[0].file() + " of view 'racing' of log 'orders' was "
                + "published by another builder with different bytes ("), line);
        assertTrue(line.endsWith("although both folded the same sealed messages: the view's apply, encode or decode is "
                + "not deterministic. The published snapshot was left in place and this one discarded; make the "
                + "definition deterministic and change its version"), line);
        assertEquals("", r.out());
        try (Stream<Path> s = Files.list(fx.root.resolve("orders").resolve("views").resolve("racing"))) {
            assertEquals(List.of(other[0].file()), s.map(p -> p.getFileName().toString()).toList(),
                    "the loser's prepared file is gone, the winner's snapshot stays");
        }
    }

    @Test
    void theProgressBarCountsTheBucketsFolded() throws Exception {
        ByteArrayOutputStream drawn = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(drawn, true, StandardCharsets.UTF_8);
        List<Long> totals = new ArrayList<>();
        ViewSnapshotReport r;
        try (FileBagStore builder = FileBagStore.open(BagStoreConfig.builder(fx.root)
                .localLockDir(TestStore.BASE.resolve("writer-locks")).metronome(false).build(), fx.clock);
                RangeProgress progress = new RangeProgress(total -> {
                    totals.add(total);
                    return Progress.bar(out, "building balance", total);
                })) {
            r = builder.buildView("orders", new RacingView(), NOW, progress);
            assertEquals(Micros.of(T0), progress.from);
            assertEquals(Micros.of(BOUNDARY), progress.limit);
        }
        assertEquals(ViewSnapshotReport.Outcome.PUBLISHED, r.outcome());
        // From the first bucket, 02:43:10, to the boundary, 02:44:07: 57 buckets.
        assertEquals(List.of(57L), totals);
        String text = drawn.toString(StandardCharsets.UTF_8);
        assertTrue(text.contains("building balance") && text.contains("100%") && text.contains("57/57 buckets"), text);
        assertEquals(Duration.ofSeconds(57), Duration.between(T0, BOUNDARY));
    }
}
