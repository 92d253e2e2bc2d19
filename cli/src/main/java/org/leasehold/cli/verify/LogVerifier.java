package org.leasehold.cli.verify;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditProblem;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.Witness;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;

/**
 * Proves a bag store's logs from the stored bytes alone, or reports where they fail: every witness's signature (one
 * per Merkle batch, remembered) and inclusion path against the published keys; that each message lies in
 * {@code (floor, deadline)} of every lease it carries and at or after its {@code writableFrom}, and within the bound of
 * the signed time it carries; per name, that generations strictly increase with grant time, that each grant's
 * predecessor correlation id is the previous grant's, that no exclusive holder wrote at or above its successor's floor
 * or above the watermark its lease was released with, and that an expired holder's messages were sealed before its
 * successor wrote; and that messages of a name appear in lease order. With {@link LogScanner} this covers invariants
 * 1 to 6 of the project's mission as far as stored bytes can show them.
 *
 * <p>One instance verifies one run (one or more logs; names are followed across them). Not thread-safe.
 */
public final class LogVerifier {

    /**
     * What the verifier accepts.
     *
     * @param keys              the published keys
     * @param timeBoundMicros   the largest difference between a message's timestamp and the signed time it carries
     * @param requireWitnesses  whether a lease without a witness is an error (else a warning)
     */
    public record Options(KeySet keys, long timeBoundMicros, boolean requireWitnesses) {
    }

    /** Told how far the run is, one bucket at a time. */
    public interface Progress {
        /** A log with {@code buckets} buckets is about to be read. */
        void starting(String log, int buckets);

        /** One more bucket was read and checked. */
        void bucket();
    }

    /** A frame's place: the log, bucket, file and offset. */
    private record Place(String log, long bucket, String file, long offset) {
    }

    /** A witness field as checked once: the decoded witness (null if malformed) and what is wrong with it. */
    private record Checked(FrameWitness fw, boolean trusted) {
    }

    /** What the log shows of one grant (one correlation id) of a name. */
    private static final class Grant {
        final Witness first;
        long deadline;
        long maxTimestamp = Long.MIN_VALUE;
        Place maxPlace;
        Place unsealed;
        long messages;

        Grant(Witness w) {
            this.first = w;
            this.deadline = w.deadline();
        }
    }

    private final Options options;
    private final AuditVerifier audit;
    private final Consumer<Finding> out;
    private final Progress progress;
    private final Map<ByteBuffer, Checked> checked = new HashMap<>();
    private final Map<String, Map<CorrelationId, Grant>> grants = new HashMap<>();
    private final Map<String, long[]> lastGeneration = new HashMap<>();
    private final Map<String, Long> missing = new HashMap<>();
    private final long[] counts = new long[Counter.values().length];

    /** What a run counts. */
    public enum Counter {
        /** Logs read. */
        LOGS,
        /** Buckets read. */
        BUCKETS,
        /** Valid frames read. */
        FRAMES,
        /** Messages in them. */
        MESSAGES,
        /** Leases stamped on frames. */
        STAMPS,
        /** Distinct witness fields checked. */
        WITNESSES,
        /** Stamps without a witness. */
        MISSING_WITNESSES,
        /** Errors found. */
        ERRORS,
        /** Warnings found. */
        WARNINGS
    }

    /**
     * A verifier for one run.
     *
     * @param options  what it accepts
     * @param out      receives each finding as it is found (grant findings at the end)
     * @param progress told of each bucket read, or null
     */
    public LogVerifier(Options options, Consumer<Finding> out, Progress progress) {
        this.options = options;
        this.audit = new AuditVerifier(options.keys());
        this.out = out;
        this.progress = progress;
    }

    /** The count of {@code c} so far. */
    public long count(Counter c) {
        return counts[c.ordinal()];
    }

    /** Ed25519 signatures checked so far (one per distinct batch). */
    public long signatureChecks() {
        return audit.signatureChecks();
    }

    /** Grants seen (distinct correlation ids with a usable witness). */
    public long grants() {
        long n = 0;
        for (Map<CorrelationId, Grant> m : grants.values()) {
            n += m.size();
        }
        return n;
    }

    /** Names seen with a usable witness. */
    public int names() {
        return grants.size();
    }

    /** Reads and checks the log in directory {@code <root>/<log>}; call {@link #finish()} after the last log. */
    public void verifyLog(Path root, String log) throws IOException {
        Path dir = root.resolve(log);
        if (!Files.isDirectory(dir)) {
            throw new IOException("the store " + root + " has no log '" + log + "' (no directory " + dir + ")");
        }
        counts[Counter.LOGS.ordinal()]++;
        new LogScanner(dir, log, new LogScanner.Sink() {
            @Override
            public void starting(String l, int buckets) {
                if (progress != null) {
                    progress.starting(l, buckets);
                }
            }

            @Override
            public void bucket(String l, long start, boolean sealed, List<StoredFrame> frames) {
                counts[Counter.BUCKETS.ordinal()]++;
                frames.sort(StoredFrame::compare);
                for (StoredFrame f : frames) {
                    frame(l, f);
                }
                if (progress != null) {
                    progress.bucket();
                }
            }

            @Override
            public void finding(Finding f) {
                report(f);
            }
        }).scan();
    }

    private void report(Finding f) {
        counts[(f.severity() == Finding.Severity.ERROR ? Counter.ERRORS : Counter.WARNINGS).ordinal()]++;
        out.accept(f);
    }

    private void report(Finding.Kind kind, Place p, String name, String message) {
        report(new Finding(kind, p.log, p.bucket, p.file, p.offset, name, message));
    }

    private void frame(String log, StoredFrame f) {
        counts[Counter.FRAMES.ordinal()]++;
        counts[Counter.MESSAGES.ordinal()] += f.messages();
        Place place = new Place(log, f.bucket(), f.file(), f.offset());
        long ts = f.timestamp();
        long signed = Long.MIN_VALUE;
        for (int i = 0; i < f.names().length; i++) {
            counts[Counter.STAMPS.ordinal()]++;
            String name = f.names()[i];
            long gen = f.generations()[i];
            byte[] wb = f.witnesses()[i];
            if (wb.length == 0) {
                missingWitness(place, name, gen);
                continue;
            }
            Checked c = check(wb, place, name);
            if (c.fw == null) {
                continue;
            }
            Witness w = c.fw.witness();
            if (!w.name().equals(name) || w.generation() != gen) {
                report(Finding.Kind.WITNESS_OF_OTHER_LEASE, place, name, "the lease '" + name + "' generation " + gen
                        + " carries the witness of '" + w.name() + "' generation " + w.generation()
                        + ": the message is not proven to be written under its lease");
                continue;
            }
            signed = Math.max(signed, c.fw.latestSignedTime());
            if (w.kind() == LeaseKind.TENTATIVE) {
                report(Finding.Kind.TENTATIVE_LEASE, place, name, "the message was written under a tentative lease on '"
                        + name + "' generation " + gen + " (" + w.event() + " at " + w.signedTime() + " us)");
            }
            if (ts <= w.floor() || ts >= w.deadline() || ts < w.writableFrom()) {
                report(Finding.Kind.OUTSIDE_LEASE, place, name, "the message's timestamp " + ts + " us is not in "
                        + "(floor " + w.floor() + ", deadline " + w.deadline() + ") at or after writableFrom "
                        + w.writableFrom() + " of lease '" + name + "' generation " + gen + " (" + w.event()
                        + " signed at " + w.signedTime() + " us)");
            }
            if (c.trusted) {
                grant(w, place, name, ts, f.sealed(), f.messages());
            }
        }
        if (signed != Long.MIN_VALUE && Math.abs(ts - signed) > options.timeBoundMicros()) {
            report(Finding.Kind.SIGNED_TIME_BOUND, place, null, "the message's timestamp " + ts + " us is "
                    + (ts - signed) + " us from the latest signed time its witnesses carry (" + signed
                    + " us); the bound is " + options.timeBoundMicros() + " us: the writer's clock was off, or the "
                    + "timestamp was not taken when it wrote");
        }
    }

    private void missingWitness(Place place, String name, long gen) {
        counts[Counter.MISSING_WITNESSES.ordinal()]++;
        // One finding per grant (name and generation), at its first message: an old log would repeat it on every frame.
        if (missing.putIfAbsent(name + "\u0000" + gen, gen) == null) {
            boolean req = options.requireWitnesses();
            report(req ? Finding.Kind.MISSING_WITNESS_REQUIRED : Finding.Kind.MISSING_WITNESS, place, name,
                    "the lease '" + name + "' generation " + gen + " carries no witness (here first): "
                    + (req ? "witnesses are required" : "written before witnesses or by a lease service that does "
                    + "not sign; its messages are not proven (--require-witnesses makes this an error)"));
        }
    }

    /** Decodes and verifies a witness field once; its findings are reported at its first place. */
    private Checked check(byte[] wb, Place place, String name) {
        ByteBuffer key = ByteBuffer.wrap(wb);
        Checked c = checked.get(key);
        if (c != null) {
            return c;
        }
        counts[Counter.WITNESSES.ordinal()]++;
        FrameWitness fw;
        try {
            fw = FrameWitness.decode(wb);
        } catch (AuditFormatException | RuntimeException e) {
            report(Finding.Kind.MALFORMED_WITNESS, place, name, "the witness of lease '" + name + "' does not decode: "
                    + e.getMessage());
            c = new Checked(null, false);
            checked.put(key, c);
            return c;
        }
        boolean trusted = true;
        for (AuditProblem p : audit.check(fw)) {
            Finding.Kind kind = kind(p.kind());
            trusted &= kind == Finding.Kind.KEY_REVOKED || kind == Finding.Kind.KEY_NOT_VALID
                    || kind == Finding.Kind.SERVICE_MISMATCH;
            report(kind, place, name, p.message());
        }
        c = new Checked(fw, trusted);
        checked.put(key, c);
        return c;
    }

    private static Finding.Kind kind(AuditProblem.Kind k) {
        return switch (k) {
            case UNKNOWN_KEY -> Finding.Kind.UNKNOWN_KEY;
            case KEY_MISMATCH -> Finding.Kind.KEY_MISMATCH;
            case BAD_PATH -> Finding.Kind.BAD_PATH;
            case KEY_NOT_VALID -> Finding.Kind.KEY_NOT_VALID;
            case KEY_REVOKED -> Finding.Kind.KEY_REVOKED;
            case SERVICE_MISMATCH -> Finding.Kind.SERVICE_MISMATCH;
            default -> Finding.Kind.BAD_SIGNATURE;
        };
    }

    private static String principal(Witness w) {
        return w.principal() == null ? "" : " for principal '" + w.principal() + "'";
    }

    private void grant(Witness w, Place place, String name, long ts, boolean sealed, int messages) {
        Map<CorrelationId, Grant> byId = grants.computeIfAbsent(name, n -> new HashMap<>());
        Grant g = byId.get(w.correlationId());
        if (g == null) {
            g = new Grant(w);
            byId.put(w.correlationId(), g);
        } else if (g.first.generation() != w.generation() || !g.first.holder().equals(w.holder())
                || !g.first.mode().equals(w.mode()) || !Objects.equals(g.first.principal(), w.principal())) {
            report(Finding.Kind.CONFLICTING_WITNESSES, place, name, "two witnesses of grant " + w.correlationId()
                    + " on '" + name + "' disagree: generation " + g.first.generation() + " held by "
                    + g.first.holder() + principal(g.first) + " (" + g.first.mode() + ") and generation "
                    + w.generation() + " held by " + w.holder() + principal(w) + " (" + w.mode() + ")");
            return;
        }
        g.deadline = Math.max(g.deadline, w.deadline());
        g.messages += messages;
        if (ts > g.maxTimestamp) {
            g.maxTimestamp = ts;
            g.maxPlace = place;
        }
        if (!sealed && g.unsealed == null) {
            g.unsealed = place;
        }
        if (w.mode().type() == LeaseMode.Type.EXCLUSIVE) {
            long[] last = lastGeneration.get(name);
            if (last != null && w.generation() < last[0]) {
                report(Finding.Kind.LEASE_ORDER, place, name, "in read order, a message of '" + name + "' generation "
                        + w.generation() + " follows one of generation " + last[0] + " (timestamp " + last[1]
                        + " us): readers see the name's holders out of lease order");
            } else {
                lastGeneration.put(name, new long[] {w.generation(), ts});
            }
        }
    }

    /** Checks what only the whole run shows: per name, the chain of grants. Call once, after the last log. */
    public void finish() {
        for (Map.Entry<String, Map<CorrelationId, Grant>> e : new java.util.TreeMap<>(grants).entrySet()) {
            chain(e.getKey(), e.getValue().values());
        }
    }

    private void chain(String name, Collection<Grant> all) {
        List<Grant> list = new ArrayList<>(all);
        list.sort((a, b) -> Long.compare(a.first.generation(), b.first.generation()));
        Map<CorrelationId, Grant> byId = new HashMap<>();
        for (Grant g : list) {
            byId.put(g.first.correlationId(), g);
        }
        for (int i = 1; i < list.size(); i++) {
            Grant p = list.get(i - 1);
            Grant s = list.get(i);
            Witness pw = p.first;
            Witness sw = s.first;
            Place at = s.maxPlace;
            if (pw.generation() == sw.generation()) {
                report(Finding.Kind.GENERATION_ORDER, at, name, "grants " + pw.correlationId() + " (held by "
                        + pw.holder() + ") and " + sw.correlationId() + " (held by " + sw.holder() + ") of '" + name
                        + "' share generation " + sw.generation() + ": generations must strictly increase");
                continue;
            }
            if (sw.grantedAt() < pw.grantedAt()) {
                report(Finding.Kind.GENERATION_ORDER, at, name, "generation " + sw.generation() + " of '" + name
                        + "' was granted at " + sw.grantedAt() + " us, before generation " + pw.generation() + " ("
                        + pw.grantedAt() + " us): generations must increase with grant time");
            }
            boolean exclusive = pw.mode().type() == LeaseMode.Type.EXCLUSIVE
                    && sw.mode().type() == LeaseMode.Type.EXCLUSIVE;
            boolean linked = sw.predecessorId().equals(pw.correlationId());
            if (exclusive && !linked && !sw.predecessorId().equals(CorrelationId.NONE)) {
                Grant named = byId.get(sw.predecessorId());
                if (named != null) {
                    report(Finding.Kind.BROKEN_CHAIN, at, name, "generation " + sw.generation() + " of '" + name
                            + "' names grant " + sw.predecessorId() + " (generation " + named.first.generation()
                            + ") as its predecessor, but the previous grant is " + pw.correlationId()
                            + " (generation " + pw.generation() + ")");
                }
            }
            if (!exclusive) {
                continue;
            }
            if (linked && sw.predecessorWatermark() != Long.MIN_VALUE && p.maxTimestamp > sw.predecessorWatermark()) {
                report(Finding.Kind.STALE_HOLDER_WRITE, p.maxPlace, name, "holder " + pw.holder() + " of '" + name
                        + "' generation " + pw.generation() + " wrote at " + p.maxTimestamp + " us, above the watermark "
                        + sw.predecessorWatermark() + " us its lease was released with (at "
                        + sw.predecessorWatermarkSignedAt() + " us, before generation " + sw.generation()
                        + " was granted): a write after release");
            } else if (p.maxTimestamp > sw.floor()) {
                report(Finding.Kind.LEASES_OVERLAP, p.maxPlace, name, "holder " + pw.holder() + " of '" + name
                        + "' generation " + pw.generation() + " wrote at " + p.maxTimestamp + " us, above the floor "
                        + sw.floor() + " us of generation " + sw.generation() + ": two holders' messages "
                        + "share a time range");
            }
            if (linked && sw.predecessorEnding() == Ending.EXPIRED) {
                if (sw.writableFrom() < p.deadline) {
                    report(Finding.Kind.LEASES_OVERLAP, at, name, "generation " + sw.generation() + " of '" + name
                            + "' may write from " + sw.writableFrom() + " us, before its expired predecessor's "
                            + "deadline " + p.deadline + " us");
                }
                if (s.messages > 0 && p.unsealed != null) {
                    report(Finding.Kind.UNSEALED_AFTER_EXPIRY, p.unsealed, name, "holder " + pw.holder() + " of '"
                            + name + "' generation " + pw.generation() + " expired, and its successor (generation "
                            + sw.generation() + ") wrote, but this message's bucket is not sealed: it could still "
                            + "become visible to readers after the successor's");
                }
            }
        }
    }
}
