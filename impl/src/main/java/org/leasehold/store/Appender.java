package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LockFile;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The single writer of one log for one writer identity, with group commit: appending threads queue encoded frames;
 * one committer thread takes everything queued, writes it with one gathering write per data file, forces (or closes)
 * once, then reads the clock and decides every frame's outcome.
 *
 * <p>The write rule, per bucket, in the committer:
 * <ol>
 *   <li>Before writing: refuse if the bucket is known sealed, or this clock says it is past its grace; when it is
 *       past {@code end + grace - maxClockError}, list the bucket and refuse if {@code prelock} or {@code lock}
 *       exists. A new data file is created exclusively and the bucket listed afterwards: {@code prelock} means a
 *       sealer may not list it, so the write is refused (nothing written).
 *   <li>Write, then force (or close), <em>then</em> read the clock. Before {@code end + grace - maxClockError} no
 *       correct sealer can have begun: acknowledged.
 *   <li>Otherwise list the bucket. With a {@code lock}, succeed only if the frame ends within the listed size. With a
 *       {@code prelock}, or once the clock says the bucket is due, help seal, listing this writer's files without the
 *       frames being decided; then the same rule. With neither (and not due), any later sealer lists the bytes:
 *       acknowledged.
 * </ol>
 *
 * <p>Within a data file, frame timestamps never decrease (readers merge files in timestamp order): the store bumps
 * the timestamps it chooses to the last one queued when that stays inside the leases, and starts a new data file
 * otherwise.
 */
final class Appender {
    private static final System.Logger LOG = System.getLogger(Appender.class.getName());

    private final FileBagStore store;
    private final LogHandle log;
    private final LogGeometry g;
    private final NfsSafeFiles fs;
    private final TimeSource time;
    private final StoreHooks hooks;
    private final FlushPolicy policy;
    private final int maxBatchBytes;
    private final long maxQueuedBytes;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition wake = lock.newCondition();
    private final Condition space = lock.newCondition();
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    private long queuedBytes;
    private long lastQueued = Long.MIN_VALUE;
    private boolean closing;
    private final Thread thread;
    private final java.util.concurrent.ExecutorService acks;
    private final java.util.concurrent.atomic.AtomicInteger acksPending = new java.util.concurrent.atomic.AtomicInteger();
    private TimeSource.Timer flushTimer;

    // Committer-thread state.
    private final TreeMap<Long, BucketFile> files = new TreeMap<>();
    private final TreeSet<Long> sealed = new TreeSet<>();
    private final Set<BucketFile> dirty = new LinkedHashSet<>();
    private final List<BucketFile> retired = new ArrayList<>();

    final LongAdder batches = new LongAdder();
    final LongAdder frames = new LongAdder();
    final LongAdder bytes = new LongAdder();
    final LongAdder forces = new LongAdder();
    final LongAdder lateChecks = new LongAdder();

    Appender(FileBagStore store, LogHandle log) {
        this.store = store;
        this.log = log;
        this.g = log.geometry();
        this.fs = store.files();
        this.time = store.time();
        this.hooks = store.hooks();
        this.policy = store.config().flushPolicy();
        this.maxBatchBytes = store.config().maxBatchBytes();
        this.maxQueuedBytes = store.config().maxQueuedBytes();
        this.acks = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "leasehold-bag-" + log.name() + "-acks");
            t.setDaemon(true);
            return t;
        });
        this.thread = new Thread(this::run, "leasehold-bag-" + log.name());
        thread.setDaemon(true);
        thread.start();
        if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
            scheduleFlush();
        }
    }

    /** An encoded frame waiting for its outcome. */
    static final class Pending {
        final ByteBuffer frame;
        final int length;
        final int messages;
        final long deadline;
        final boolean callerTime;
        final CompletableFuture<Appended> future = new CompletableFuture<>();
        long t;
        long bucket;
        BucketFile file;
        long offset;
        Appended result;
        BagStoreException failure;

        void fail(BagStoreException e) {
            if (result == null && failure == null) {
                failure = e;
            }
        }

        /** Completes the future with the decided outcome (wakes the caller). */
        void deliver() {
            if (result != null) {
                future.complete(result);
            } else if (failure != null) {
                future.completeExceptionally(failure);
            } else {
                future.completeExceptionally(new IllegalStateException("no outcome decided"));
            }
        }

        Pending(ByteBuffer frame, int messages, long t, long deadline, boolean callerTime) {
            this.frame = frame;
            this.length = frame.capacity();
            this.messages = messages;
            this.t = t;
            this.deadline = deadline;
            this.callerTime = callerTime;
        }
    }

    /** One data file of this writer in one bucket. */
    static final class BucketFile {
        final long bucket;
        final Path path;
        final String name;
        final int seq;
        FileChannel ch;
        long size;
        long plannedLastT = Long.MIN_VALUE;
        boolean abandoned;

        BucketFile(long bucket, Path path, String name, int seq, FileChannel ch) {
            this.bucket = bucket;
            this.path = path;
            this.name = name;
            this.seq = seq;
            this.ch = ch;
        }
    }

    /** Frames of one batch going to one data file, in order. */
    private static final class Segment {
        final BucketFile file;
        final List<Pending> items = new ArrayList<>();
        IOException writeError;
        IOException flushError;

        Segment(BucketFile file) {
            this.file = file;
        }
    }

    /**
     * Queues a frame. The timestamp may be bumped to the last one queued (when the store chose it and the bump stays
     * below the deadline), keeping each data file in timestamp order.
     */
    CompletableFuture<Appended> submit(Pending p) throws StoreUnavailableException {
        lock.lock();
        try {
            while (!closing && queuedBytes > 0 && queuedBytes + p.length > maxQueuedBytes) {
                space.awaitUninterruptibly();
            }
            if (closing) {
                throw store.closedException();
            }
            if (!p.callerTime && p.t < lastQueued && lastQueued < p.deadline) {
                p.t = lastQueued;
                Frames.retime(p.frame, p.t);
            }
            if (p.t > lastQueued) {
                lastQueued = p.t;
            }
            p.bucket = g.bucketOf(p.t);
            queue.addLast(p);
            queuedBytes += p.length;
            wake.signal();
        } finally {
            lock.unlock();
        }
        return p.future;
    }

    /** Runs {@code task} on the committer thread, between batches. */
    void execute(Runnable task) {
        lock.lock();
        try {
            if (closing) {
                return;
            }
            tasks.addLast(task);
            wake.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Stops accepting appends, commits what is queued, flushes and closes the files; waits for the committer. */
    void close() {
        lock.lock();
        try {
            closing = true;
            if (flushTimer != null) {
                flushTimer.cancel();
            }
            wake.signalAll();
            space.signalAll();
        } finally {
            lock.unlock();
        }
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        acks.shutdown();
        while (!acks.isTerminated()) {
            try {
                acks.awaitTermination(1, java.util.concurrent.TimeUnit.MINUTES);
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void scheduleFlush() {
        long at = Micros.plus(time.nowMicros(), Micros.of(policy.interval()));
        lock.lock();
        try {
            if (!closing) {
                flushTimer = time.schedule(at, () -> execute(() -> {
                    flushDirty();
                    scheduleFlush();
                }));
            }
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        while (true) {
            List<Runnable> todo = new ArrayList<>();
            List<Pending> batch = new ArrayList<>();
            lock.lock();
            try {
                while (queue.isEmpty() && tasks.isEmpty() && !closing) {
                    wake.awaitUninterruptibly();
                }
                if (queue.isEmpty() && tasks.isEmpty()) {
                    break;
                }
                todo.addAll(tasks);
                tasks.clear();
                long taken = 0;
                while (!queue.isEmpty() && (batch.isEmpty() || taken + queue.peekFirst().length <= maxBatchBytes)) {
                    Pending p = queue.pollFirst();
                    taken += p.length;
                    batch.add(p);
                }
                queuedBytes -= taken;
                space.signalAll();
            } finally {
                lock.unlock();
            }
            for (Runnable r : todo) {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6106 a background task of log ''" + log.name()
                            + "'' failed", e);
                }
            }
            if (!batch.isEmpty()) {
                try {
                    commit(batch);
                    for (BucketFile f : retired) {
                        closeQuietly(f);
                    }
                    retired.clear();
                } catch (RuntimeException | Error e) {
                    LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-6107 the committer of log ''" + log.name()
                            + "'' failed unexpectedly", e);
                    for (Pending p : batch) {
                        p.future.completeExceptionally(new WriteOutcomeUnknownException("the committer of log '"
                                + log.name() + "' failed unexpectedly (" + e + "); the append may or may not be "
                                + "readable: read the log after its bucket is sealed to find out", e));
                    }
                }
            }
        }
        flushDirty();
        for (BucketFile f : files.values()) {
            closeQuietly(f);
        }
        files.clear();
    }

    // ---------------------------------------------------------------------------------------------------- commit

    private void commit(List<Pending> batch) {
        batches.increment();
        LinkedHashMap<Long, List<Pending>> groups = new LinkedHashMap<>();
        for (Pending p : batch) {
            groups.computeIfAbsent(p.bucket, k -> new ArrayList<>()).add(p);
        }
        List<Segment> segments = new ArrayList<>();
        Map<Long, Map<String, Long>> sizesBefore = new HashMap<>();
        for (Map.Entry<Long, List<Pending>> e : groups.entrySet()) {
            plan(e.getKey(), e.getValue(), segments, sizesBefore);
        }
        if (segments.isEmpty()) {
            deliver(batch);
            return;
        }
        write(segments);
        for (BucketFile f : retired) {
            closeQuietly(f);
        }
        retired.clear();
        hooks.afterWrite(log.name());
        long now = time.nowMicros();
        decide(segments, sizesBefore, now);
        housekeeping(now);
        deliver(batch);
    }

    /**
     * Wakes the batch's callers. When more appends are queued, a second thread does it, so that the next batch's
     * write and flush overlap with waking (dozens of) threads; otherwise here, saving a hand-off.
     */
    private void deliver(List<Pending> batch) {
        boolean more;
        lock.lock();
        try {
            more = !queue.isEmpty();
        } finally {
            lock.unlock();
        }
        // Once a batch went to the second thread, later ones follow it until it is idle: callers see their
        // acknowledgements in commit order.
        if (more || acksPending.get() > 0) {
            acksPending.incrementAndGet();
            acks.execute(() -> {
                try {
                    for (Pending p : batch) {
                        p.deliver();
                    }
                } finally {
                    acksPending.decrementAndGet();
                }
            });
        } else {
            for (Pending p : batch) {
                p.deliver();
            }
        }
    }

    /** Gate, data file and segments for one bucket's frames; frames that cannot be written are failed here. */
    private void plan(long bucket, List<Pending> ps, List<Segment> segments, Map<Long, Map<String, Long>> sizesBefore) {
        int assigned = 0;
        try {
            gate(bucket);
            BucketFile f = fileFor(bucket);
            hooks.beforeWrite(log.name(), bucket);
            Segment seg = null;
            for (Pending p : ps) {
                if (p.t < f.plannedLastT) {
                    f = newFile(bucket, f.seq + 1);
                    seg = null;
                }
                if (seg == null) {
                    seg = new Segment(f);
                    segments.add(seg);
                    sizesBefore.computeIfAbsent(bucket, k -> new HashMap<>()).putIfAbsent(f.name, f.size);
                }
                seg.items.add(p);
                f.plannedLastT = p.t;
                assigned++;
            }
        } catch (BagStoreException ex) {
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(ex);
            }
        } catch (IOException ex) {
            StoreUnavailableException su = cannotWrite(bucket, ex);
            for (int i = assigned; i < ps.size(); i++) {
                ps.get(i).fail(su);
            }
        }
    }

    private void write(List<Segment> segments) {
        for (Segment s : segments) {
            BucketFile f = s.file;
            ByteBuffer[] bufs = new ByteBuffer[s.items.size()];
            long pos = f.size;
            int total = 0;
            for (int i = 0; i < bufs.length; i++) {
                Pending p = s.items.get(i);
                p.file = f;
                p.offset = pos + total;
                total += p.length;
                bufs[i] = p.frame;
            }
            try {
                int tear = hooks.tearAfter(log.name(), f.path, total);
                if (tear >= 0) {
                    tornWrite(f, bufs, pos, tear);
                }
                f.ch.position(pos);
                long done = 0;
                while (done < total) {
                    done += f.ch.write(bufs);
                }
                f.size = pos + total;
                frames.add(bufs.length);
                bytes.add(total);
            } catch (IOException ex) {
                long written = 0;
                for (ByteBuffer b : bufs) {
                    written += b.position();
                }
                f.size = pos + written;
                f.abandoned = true;
                s.writeError = ex;
            }
        }
        Set<BucketFile> touched = new LinkedHashSet<>();
        for (Segment s : segments) {
            touched.add(s.file);
        }
        Map<BucketFile, IOException> flushErrors = new HashMap<>();
        for (BucketFile f : touched) {
            try {
                if (policy.mode() == FlushPolicy.Mode.EVERY_BATCH) {
                    f.ch.force(false);
                    forces.increment();
                } else {
                    FileChannel ch = f.ch;
                    f.ch = null;
                    ch.close();
                    if (policy.mode() == FlushPolicy.Mode.INTERVAL) {
                        dirty.add(f);
                    }
                }
            } catch (IOException ex) {
                flushErrors.put(f, ex);
                f.abandoned = true;
            }
            if (f.abandoned) {
                closeQuietly(f);
            }
        }
        for (Segment s : segments) {
            s.flushError = flushErrors.get(s.file);
        }
    }

    /** Test hook path: write only {@code tear} bytes, force them, and let the hook stop the process. */
    private void tornWrite(BucketFile f, ByteBuffer[] bufs, long pos, int tear) throws IOException {
        ByteBuffer all = ByteBuffer.allocate(tear);
        for (ByteBuffer b : bufs) {
            ByteBuffer d = b.duplicate();
            if (d.remaining() > all.remaining()) {
                d.limit(d.position() + all.remaining());
            }
            all.put(d);
        }
        all.flip();
        Sealer.writeFully(f.ch, all, pos);
        f.ch.force(false);
        hooks.torn(log.name(), f.path);
    }

    private void decide(List<Segment> segments, Map<Long, Map<String, Long>> sizesBefore, long now) {
        Map<Long, List<Pending>> candidates = new LinkedHashMap<>();
        for (Segment s : segments) {
            for (Pending p : s.items) {
                boolean complete = !p.frame.hasRemaining();
                if (s.writeError != null && !complete) {
                    p.fail(notWritten(p, s.writeError));
                } else if (s.flushError != null) {
                    p.fail(outcomeUnknown(p, s.flushError));
                } else {
                    candidates.computeIfAbsent(p.bucket, k -> new ArrayList<>()).add(p);
                }
            }
        }
        for (Map.Entry<Long, List<Pending>> e : candidates.entrySet()) {
            long bucket = e.getKey();
            List<Pending> ps = e.getValue();
            if (now < g.onTimeUntil(bucket)) {
                for (Pending p : ps) {
                    succeed(p);
                }
                continue;
            }
            lateChecks.increment();
            LockFile lf;
            try {
                lf = lockForLateWrite(bucket, now, sizesBefore.get(bucket));
            } catch (BagStoreException | IOException ex) {
                for (Pending p : ps) {
                    p.fail(new WriteOutcomeUnknownException("the append to " + where(bucket)
                            + " was written late (this clock read " + Micros.toInstant(now) + ", on time until "
                            + Micros.toInstant(g.onTimeUntil(bucket)) + ") and checking whether sealing had begun failed: "
                            + ex.getMessage() + "; read the bucket once it is sealed to find out", ex));
                }
                continue;
            }
            if (lf == null) {
                for (Pending p : ps) {
                    succeed(p);
                }
                continue;
            }
            sealed.add(bucket);
            for (Pending p : ps) {
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
    }

    /**
     * The lock file that decides a late write, or null if sealing has not begun and the bucket is not due: then any
     * sealer that starts later lists the written bytes.
     */
    private LockFile lockForLateWrite(long bucket, long now, Map<String, Long> own) throws BagStoreException,
            IOException {
        List<String> names = fs.list(log.bucketDir(bucket));
        if (names.contains(Names.LOCK)) {
            return store.sealer().readLock(log, bucket);
        }
        if (names.contains(Names.PRELOCK) || now >= g.dueAt(bucket)) {
            return store.sealer().seal(log, bucket, false, own).lock();
        }
        return null;
    }

    private void succeed(Pending p) {
        p.result = (new Appended(log.name(), Micros.toInstant(p.bucket), store.writerId(), p.file.name, p.offset,
                p.length, Micros.toInstant(p.t), p.messages));
    }

    // ---------------------------------------------------------------------------------------------------- files

    /** Refuses before writing when the bucket is sealed, being sealed, or past grace by this clock. */
    private void gate(long bucket) throws BagStoreException, IOException {
        if (sealed.contains(bucket)) {
            throw sealedBefore(bucket);
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
                sealed.add(bucket);
                throw sealedBefore(bucket);
            }
        }
    }

    private BucketFile fileFor(long bucket) throws BagStoreException, IOException {
        BucketFile f = files.get(bucket);
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
                if (sealingBegun(bucket)) {
                    sealed.add(bucket);
                    throw sealedBefore(bucket);
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

    /** Creates this writer's next data file in the bucket (exclusively), then checks the bucket for a prelock. */
    private BucketFile newFile(long bucket, int fromSeq) throws BagStoreException, IOException {
        Path dir = log.bucketDir(bucket);
        boolean madeDirs = false;
        FileChannel ch = null;
        int seq = fromSeq;
        Path path = null;
        while (ch == null) {
            if (seq > fromSeq + 10_000) {
                throw new StoreUnavailableException("bucket " + log.bucketPath(bucket) + " of log '" + log.name()
                        + "' already holds data files " + fromSeq + " to " + seq + " of writer " + store.writerId()
                        + "; refusing to create more");
            }
            path = dir.resolve(Names.dataFile(store.writerId(), seq));
            try {
                ch = fs.createNew(path);
            } catch (FileAlreadyExistsException e) {
                seq++;
            } catch (NoSuchFileException e) {
                if (madeDirs) {
                    throw e;
                }
                store.sealer().ensureDirectories(log.dir(), dir);
                madeDirs = true;
            } catch (IOException e) {
                if (sealingBegun(bucket)) {
                    sealed.add(bucket);
                    throw sealedBefore(bucket);
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
            sealed.add(bucket);
            throw sealedBefore(bucket);
        }
        BucketFile f = new BucketFile(bucket, path, path.getFileName().toString(), seq, ch);
        BucketFile old = files.put(bucket, f);
        if (old != null) {
            // It may still have frames of this batch to write; closed once the batch is written.
            retired.add(old);
        }
        store.ownBucket(log, bucket);
        return f;
    }

    private boolean sealingBegun(long bucket) {
        try {
            List<String> names = fs.list(log.bucketDir(bucket));
            return names.contains(Names.PRELOCK) || names.contains(Names.LOCK);
        } catch (IOException e) {
            return false;
        }
    }

    private void housekeeping(long now) {
        Iterator<Map.Entry<Long, BucketFile>> it = files.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Long, BucketFile> e = it.next();
            long b = e.getKey();
            if (now >= g.dueAt(b) || sealed.contains(b)) {
                closeQuietly(e.getValue());
                it.remove();
            }
        }
        while (!sealed.isEmpty() && g.dueAt(sealed.first()) <= now) {
            sealed.pollFirst();
        }
    }

    /** Forces the files written since the last flush (interval policy). */
    private void flushDirty() {
        if (dirty.isEmpty()) {
            return;
        }
        Set<BucketFile> todo = new HashSet<>(dirty);
        dirty.clear();
        for (BucketFile f : todo) {
            try (FileChannel ch = fs.openForRead(f.path)) {
                ch.force(false);
                forces.increment();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-6103 could not force data file {0} of log ''{1}'' ({2}): "
                        + "messages acknowledged in it are visible but may not survive a machine crash", f.path,
                        log.name(), IoErrors.describe(e));
            }
        }
    }

    private static void closeQuietly(BucketFile f) {
        FileChannel ch = f.ch;
        f.ch = null;
        if (ch != null) {
            try {
                ch.close();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6104 closing {0}: {1}", f.path, e);
            }
        }
    }

    // ---------------------------------------------------------------------------------------------------- errors

    private String where(long bucket) {
        return "bucket " + log.bucketPath(bucket) + " of log '" + log.name() + "'";
    }

    private BucketSealedException sealedBefore(long bucket) {
        return new BucketSealedException(BucketSealedException.Reason.SEALED, log.name(), log.bucketPath(bucket),
                Micros.toInstant(bucket), where(bucket) + " is sealed (or sealing began) before this append was "
                        + "written; nothing was written. Append again with a current timestamp");
    }

    private StoreUnavailableException cannotWrite(long bucket, IOException e) {
        return new StoreUnavailableException("cannot write to " + where(bucket) + " under " + log.dir() + ": "
                + IoErrors.describe(e) + "; nothing was written. " + capitalize(IoErrors.advice(e)), e);
    }

    private StoreUnavailableException notWritten(Pending p, IOException e) {
        return new StoreUnavailableException("writing the append to " + p.file.name + " in " + where(p.bucket)
                + " failed (" + IoErrors.describe(e) + "); it was not (completely) written, and readers drop the "
                + "partial frame as a torn tail, so it will never be readable. " + capitalize(IoErrors.advice(e)), e);
    }

    private WriteOutcomeUnknownException outcomeUnknown(Pending p, IOException e) {
        return new WriteOutcomeUnknownException("the append was written to " + p.file.name + " at offset " + p.offset
                + " in " + where(p.bucket) + " but flushing it failed (" + IoErrors.describe(e) + "); it may or may not "
                + "be readable, now or after a crash. Read the bucket once it is sealed to find out; "
                + IoErrors.advice(e), e);
    }

    private static String capitalize(String s) {
        return s.isEmpty() ? s : Character.toUpperCase(s.charAt(0)) + s.substring(1);
    }
}
