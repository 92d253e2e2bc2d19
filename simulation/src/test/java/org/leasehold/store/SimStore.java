package org.leasehold.store;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LockFile;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The bag store's real write, seal and read code for one writer of one log, run on the calling thread instead of a
 * committer thread, so that the deterministic simulation can run it step by step on its scheduler. The parts are the
 * store's own ({@link WriteRule}, {@link Frames}, {@link LatenessCheck}, {@link DataFiles}, {@link FileRunWriter},
 * {@link Sealer}, {@link LogReader}); what this class adds is the glue the store's {@link FileBagStore} and
 * {@link Appender} do between them, kept line for line in the same order: choose the timestamp under the write rule
 * (sealing an expired predecessor's buckets first), encode, keep each data file in timestamp order, plan the batch
 * per bucket and data file, write and flush, read the clock, decide. What it leaves out: the queue, the threads, the
 * metronome, the writer lock and argument validation.
 */
public final class SimStore {
    private final StoreContext ctx;
    private final LogHandle log;
    private final LogGeometry g;
    private final TimeSource time;
    private final Sealer sealer;
    private final LatenessCheck check;
    private final DataFiles files;
    private final FileRunWriter writer;
    private final long maxLease;
    private final boolean trustModeBits;
    private final Set<Long> successorSealed = new HashSet<>();
    private long lastQueued = Long.MIN_VALUE;

    /**
     * A writer {@code writerId} (null for a process that only seals and reads) of the log {@code logName} in
     * {@code logDir}, with the geometry of {@code config}.
     */
    public SimStore(BagStoreConfig config, String writerId, TimeSource time, Path logDir, String logName) {
        this(config, writerId, time, logDir, logName, false);
    }

    /**
     * As above; with {@code trustModeBits} the writer is BROKEN on purpose: it decides a late write by re-opening its
     * data file for writing (refused once a sealer made it read-only) instead of looking for the {@code prelock} and
     * reading the lock file, which root, or a descriptor opened before the chmod, gets past.
     */
    public SimStore(BagStoreConfig config, String writerId, TimeSource time, Path logDir, String logName,
            boolean trustModeBits) {
        this.trustModeBits = trustModeBits;
        NfsSafeFiles fs = new NfsSafeFiles();
        this.time = time;
        this.sealer = new Sealer(fs, writerId == null ? "sealer" : writerId, time);
        this.ctx = new StoreContext(config.validate(), writerId, fs, time, StoreHooks.NONE, sealer);
        this.g = LogGeometry.of(config);
        this.log = new LogHandle(logName, logDir, g);
        AppendCounters counters = new AppendCounters();
        this.check = new LatenessCheck(ctx, log, counters);
        this.files = new DataFiles(ctx, log, check, (l, b) -> { }, counters);
        this.writer = new FileRunWriter(ctx, log, files, counters);
        this.maxLease = Micros.of(config.maxLeaseDuration());
    }

    /** The outcome of one append: exactly one of {@code appended} and {@code failure} is set. */
    public record Outcome(long timestamp, Appended appended, BagStoreException failure, boolean written) {
    }

    /** One append of a batch: its leases and payloads. */
    public record Submission(List<LeaseStamp> leases, List<byte[]> payloads) {
    }

    /**
     * Commits {@code batch} as one group commit, as {@code FileBagStore.appendAsync} and the committer do; returns one
     * outcome per submission, in order.
     */
    public List<Outcome> commit(List<Submission> batch) {
        List<PendingAppend> queued = new ArrayList<>();
        Outcome[] out = new Outcome[batch.size()];
        Map<PendingAppend, Integer> index = new HashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            Submission s = batch.get(i);
            try {
                PendingAppend p = prepare(s);
                submit(p);
                index.put(p, i);
                queued.add(p);
            } catch (BagStoreException e) {
                out[i] = new Outcome(Long.MIN_VALUE, null, e, false);
            }
        }
        if (!queued.isEmpty()) {
            commitQueued(queued);
            files.closeRetired();
        }
        for (PendingAppend p : queued) {
            out[index.get(p)] = new Outcome(p.t, p.result, p.result == null ? failureOf(p) : null, p.file != null);
        }
        return List.of(out);
    }

    private static BagStoreException failureOf(PendingAppend p) {
        return p.failure != null ? p.failure : new org.leasehold.bag.WriteOutcomeUnknownException("no outcome decided", null);
    }

    /** As {@code FileBagStore.prepare}: the write rule, sealing for a successor, the timestamp, the frame. */
    private PendingAppend prepare(Submission r) throws BagStoreException {
        byte[][] names = Frames.names(r.leases());
        long size = Frames.size(r.leases(), names, r.payloads());
        long now = time.nowMicros();
        WriteRule.Window window = WriteRule.window(g, r.leases());
        window.checkWritable(log.name(), now);
        for (long pe : window.expiredPredecessors()) {
            if (!successorSealed.contains(pe)) {
                sealForSuccessor(pe);
                successorSealed.add(pe);
            }
        }
        long t = window.timestamp(log.name(), null, now, ctx.config().maxClockError());
        ByteBuffer frame = Frames.encode(t, r.leases(), names, r.payloads(), (int) size);
        return new PendingAppend(frame, r.payloads().size(), t, window.deadline(), false);
    }

    /** As {@code Appender.submit}: keeps the timestamps of this writer's frames from going back. */
    private void submit(PendingAppend p) {
        if (!p.callerTime && p.t < lastQueued && lastQueued < p.deadline) {
            p.t = lastQueued;
            Frames.retime(p.frame, p.t);
        }
        if (p.t > lastQueued) {
            lastQueued = p.t;
        }
        p.bucket = g.bucketOf(p.t);
    }

    /** As {@code Appender.commit}. */
    private void commitQueued(List<PendingAppend> batch) {
        LinkedHashMap<Long, List<PendingAppend>> groups = new LinkedHashMap<>();
        for (PendingAppend p : batch) {
            groups.computeIfAbsent(p.bucket, k -> new ArrayList<>()).add(p);
        }
        List<FileRun> fileRuns = new ArrayList<>();
        Map<Long, Map<String, Long>> sizesBefore = new HashMap<>();
        for (Map.Entry<Long, List<PendingAppend>> e : groups.entrySet()) {
            plan(e.getKey(), e.getValue(), fileRuns, sizesBefore);
        }
        if (fileRuns.isEmpty()) {
            return;
        }
        writer.write(fileRuns);
        files.closeRetired();
        long now = time.nowMicros();
        if (trustModeBits) {
            decideByModeBits(fileRuns, now);
        } else {
            check.decide(fileRuns, sizesBefore, now);
        }
        files.closeDue(now);
        check.forgetDue(now);
    }

    /** The broken decision: on time, or the data file can still be opened for writing. */
    private void decideByModeBits(List<FileRun> fileRuns, long now) {
        for (FileRun s : fileRuns) {
            boolean writable = now < g.onTimeUntil(s.file.bucket);
            if (!writable) {
                try (java.nio.channels.FileChannel ch = ctx.files().openForAppend(s.file.path)) {
                    writable = true;
                } catch (java.io.IOException e) {
                    writable = false;
                }
            }
            for (PendingAppend p : s.items) {
                if (s.writeError != null || s.flushError != null) {
                    p.fail(new org.leasehold.bag.WriteOutcomeUnknownException("write failed", s.writeError));
                } else if (writable) {
                    p.result = new Appended(log.name(), Micros.toInstant(p.bucket), ctx.writerId(), p.file.name,
                            p.offset, p.length, Micros.toInstant(p.t), p.messages);
                } else {
                    p.fail(check.refuseSealed(p.bucket));
                }
            }
        }
    }

    /** As {@code Appender.plan}. */
    private void plan(long bucket, List<PendingAppend> ps, List<FileRun> fileRuns,
            Map<Long, Map<String, Long>> sizesBefore) {
        int assigned = 0;
        try {
            check.gate(bucket);
            DataFile f = files.fileFor(bucket);
            FileRun fileRun = null;
            for (PendingAppend p : ps) {
                if (p.t < f.plannedLastT) {
                    f = files.next(f);
                    fileRun = null;
                }
                if (fileRun == null) {
                    fileRun = new FileRun(f);
                    fileRuns.add(fileRun);
                    sizesBefore.computeIfAbsent(bucket, k -> new HashMap<>()).putIfAbsent(f.name, f.size);
                }
                fileRun.items.add(p);
                f.plannedLastT = p.t;
                assigned++;
            }
        } catch (BagStoreException ex) {
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(ex);
            }
        } catch (java.io.IOException ex) {
            org.leasehold.bag.StoreUnavailableException su = AppendErrors.cannotWrite(log, bucket, ex);
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(su);
            }
        }
    }

    /** As {@code FileBagStore.sealForSuccessor}: seals every bucket the expired predecessor can have written. */
    public void sealForSuccessor(long predecessorDeadline) throws BagStoreException {
        sealRange(WriteRule.successorSealFrom(g, predecessorDeadline, maxLease), predecessorDeadline);
    }

    /** When the successor of a lease that expired at {@code predecessorDeadline} may write. */
    public long successorWritableFrom(long predecessorDeadline) {
        return WriteRule.successorWritableFrom(g, predecessorDeadline);
    }

    /** As {@code FileBagStore.sealRange}. */
    public void sealRange(long from, long through) throws BagStoreException {
        if (through <= from) {
            return;
        }
        long first = g.bucketOf(from);
        long last = g.bucketOf(through - 1);
        long now = time.nowMicros();
        if (now < g.dueAt(last)) {
            throw new BucketNotDueException(Micros.toInstant(g.dueAt(last)), "bucket " + log.bucketPath(last)
                    + " is not due (simulated sealForSuccessor)");
        }
        for (long b = first; b <= last; b += g.widthMicros()) {
            sealer.seal(log, b, true, null);
        }
    }

    /** Seals one bucket as the metronome does (an existing one only); false if the bucket does not exist. */
    public boolean seal(long bucket) throws BagStoreException {
        return sealer.seal(log, bucket, false, null) != null;
    }

    /** The sizes the lock file of a sealed bucket lists, or null when it has none (as the reader sees it). */
    public Map<String, Long> lockSizes(long bucket) throws BagStoreException, java.io.IOException {
        LockFile lf = sealer.readLock(log, bucket);
        Map<String, Long> m = new LinkedHashMap<>();
        for (LockFile.Entry e : lf.files()) {
            m.put(e.name(), e.size());
        }
        return m;
    }

    /** A read of this log by the store's reader. */
    public MessageStream read(Instant from, Instant to, boolean sealedOnly, String name) throws BagStoreException {
        ReadRequest r = ReadRequest.all(log.name()).between(from, to);
        if (name != null) {
            r = r.underAnyOf(Set.of(name));
        }
        if (sealedOnly) {
            r = r.sealedOnly();
        }
        return new LogReader(ctx, log, r);
    }

    public LogGeometry geometry() {
        return g;
    }
}
