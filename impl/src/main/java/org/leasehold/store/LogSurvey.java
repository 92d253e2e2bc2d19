package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.Micros;

/**
 * What is on disk for one log in a time range, as {@link StoreReader#survey} found it: its bucket directories, sealed
 * or not, their data files and bytes. Nothing is read from the data files; sealed bytes come from the lock files.
 *
 * @param log              the log
 * @param geometry         the log's bucket width, grace and clock error
 * @param surveyedAt       the instant the survey judged due buckets and the seal lag by
 * @param buckets          bucket directories in the range
 * @param sealedBuckets    those with a lock file
 * @param dueUnsealed      unsealed ones whose end plus grace has passed (a sealer may, and the metronome of a writer
 *                         of the log will, seal them)
 * @param dataFiles        data files in those buckets
 * @param bytes            the data files' sizes on disk
 * @param sealedBytes      the bytes the lock files list (what readers of sealed buckets read)
 * @param unsealedBytes    the data files' sizes on disk in unsealed buckets (readable as tentative)
 * @param firstBucket      the start of the first bucket, or null if there is none
 * @param lastBucket       the start of the last bucket, or null
 * @param newestSealedEnd  the end of the newest sealed bucket, or null if none is sealed
 * @param oldestUnsealed   the start of the oldest unsealed bucket, or null if all are sealed
 */
public record LogSurvey(String log, LogGeometry geometry, Instant surveyedAt, long buckets, long sealedBuckets,
        long dueUnsealed, long dataFiles, long bytes, long sealedBytes, long unsealedBytes, Instant firstBucket,
        Instant lastBucket, Instant newestSealedEnd, Instant oldestUnsealed) {

    /** Unsealed bucket directories in the range. */
    public long unsealedBuckets() {
        return buckets - sealedBuckets;
    }

    /**
     * Bytes on disk in sealed buckets beyond what their lock files list: writes that landed after sealing began and
     * were refused (never acknowledged, never read).
     */
    public long refusedBytes() {
        return bytes - sealedBytes - unsealedBytes;
    }

    /** How far sealing lags: {@link #surveyedAt} minus {@link #newestSealedEnd}, or null if no bucket is sealed. */
    public Duration sealLag() {
        return newestSealedEnd == null ? null : Duration.between(newestSealedEnd, surveyedAt);
    }

    static LogSurvey of(StoreContext store, LogHandle log, long from, long to, long now) throws BagStoreException {
        NfsSafeFiles fs = store.files();
        LogGeometry g = log.geometry();
        long buckets = 0;
        long sealed = 0;
        long due = 0;
        long files = 0;
        long bytes = 0;
        long sealedBytes = 0;
        long unsealedBytes = 0;
        long first = -1;
        long last = -1;
        long newestSealed = -1;
        long oldestUnsealed = -1;
        try {
            BucketWalker walker = new BucketWalker(fs, log.dir(), g.widthMicros(), from, to);
            for (long b = walker.next(); b >= 0; b = walker.next()) {
                Path dir = log.bucketDir(b);
                List<String> names;
                try {
                    names = fs.list(dir);
                } catch (NoSuchFileException e) {
                    continue;
                }
                if (names.isEmpty()) {
                    // Emptied by retention (its messages are in a segment), its directory not removed yet: no bucket.
                    continue;
                }
                buckets++;
                if (first < 0) {
                    first = b;
                }
                last = b;
                boolean isSealed = names.contains(Names.LOCK);
                long onDisk = 0;
                for (String n : names) {
                    if (Names.isDataFile(n)) {
                        files++;
                        try {
                            onDisk += fs.openAndSize(dir.resolve(n));
                        } catch (NoSuchFileException e) {
                            // Listed a moment ago; the store never deletes, so something else did: nothing to count.
                        }
                    }
                }
                bytes += onDisk;
                if (isSealed) {
                    sealed++;
                    try {
                        sealedBytes += store.sealer().readLock(log, b).totalBytes();
                    } catch (NoSuchFileException e) {
                        // Retention is removing the bucket's files (the lock file last): its bytes are in a segment.
                    }
                    newestSealed = Math.max(newestSealed, b);
                } else {
                    unsealedBytes += onDisk;
                    if (oldestUnsealed < 0) {
                        oldestUnsealed = b;
                    }
                    if (now >= g.dueAt(b)) {
                        due++;
                    }
                }
            }
        } catch (IOException e) {
            throw new StoreUnavailableException("surveying log '" + log.name() + "' under " + log.dir() + " failed: "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        return new LogSurvey(log.name(), g, Micros.toInstant(now), buckets, sealed, due, files, bytes, sealedBytes,
                unsealedBytes, instant(first), instant(last), newestSealed < 0 ? null : Micros.toInstant(g.end(newestSealed)),
                instant(oldestUnsealed));
    }

    private static Instant instant(long micros) {
        return micros < 0 ? null : Micros.toInstant(micros);
    }
}
