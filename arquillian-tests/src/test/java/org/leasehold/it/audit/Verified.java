package org.leasehold.it.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.cli.verify.Finding;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.check.LogChecker;

/**
 * {@code leasehold verify}'s {@link LogVerifier} over a log the server wrote, in the test JVM (never in a server: the
 * test applications do not bundle the verifier), and the damage a forger would do to a copy of it.
 */
public final class Verified {
    private Verified() {
    }

    /** What one run of the verifier over one log found and counted. */
    public record Run(List<Finding> findings, long messages, long witnesses, long missingWitnesses, long grants) {
    }

    /** A flipped bit: the data file (relative to the log's directory) and the offset of its frame. */
    public record Flipped(String file, long offset) {
    }

    /**
     * Verifies log {@code log} of the store at {@code root} (written on {@code server}): no finding, at least
     * {@code minMessages} messages and {@code minGrants} grants, a witness on every lease of every frame. Then copies
     * the log beside the store, flips one bit of one stored witness in the copy, and verifies it again: a bad signature
     * at that frame, and nothing else.
     */
    public static void assertProvenThenFlipped(Path root, String log, String server, long minMessages, long minGrants)
            throws IOException, AuditFormatException {
        KeySet keys = keys(root);
        assertFalse(keys.isEmpty(), "the adapter's embedded engine published its key under " + root);
        Run clean = verify(root, log, keys);
        System.out.println("leasehold verify over log '" + log + "' (" + server + "): " + clean.messages()
                + " messages, " + clean.witnesses() + " witnesses, " + clean.grants() + " grants, "
                + clean.findings().size() + " findings");
        assertEquals(List.of(), clean.findings(), "the log the adapter wrote verifies");
        assertTrue(clean.messages() >= minMessages, "the committed messages were verified: " + clean);
        assertTrue(clean.grants() >= minGrants, "the grants were verified: " + clean);
        assertEquals(0, clean.missingWitnesses(), "every lease on a frame carries its witness");

        Path copy = root.resolveSibling(root.getFileName() + "-" + log + "-copy-" + server);
        deleteTree(copy);
        Files.createDirectories(copy);
        copyLog(root, copy, log);
        assertEquals(List.of(), verify(copy, log, keys).findings(), "the copy verifies before it is damaged");
        Flipped hit = flipFirstWitness(copy, log);
        Run damaged = verify(copy, log, keys);
        System.out.println("one flipped witness bit at " + hit + ": " + damaged.findings());
        assertFalse(damaged.findings().isEmpty(), "the flipped bit was found");
        assertTrue(damaged.findings().stream().allMatch(f -> f.kind() == Finding.Kind.BAD_SIGNATURE
                && f.file().equals(hit.file()) && f.offset() == hit.offset()),
                () -> "only a bad signature, at " + hit + ": " + damaged.findings());
    }

    /**
     * The principals the stored leases' witnesses name, by message text, for log {@code log} of the store at
     * {@code root} ({@code "-"} for a witness that names none; FORMAT.md, "Witness"). A lease without a witness fails.
     */
    public static Map<String, Set<String>> principals(Path root, String log) throws IOException, AuditFormatException {
        Map<String, Set<String>> byText = new TreeMap<>();
        for (LogChecker.Msg m : LogChecker.check(root.resolve(log)).ordered()) {
            for (LogChecker.Lease l : m.leases()) {
                assertTrue(l.witness() != null && l.witness().length > 0, "the lease of '" + m.text() + "' carries a witness");
                String principal = FrameWitness.decode(l.witness()).witness().principal();
                byText.computeIfAbsent(m.text(), k -> new TreeSet<>()).add(principal == null ? "-" : principal);
            }
        }
        return byText;
    }

    /** The keys the lease services published into the store at {@code root}. */
    public static KeySet keys(Path root) throws IOException, AuditFormatException {
        return PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root));
    }

    /**
     * Verifies log {@code log} of the store at {@code root} against {@code keys}, witnesses required, with the
     * default bound of 1 s between a message's timestamp and its signed time.
     */
    public static Run verify(Path root, String log, KeySet keys) throws IOException {
        List<Finding> findings = new ArrayList<>();
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keys, 1_000_000, true), findings::add, null);
        v.verifyLog(root, log);
        v.finish();
        return new Run(findings, v.count(LogVerifier.Counter.MESSAGES), v.count(LogVerifier.Counter.WITNESSES),
                v.count(LogVerifier.Counter.MISSING_WITNESSES), v.grants());
    }

    /** Copies the directory of log {@code log} from the store at {@code from} into the store at {@code to}. */
    public static void copyLog(Path from, Path to, String log) throws IOException {
        Path src = from.resolve(log);
        Path dst = to.resolve(log);
        try (Stream<Path> all = Files.walk(src)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                Path q = dst.resolve(src.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(q);
                } else {
                    Files.copy(p, q, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /** Deletes {@code dir} and everything under it, if it exists (a copy an earlier run left). */
    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    /**
     * Flips the lowest bit of the deadline in the witness of the first stored lease that carries one (FORMAT.md,
     * "Frame witness" and "Witness"), in log {@code log} of the store at {@code root}, and rewrites the frame's
     * checksum as a forger would, so that only the signature can tell.
     */
    public static Flipped flipFirstWitness(Path root, String log) throws IOException {
        LogChecker.Result r = LogChecker.check(root.resolve(log));
        for (LogChecker.Msg m : r.ordered()) {
            for (LogChecker.Lease l : m.leases()) {
                if (l.witness() != null && l.witness().length > 0) {
                    String file = bucketPath(m.bucket()) + "/" + m.file();
                    flip(root.resolve(log).resolve(file), m.offset(), l.witness(), deadlineIndex(l.witness()));
                    return new Flipped(file, m.offset());
                }
            }
        }
        throw new AssertionError("no stored lease of log '" + log + "' under " + root + " carries a witness");
    }

    /** The index in a frame witness of the deadline's last byte (the witness starts at byte 8). */
    private static int deadlineIndex(byte[] fw) {
        int at = 8 + 22;
        at += 2 + u16(fw, at); // service id
        at += 2 + u16(fw, at); // name
        return at + 8 + 1 + 4 + 1 + 8 + 8 + 7; // generation, mode, permits, kind, floor, writableFrom; deadline
    }

    private static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) << 8 | b[at + 1] & 0xFF;
    }

    /** The directory of the bucket starting at {@code micros}, relative to its log's. */
    private static String bucketPath(long micros) {
        LocalDateTime t = LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000), 0, ZoneOffset.UTC);
        return String.format("%04d/%02d/%02d/%02d/%02d/%02d.%06d", t.getYear(), t.getMonthValue(), t.getDayOfMonth(),
                t.getHour(), t.getMinute(), t.getSecond(), Math.floorMod(micros, 1_000_000));
    }

    private static void flip(Path f, long frameOffset, byte[] fw, int index) throws IOException {
        byte[] all = Files.readAllBytes(f);
        int o = Math.toIntExact(frameOffset);
        int length = (all[o + 8] & 0xFF) << 24 | (all[o + 9] & 0xFF) << 16 | (all[o + 10] & 0xFF) << 8
                | all[o + 11] & 0xFF;
        int at = find(all, o, length, fw);
        if (at < 0) {
            throw new AssertionError("the frame at " + o + " of " + f + " does not hold the witness to damage");
        }
        all[at + index] ^= 1;
        CRC32C crc = new CRC32C();
        crc.update(all, o, 12);
        crc.update(all, o + 16, length - 16);
        int c = (int) crc.getValue();
        all[o + 12] = (byte) (c >>> 24);
        all[o + 13] = (byte) (c >>> 16);
        all[o + 14] = (byte) (c >>> 8);
        all[o + 15] = (byte) c;
        if (!f.toFile().setWritable(true)) {
            throw new IOException("cannot make " + f + " writable to damage it");
        }
        Files.write(f, all);
    }

    private static int find(byte[] all, int from, int length, byte[] what) {
        for (int i = from; i + what.length <= from + length; i++) {
            if (java.util.Arrays.equals(all, i, i + what.length, what, 0, what.length)) {
                return i;
            }
        }
        return -1;
    }
}
