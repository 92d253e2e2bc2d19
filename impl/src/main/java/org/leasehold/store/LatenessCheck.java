package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.LockFile;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The committer's half of the write rule (the leases' half is {@link WriteRule}): whether one log's buckets may be
 * written before the write, and whether what was written counts after it, against sealing. Per bucket:
 * <ol>
 *   <li>Before writing ({@link #gate}): refuse if the bucket is known sealed, or this clock says it is past its grace;
 *       when it is past {@code end + grace - maxClockError}, list the bucket and refuse if {@code prelock} or
 *       {@code lock} exists. A new data file is created exclusively and the bucket listed afterwards: {@code prelock}
 *       means a sealer may not list it, so the write is refused (nothing written).
 *   <li>Write, then force (or close), <em>then</em> read the clock. Before {@code end + grace - maxClockError} no
 *       correct sealer can have begun: acknowledged.
 *   <li>Otherwise ({@link #decide}) list the bucket. With a {@code lock}, succeed only if the frame ends within the
 *       listed size. With a {@code prelock}, or once the clock says the bucket is due, help seal, listing this
 *       writer's files without the frames being decided; then the same rule. With neither (and not due), any later
 *       sealer lists the bytes: acknowledged.
 * </ol>
 * Committer thread only.
 */
final class LatenessCheck {
    private final LogHandle log;
    private final LogGeometry g;
    private final NfsSafeFiles fs;
    private final TimeSource time;
    private final Sealer sealer;
    private final String writerId;
    private final AppendCounters counters;
    private final TreeSet<Long> sealed = new TreeSet<>();

    LatenessCheck(StoreContext ctx, LogHandle log, AppendCounters counters) {
        this.log = log;
        this.g = log.geometry();
        this.fs = ctx.files();
        this.time = ctx.time();
        this.sealer = ctx.sealer();
        this.writerId = ctx.writerId();
        this.counters = counters;
    }

    /** Refuses before writing when the bucket is sealed, being sealed, or past grace by this clock. */
    void gate(long bucket) throws BagStoreException, IOException {
        if (sealed.contains(bucket)) {
            throw AppendErrors.sealedBefore(log, bucket);
        }
        long now = time.nowMicros();
        if (now >= g.dueAt(bucket)) {
            throw new BucketSealedException(BucketSealedException.Reason.PAST_GRACE, log.name(), log.bucketPath(bucket),
                    Micros.toInstant(bucket), "bucket " + log.bucketPath(bucket) + " of log '" + log.name()
                            + "' ended at " + Micros.toInstant(g.end(bucket)) + " and its grace ran out at "
                            + Micros.toInstant(g.dueAt(bucket)) + " (this process's clock reads " + Micros.toInstant(now)
                            + "): it may be being sealed, so nothing was written. Append again with a current timestamp");
        }
        if (now >= g.onTimeUntil(bucket)) {
            List<String> names;
            try {
                names = fs.list(log.bucketDir(bucket));
            } catch (NoSuchFileException e) {
                names = List.of();
            }
            if (names.contains(Names.PRELOCK) || names.contains(Names.LOCK)) {
                throw refuseSealed(bucket);
            }
        }
    }

    /** Whether sealing of {@code bucket} began (a {@code prelock} or {@code lock} is listed); false if it cannot tell. */
    boolean sealingBegun(long bucket) {
        try {
            List<String> names = fs.list(log.bucketDir(bucket));
            return names.contains(Names.PRELOCK) || names.contains(Names.LOCK);
        } catch (IOException e) {
            return false;
        }
    }

    /** Remembers {@code bucket} as sealed and returns the refusal of a write to it. */
    BucketSealedException refuseSealed(long bucket) {
        sealed.add(bucket);
        return AppendErrors.sealedBefore(log, bucket);
    }

    /** Whether {@code bucket} is known to be sealed. */
    boolean knownSealed(long bucket) {
        return sealed.contains(bucket);
    }

    /** Forgets the sealed buckets that are past their grace by {@code now} (nothing is written to them anyway). */
    void forgetDue(long now) {
        while (!sealed.isEmpty() && g.dueAt(sealed.first()) <= now) {
            sealed.pollFirst();
        }
    }

    /**
     * Decides every written frame of the batch at {@code now}, the clock read after the write: frames whose write or
     * flush failed fail; on-time frames succeed; late ones are judged against the bucket's lock file.
     *
     * @param sizesBefore per bucket, this writer's data files at their sizes before the batch (for helping seal)
     */
    void decide(List<FileRun> fileRuns, Map<Long, Map<String, Long>> sizesBefore, long now) {
        Map<Long, List<PendingAppend>> candidates = new LinkedHashMap<>();
        for (FileRun s : fileRuns) {
            for (PendingAppend p : s.items) {
                boolean complete = !p.frame.hasRemaining();
                if (s.writeError != null && !complete) {
                    p.fail(AppendErrors.notWritten(log, p, s.writeError));
                } else if (s.flushError != null) {
                    p.fail(AppendErrors.outcomeUnknown(log, p, s.flushError));
                } else {
                    candidates.computeIfAbsent(p.bucket, k -> new ArrayList<>()).add(p);
                }
            }
        }
        for (Map.Entry<Long, List<PendingAppend>> e : candidates.entrySet()) {
            decideBucket(e.getKey(), e.getValue(), sizesBefore.get(e.getKey()), now);
        }
    }

    private void decideBucket(long bucket, List<PendingAppend> ps, Map<String, Long> own, long now) {
        if (now < g.onTimeUntil(bucket)) {
            for (PendingAppend p : ps) {
                succeed(p);
            }
            return;
        }
        counters.lateChecks.increment();
        LockFile lf;
        try {
            lf = lockForLateWrite(bucket, now, own);
        } catch (BagStoreException | IOException ex) {
            for (PendingAppend p : ps) {
                p.fail(new WriteOutcomeUnknownException("the append to " + AppendErrors.where(log, bucket)
                        + " was written late (this clock read " + Micros.toInstant(now) + ", on time until "
                        + Micros.toInstant(g.onTimeUntil(bucket)) + ") and checking whether sealing had begun failed: "
                        + ex.getMessage() + "; read the bucket once it is sealed to find out", ex));
            }
            return;
        }
        if (lf == null) {
            for (PendingAppend p : ps) {
                succeed(p);
            }
            return;
        }
        sealed.add(bucket);
        for (PendingAppend p : ps) {
            long listed = lf.sizeOf(p.file.name);
            if (listed >= p.offset + p.length) {
                succeed(p);
            } else {
                p.fail(new BucketSealedException(BucketSealedException.Reason.LATE,
                        log.name(), log.bucketPath(bucket), Micros.toInstant(bucket), "the append to log '"
                        + log.name() + "' landed in " + p.file.name + " at offset " + p.offset + " of bucket "
                        + log.bucketPath(bucket) + " only after sealing began (this clock read "
                        + Micros.toInstant(now) + "; on time until " + Micros.toInstant(g.onTimeUntil(bucket))
                        + "); the lock file lists that file at " + Math.max(0, listed)
                        + " bytes, so the append is refused and will never be readable. Append again with a "
                        + "current timestamp under a lease that is still valid"));
            }
        }
    }

    /**
     * The lock file that decides a late write, or null if sealing has not begun and the bucket is not due: then any
     * sealer that starts later lists the written bytes.
     */
    private LockFile lockForLateWrite(long bucket, long now, Map<String, Long> own) throws BagStoreException,
            IOException {
        List<String> names = fs.list(log.bucketDir(bucket));
        if (names.contains(Names.LOCK)) {
            return sealer.readLock(log, bucket);
        }
        if (names.contains(Names.PRELOCK) || now >= g.dueAt(bucket)) {
            return sealer.seal(log, bucket, false, own).lock();
        }
        return null;
    }

    private void succeed(PendingAppend p) {
        p.result = new Appended(log.name(), Micros.toInstant(p.bucket), writerId, p.file.name, p.offset, p.length,
                Micros.toInstant(p.t), p.messages);
    }
}
