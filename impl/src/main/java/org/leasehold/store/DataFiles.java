package org.leasehold.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;

/**
 * This writer's data files in one log, one current file per bucket: created exclusively (then the bucket checked for
 * a {@code prelock}), re-opened for the next batch, rolled to the next sequence number when a timestamp goes back or
 * a file must be given up, forced later under the interval flush policy, and closed once their bucket is due.
 * Committer thread only.
 */
final class DataFiles {
    private static final System.Logger LOG = System.getLogger(DataFiles.class.getName());

    /** Told of every bucket this writer starts a data file in, so that the bucket is sealed when due. */
    interface NewBucketListener {
        void started(LogHandle log, long bucket);
    }

    private final LogHandle log;
    private final LogGeometry g;
    private final NfsSafeFiles fs;
    private final Sealer sealer;
    private final String writerId;
    private final LatenessCheck check;
    private final NewBucketListener listener;
    private final AppendCounters counters;
    private final TreeMap<Long, DataFile> files = new TreeMap<>();
    private final List<DataFile> retired = new ArrayList<>();
    private final Set<DataFile> dirty = new LinkedHashSet<>();

    DataFiles(StoreContext ctx, LogHandle log, LatenessCheck check, NewBucketListener listener,
            AppendCounters counters) {
        this.log = log;
        this.g = log.geometry();
        this.fs = ctx.files();
        this.sealer = ctx.sealer();
        this.writerId = ctx.writerId();
        this.check = check;
        this.listener = listener;
        this.counters = counters;
    }

    /** The current data file of {@code bucket}, open for writing at its size: re-opened, or a new one. */
    DataFile fileFor(long bucket) throws BagStoreException, IOException {
        DataFile f = files.get(bucket);
        if (f == null) {
            return newFile(bucket, 0);
        }
        if (f.abandoned) {
            return newFile(bucket, f.seq + 1);
        }
        if (f.ch == null) {
            FileChannel ch;
            try {
                ch = fs.openForAppend(f.path);
            } catch (IOException e) {
                if (check.sealingBegun(bucket)) {
                    throw check.refuseSealed(bucket);
                }
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6101 data file {0} of bucket {1} of log ''{2}'' cannot "
                        + "be opened for writing ({3}) although the bucket is not sealed (its mode was changed by "
                        + "hand?); continuing in a new data file", f.name, log.bucketPath(bucket), log.name(),
                        IoErrors.describe(e));
                f.abandoned = true;
                return newFile(bucket, f.seq + 1);
            }
            long size = ch.size();
            if (size != f.size) {
                ch.close();
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6102 data file {0} of bucket {1} of log ''{2}'' is {3} "
                        + "bytes but this writer wrote {4}: something else wrote to it; continuing in a new data file",
                        f.name, log.bucketPath(bucket), log.name(), size, f.size);
                f.abandoned = true;
                return newFile(bucket, f.seq + 1);
            }
            f.ch = ch;
        }
        return f;
    }

    /** Rolls to the data file after {@code f} in its bucket (a frame's timestamp went back). */
    DataFile next(DataFile f) throws BagStoreException, IOException {
        return newFile(f.bucket, f.seq + 1);
    }

    /** Creates this writer's next data file in the bucket (exclusively), then checks the bucket for a prelock. */
    private DataFile newFile(long bucket, int fromSeq) throws BagStoreException, IOException {
        Path dir = log.bucketDir(bucket);
        int madeDirs = 0;
        FileChannel ch = null;
        int seq = fromSeq;
        Path path = null;
        while (ch == null) {
            if (seq > fromSeq + 10_000) {
                throw new StoreUnavailableException("bucket " + log.bucketPath(bucket) + " of log '" + log.name()
                        + "' already holds data files " + fromSeq + " to " + seq + " of writer " + writerId
                        + "; refusing to create more");
            }
            path = dir.resolve(Names.dataFile(writerId, seq));
            try {
                ch = fs.createNew(path);
            } catch (FileAlreadyExistsException e) {
                seq++;
            } catch (NoSuchFileException e) {
                // Made again if retention removed an emptied parent of an old range meanwhile (a few times).
                if (++madeDirs > Sealer.MKDIR_ATTEMPTS) {
                    throw e;
                }
                sealer.ensureDirectories(log.dir(), dir);
            } catch (IOException e) {
                if (check.sealingBegun(bucket)) {
                    throw check.refuseSealed(bucket);
                }
                throw e;
            }
        }
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (IOException e) {
            ch.close();
            throw e;
        }
        if (names.contains(Names.PRELOCK) || names.contains(Names.LOCK)) {
            ch.close();
            throw check.refuseSealed(bucket);
        }
        DataFile f = new DataFile(bucket, path, path.getFileName().toString(), seq, ch);
        DataFile old = files.put(bucket, f);
        if (old != null) {
            // It may still have frames of this batch to write; closed once the batch is written.
            retired.add(old);
        }
        listener.started(log, bucket);
        return f;
    }

    /** Closes the files rolled over during the batch, now that its frames are written. */
    void closeRetired() {
        for (DataFile f : retired) {
            f.closeQuietly();
        }
        retired.clear();
    }

    /** Remembers a file that was written and closed without forcing (interval policy): forced by {@link #flushDirty}. */
    void markDirty(DataFile f) {
        dirty.add(f);
    }

    /** Closes and forgets the files of buckets that are due by {@code now} or known sealed. */
    void closeDue(long now) {
        Iterator<Map.Entry<Long, DataFile>> it = files.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Long, DataFile> e = it.next();
            long b = e.getKey();
            if (now >= g.dueAt(b) || check.knownSealed(b)) {
                e.getValue().closeQuietly();
                it.remove();
            }
        }
    }

    /** Forces the files written since the last flush (interval policy). */
    void flushDirty() {
        if (dirty.isEmpty()) {
            return;
        }
        Set<DataFile> todo = new HashSet<>(dirty);
        dirty.clear();
        for (DataFile f : todo) {
            try (FileChannel ch = fs.openForRead(f.path)) {
                ch.force(false);
                counters.forces.increment();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-6103 could not force data file {0} of log ''{1}'' ({2}): "
                        + "messages acknowledged in it are visible but may not survive a machine crash", f.path,
                        log.name(), IoErrors.describe(e));
            }
        }
    }

    /** Closes every file (the committer is stopping). */
    void closeAll() {
        for (DataFile f : files.values()) {
            f.closeQuietly();
        }
        files.clear();
    }
}
