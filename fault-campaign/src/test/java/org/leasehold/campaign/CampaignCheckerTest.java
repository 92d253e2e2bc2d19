package org.leasehold.campaign;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import java.util.zip.CRC32;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.store.CampaignChild;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The campaign's checker can fail: a real log written by the store (on a manual clock) and journals that agree with
 * it pass; each journal or byte that contradicts an invariant is reported, naming it.
 */
class CampaignCheckerTest {
    private static final Instant T0 = Instant.parse("2026-11-22T02:43:10Z");
    private static final String NAME = "acct/0";
    private static Path root;
    private static final List<String> GOOD = new ArrayList<>();

    /** Holder w's generation 10 writes w.0 and w.1 and releases; holder v's generation 11 writes w.2; all sealed. */
    @BeforeAll
    static void writeLog() throws Exception {
        root = Path.of("target", "checker-test-" + System.nanoTime());
        Path store = root.resolve("store");
        Files.createDirectories(store);
        ManualTimeSource time = new ManualTimeSource(T0);
        try (FileBagStore s = FileBagStore.open(CampaignChild.config(store, root.resolve("locks")).build(), time)) {
            long floor10 = Micros.of(T0.minusSeconds(1));
            long deadline10 = Micros.of(T0.plusSeconds(2));
            GOOD.add("GRANT w " + NAME + " 10 " + floor10 + " " + deadline10 + " " + Micros.of(T0) + " " + Micros.of(T0) + " 0");
            LeaseStamp g10 = new LeaseStamp(NAME, 10, T0.minusSeconds(1), T0.plusSeconds(2), T0, null, null);
            long last = 0;
            for (int i = 0; i < 2; i++) {
                time.advance(Duration.ofMillis(100));
                Appended a = s.append(AppendRequest.of(Campaign.LOG, List.of(g10), ("w." + i).getBytes(StandardCharsets.UTF_8)));
                GOOD.add("SENT w." + i);
                GOOD.add("ACK w." + i + " " + Micros.of(a.timestamp()));
                last = Micros.of(a.timestamp());
            }
            time.advance(Duration.ofMillis(100));
            long released = time.nowMicros();
            GOOD.add("RELEASED " + NAME + " 10 " + released);
            time.advance(Duration.ofMillis(100));
            long granted11 = time.nowMicros();
            GOOD.add("GRANT v " + NAME + " 11 " + last + " " + (granted11 + 2_000_000) + " " + granted11 + " " + granted11 + " 0");
            LeaseStamp g11 = new LeaseStamp(NAME, 11, Micros.toInstant(last), Micros.toInstant(granted11 + 2_000_000),
                    Micros.toInstant(granted11), null, null);
            time.advance(Duration.ofMillis(100));
            Appended a = s.append(AppendRequest.of(Campaign.LOG, List.of(g11), "w.2".getBytes(StandardCharsets.UTF_8)));
            GOOD.add("SENT w.2");
            GOOD.add("ACK w.2 " + Micros.of(a.timestamp()));
            GOOD.add("SENT w.3");
            GOOD.add("REFUSED w.3 BucketSealedException");
            time.advance(Duration.ofSeconds(3));
            s.sealThrough(Campaign.LOG, T0.minusSeconds(1), time.now().minus(CampaignChild.WIDTH.plus(CampaignChild.GRACE)));
        }
        CRC32 crc = new CRC32();
        List<String> ids = List.of("w.0", "w.1", "w.2");
        List<Long> ts = new ArrayList<>();
        for (String l : GOOD) {
            if (l.startsWith("ACK ")) {
                ts.add(Long.parseLong(l.split(" ")[2]));
            }
        }
        for (int i = 0; i < 3; i++) {
            crc.update(ByteBuffer.allocate(8).putLong(ts.get(i)).array());
            crc.update(ids.get(i).getBytes(StandardCharsets.UTF_8));
        }
        GOOD.add("READ " + Micros.of(T0) + " " + Micros.of(T0.plusSeconds(2)) + " * 3 " + Long.toHexString(crc.getValue()));
        GOOD.add("SAW " + NAME + " 11 " + Micros.of(T0) + " " + (ts.get(1) + 1) + " 2");
    }

    private static CampaignChecker.Outcome check(String label, UnaryOperator<List<String>> change) throws IOException {
        Path journals = root.resolve("journals-" + label);
        Files.createDirectories(journals);
        Files.write(journals.resolve("w.journal"), change.apply(new ArrayList<>(GOOD)));
        return CampaignChecker.check(root.resolve("store").resolve(Campaign.LOG), journals);
    }

    private static void assertViolation(String label, String expected, UnaryOperator<List<String>> change)
            throws IOException {
        CampaignChecker.Outcome o = check(label, change);
        assertTrue(o.violations().stream().anyMatch(v -> v.contains(expected)), label + ": expected a violation with '"
                + expected + "', got " + o.violations());
    }

    private static List<String> replace(List<String> lines, String prefix, String with) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(prefix)) {
                lines.set(i, with);
                return lines;
            }
        }
        throw new AssertionError("no line " + prefix);
    }

    @Test
    void aHistoryThatKeepsEveryInvariantPasses() throws IOException {
        CampaignChecker.Outcome o = check("good", l -> l);
        assertEquals(List.of(), o.violations());
        assertEquals(3L, o.counts().get("acknowledged messages found"));
        assertEquals(1L, o.counts().get("sealed reads compared"));
    }

    @Test
    void eachContradictionIsReported() throws IOException {
        assertViolation("lost", "acknowledged message w.9", l -> {
            l.add("SENT w.9");
            l.add("ACK w.9 " + Micros.of(T0.plusMillis(50)));
            return l;
        });
        assertViolation("refused", "w.1 was refused but is visible", l -> replace(l, "ACK w.1", "REFUSED w.1 LATE"));
        assertViolation("phantom", "w.0 was never sent", l -> replace(l, "SENT w.0", "NOTE no send recorded"));
        assertViolation("ungranted", "which no journal recorded as granted", l -> replace(l, "GRANT v " + NAME + " 11",
                "NOTE no grant recorded"));
        assertViolation("overlap", "invariant 1", l -> replace(l, "RELEASED", "NOTE not released"));
        assertViolation("generations", "invariant 2", l -> {
            String g11 = l.stream().filter(x -> x.startsWith("GRANT v " + NAME + " 11")).findFirst().orElseThrow();
            String[] w = g11.split(" ");
            w[7] = Long.toString(Micros.of(T0.minusSeconds(5)));
            return replace(l, "GRANT v " + NAME + " 11", String.join(" ", w));
        });
        assertViolation("floor", "invariant 3", l -> {
            String g11 = l.stream().filter(x -> x.startsWith("GRANT v " + NAME + " 11")).findFirst().orElseThrow();
            String[] w = g11.split(" ");
            w[4] = Long.toString(Micros.of(T0.plusSeconds(1)));
            return replace(l, "GRANT v " + NAME + " 11", String.join(" ", w));
        });
        assertViolation("successor", "invariant 5", l -> replace(l, "SAW", l.stream().filter(x -> x.startsWith("SAW"))
                .findFirst().orElseThrow().replaceAll(" 2$", " 1")));
        assertViolation("reader", "invariant 6: a reader read", l -> replace(l, "READ", l.stream()
                .filter(x -> x.startsWith("READ")).findFirst().orElseThrow().replace(" * 3 ", " * 2 ")));
        assertViolation("problem", "a problem other than a torn tail", l -> {
            l.add("PROBLEM CORRUPT_RECORD 2026/03/01/10/00/00.000000 w-1.0.data 120 checksum mismatch");
            return l;
        });
    }

    @Test
    void aReadThatMetAnUnsealedIncompleteTailIsCountedNotAViolation() throws IOException {
        CampaignChecker.Outcome o = check("unsealed", l -> {
            l.add("UNSEALED 2026/03/01/10/00/00.000000 w-1.0.data 3850");
            l.add("UNSEALED 2026/03/01/10/00/00.200000 w-1.0.data 120");
            return l;
        });
        assertEquals(List.of(), o.violations());
        assertEquals(2L, o.counts().get("reads that met an unsealed bucket's incomplete tail"));
    }

    @Test
    void aReTakeByTheSameHolderOrAReleaseWithoutAnswerIsNoOverlap() throws IOException {
        UnaryOperator<List<String>> sameHolder = l -> {
            String g11 = l.stream().filter(x -> x.startsWith("GRANT v " + NAME + " 11")).findFirst().orElseThrow();
            return replace(replace(l, "RELEASED", "NOTE not released"), "GRANT v " + NAME + " 11",
                    g11.replace("GRANT v ", "GRANT w "));
        };
        CampaignChecker.Outcome retake = check("retake", sameHolder);
        assertEquals(List.of(), retake.violations());
        assertEquals(1L, retake.counts().get("grants re-taken by their holder"));
        CampaignChecker.Outcome doubt = check("doubt", l -> replace(l, "RELEASED", "UNRELEASED " + NAME + " 10 unknown"));
        assertEquals(List.of(), doubt.violations());
        assertEquals(1L, doubt.counts().get("grants after a release in doubt"));
    }

    /** The history in two journals: w's, which ends (its process killed) after its writes, and the rest. */
    private static CampaignChecker.Outcome killedAfterRelease(String label, UnaryOperator<String> successor)
            throws IOException {
        Path journals = root.resolve("journals-" + label);
        Files.createDirectories(journals);
        List<String> w = new ArrayList<>();
        List<String> rest = new ArrayList<>();
        for (String l : GOOD) {
            if (l.startsWith("RELEASED " + NAME + " 10")) {
                continue;
            }
            if (l.startsWith("GRANT w ") || l.startsWith("SENT w.0") || l.startsWith("ACK w.0")
                    || l.startsWith("SENT w.1") || l.startsWith("ACK w.1")) {
                w.add(l);
            } else {
                rest.add(l.startsWith("GRANT v ") ? successor.apply(l) : l);
            }
        }
        Files.write(journals.resolve("w.journal"), w);
        Files.write(journals.resolve("v.journal"), rest);
        return CampaignChecker.check(root.resolve("store").resolve(Campaign.LOG), journals);
    }

    @Test
    void aReleaseTheHolderDiedBeforeJournalingIsNoOverlapWhenTheSuccessorSaysSo() throws IOException {
        CampaignChecker.Outcome died = killedAfterRelease("died", l -> l);
        assertEquals(List.of(), died.violations());
        assertEquals(1L, died.counts().get("grants after a release not journaled"));
        // The successor says its predecessor expired, not released: then w held the name until its deadline.
        CampaignChecker.Outcome expired = killedAfterRelease("died-expired", l -> l.substring(0, l.length() - 1) + "1");
        assertTrue(expired.violations().stream().anyMatch(v -> v.startsWith("invariant 1")), expired.violations()
                .toString());
        // The successor's floor lies below what w stored: no release with that watermark explains it.
        CampaignChecker.Outcome low = killedAfterRelease("died-low", l -> {
            String[] f = l.split(" ");
            f[4] = Long.toString(Long.parseLong(f[4]) - 1);
            return String.join(" ", f);
        });
        assertTrue(low.violations().stream().anyMatch(v -> v.startsWith("invariant 1")), low.violations().toString());
    }

    @Test
    void theAuditCheckReportsFramesItCannotProve() throws IOException {
        // The test log's frames carry no witnesses (no lease service signed them): verify must not pass them.
        CampaignChecker.Outcome good = check("audit", l -> l);
        CampaignChecker.Outcome audited = AuditCheck.verify(root.resolve("store"), Campaign.LOG, good);
        assertTrue(audited.violations().stream().anyMatch(v -> v.contains("MISSING_WITNESS_REQUIRED")),
                audited.violations().toString());
        assertEquals(3L, audited.counts().get("verify: messages"));
        assertEquals(0L, audited.counts().get("verify: torn tails"));
    }

    @Test
    void damagedBytesAreReported() throws IOException {
        Path copy = root.resolve("damaged");
        Path log = root.resolve("store").resolve(Campaign.LOG);
        List<Path> files;
        try (Stream<Path> s = Files.walk(log)) {
            files = s.toList();
        }
        Path data = null;
        for (Path p : files) {
            Path to = copy.resolve(log.relativize(p).toString());
            if (Files.isDirectory(p)) {
                Files.createDirectories(to);
            } else {
                Files.copy(p, to);
                if (data == null && p.getFileName().toString().endsWith(".data") && Files.size(p) > 40) {
                    data = to;
                }
            }
        }
        byte[] b = Files.readAllBytes(data);
        b[0] ^= 0x5a;
        Files.write(data, b);
        Path journals = root.resolve("journals-damaged");
        Files.createDirectories(journals);
        Files.write(journals.resolve("w.journal"), GOOD);
        CampaignChecker.Outcome o = CampaignChecker.check(copy, journals);
        assertTrue(o.violations().stream().anyMatch(v -> v.startsWith("format: ")), o.violations().toString());
        assertTrue(o.violations().stream().anyMatch(v -> v.contains("is not stored")), o.violations().toString());
    }
}
