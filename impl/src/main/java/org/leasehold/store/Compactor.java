package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LockFile;
import org.leasehold.store.format.SegmentFile;

/**
 * Merges the sealed buckets of a log whose end is older than a cutoff into segment files, one per span
 * {@code [k * span, (k + 1) * span)} that ends before the cutoff and is not covered by a published segment yet.
 * A bucket that is not sealed, or whose reading reports any problem (torn tail, corrupt or unsupported frame, bad
 * lock file), is listed in the segment's table as read from its directory, so readers see exactly what they saw
 * before. The frames of the others are copied verbatim, in read order.
 *
 * <p>Publication without rename: the segment is written under a unique prepared name
 * ({@code <from>-<to>.segment.<writer>.<16 hex>}), forced, and {@code link(2)}ed to {@code <from>-<to>.segment}; the
 * first link wins, a loser verifies the winner's checksums and unlinks its own prepared file. A run unlinks the
 * prepared files of every range that is published (those of crashed or losing compactors). Any process may run it;
 * running it again over published ranges changes nothing. Nothing else is deleted here ({@link Retention} removes
 * buckets when configured to).
 */
final class Compactor {
    private static final System.Logger LOG = System.getLogger(Compactor.class.getName());
    /** The directory of a log's segments. */
    static final String SEGMENTS = "segments";
    private static final int WRITE_BUFFER = 1 << 20;

    private final NfsSafeFiles fs;
    private final Sealer sealer;
    private final String writerId;
    private final StoreHooks hooks;
    private final SecureRandom random = new SecureRandom();

    Compactor(StoreContext ctx) {
        this.fs = ctx.files();
        this.sealer = ctx.sealer();
        this.writerId = ctx.writerId();
        this.hooks = ctx.hooks();
    }

    /** A segment's span for a log: {@code spanMicros} rounded up to a multiple of the log's bucket width. */
    static long span(LogHandle log, long spanMicros) {
        long w = log.geometry().widthMicros();
        return Math.max(1, (spanMicros + w - 1) / w) * w;
    }

    /**
     * Compacts every span of {@code log} that ends at or before {@code cutoff} (µs) and has bucket directories.
     *
     * @throws StoreUnavailableException the file system failed; what was published stays published
     */
    CompactionReport compact(LogHandle log, long cutoff, long spanMicros, CompactionProgress progress)
            throws BagStoreException {
        long span = span(log, spanMicros);
        long limit = Math.floorDiv(Math.min(cutoff, LogGeometry.MAX_MICROS), span) * span;
        Path segDir = log.dir().resolve(SEGMENTS);
        List<String> published = new ArrayList<>();
        List<String> lost = new ArrayList<>();
        long[] totals = new long[3];
        int before;
        try {
            fs.createDirectory(segDir);
            List<long[]> ranges = SegmentChoice.published(fs.list(segDir), log.geometry().widthMicros());
            before = ranges.size();
            long first = new BucketWalker(fs, log.dir(), log.geometry().widthMicros(), LogGeometry.MIN_MICROS, limit)
                    .next();
            progress.starting(first < 0 ? limit : Math.min(limit, Math.floorDiv(first, span) * span), limit, span);
            long at = LogGeometry.MIN_MICROS;
            List<long[]> gaps = new ArrayList<>();
            for (long[] r : ranges) {
                if (r[0] > at) {
                    gaps.add(new long[] {at, Math.min(r[0], limit)});
                }
                at = Math.max(at, r[1]);
            }
            gaps.add(new long[] {at, limit});
            for (long[] gap : gaps) {
                if (gap[1] <= gap[0]) {
                    continue;
                }
                BucketWalker walker = new BucketWalker(fs, log.dir(), log.geometry().widthMicros(), gap[0], gap[1]);
                List<Long> group = new ArrayList<>();
                long groupSpan = Long.MIN_VALUE;
                while (true) {
                    long b = walker.next();
                    long k = b < 0 ? Long.MAX_VALUE : Math.floorDiv(b, span);
                    if (k != groupSpan && !group.isEmpty()) {
                        long from = groupSpan * span;
                        if (from >= gap[0] && from + span <= gap[1]) {
                            compactSpan(log, segDir, from, from + span, group, published, lost, totals);
                            progress.handled(from + span);
                        }
                        group.clear();
                    }
                    if (b < 0) {
                        break;
                    }
                    groupSpan = k;
                    group.add(b);
                }
                progress.handled(gap[1]);
            }
            progress.handled(limit);
        } catch (IOException e) {
            throw unavailable(log, "compacting", e);
        }
        int removed = removePrepared(log, segDir);
        return new CompactionReport(log.name(), published, lost, before, totals[0], totals[1], totals[2], removed,
                0);
    }

    /** Unlinks the prepared files of every published range; returns how many. */
    private int removePrepared(LogHandle log, Path segDir) throws BagStoreException {
        int removed = 0;
        try {
            List<String> names = fs.list(segDir);
            java.util.Set<String> finals = new java.util.HashSet<>();
            for (String n : names) {
                if (SegmentFile.parseName(n) != null) {
                    finals.add(n);
                }
            }
            for (String n : names) {
                int cut = n.indexOf(".segment.");
                if (cut > 0 && NfsSafeFiles.isPreparedName(n) && finals.contains(n.substring(0, cut) + ".segment")) {
                    if (fs.unlinkPrepared(segDir.resolve(n))) {
                        removed++;
                    }
                }
            }
        } catch (IOException e) {
            throw unavailable(log, "removing prepared segment files", e);
        }
        return removed;
    }

    private void compactSpan(LogHandle log, Path segDir, long from, long to, List<Long> buckets, List<String> published,
            List<String> lost, long[] totals) throws BagStoreException, IOException {
        String name = SegmentFile.name(from, to);
        Path prepared = segDir.resolve(name + "." + writerId + "." + HexFormat.of().toHexDigits(random.nextLong()));
        Path fin = segDir.resolve(name);
        long bytes;
        long frames = 0;
        try (FileChannel ch = fs.createNew(prepared)) {
            Output out = new Output(ch);
            out.put(SegmentFile.header());
            List<SegmentFile.Bucket> table = new ArrayList<>(buckets.size());
            Map<String, LongList> index = new HashMap<>();
            int fileNo = 0;
            for (long b : buckets) {
                BucketFrames bf = readBucket(log, b);
                long first = out.position();
                for (Frame f : bf.frames) {
                    long entry = out.position();
                    out.entry(fileNo + f.file, f.offset, f.bytes);
                    for (String n : f.names) {
                        index.computeIfAbsent(n, k -> new LongList()).add(entry, SegmentFile.ENTRY_HEADER
                                + f.bytes.length);
                    }
                    frames++;
                }
                table.add(new SegmentFile.Bucket(b, bf.state, first, out.position(), bf.files));
                fileNo += bf.files.size();
                hooks.compactionStep(log.name(), from, "writing");
            }
            long indexOffset = out.position();
            Map<String, long[]> idx = new HashMap<>();
            for (Map.Entry<String, LongList> e : index.entrySet()) {
                idx.put(e.getKey(), e.getValue().toArray());
            }
            out.put(SegmentFile.encodeMeta(from, to, log.geometry().widthMicros(), indexOffset, frames, idx, table));
            out.flush();
            ch.force(true);
            bytes = out.position();
        }
        hooks.compactionStep(log.name(), from, "prepared");
        boolean won;
        try {
            won = fs.link(fin, prepared);
        } catch (NoSuchFileException e) {
            // Another compactor published this range and unlinked our prepared file as a leftover.
            won = false;
        }
        hooks.compactionStep(log.name(), from, "linked");
        if (won) {
            published.add(name);
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6501 published segment {0} of log ''{1}'': {2} buckets, {3} "
                    + "frames, {4} bytes", name, log.name(), buckets.size(), frames, bytes);
        } else {
            lost.add(name);
            String problem = SegmentReader.verify(fs, fin);
            if (problem != null) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6502 segment {0} of log ''{1}'' is damaged: {2}; "
                        + "readers use the buckets of its range instead", name, log.name(), problem);
            }
        }
        fs.unlinkPrepared(prepared);
        hooks.compactionStep(log.name(), from, "unlinked");
        totals[0] += buckets.size();
        totals[1] += frames;
        totals[2] += bytes;
    }

    /** A frame of a bucket, copied, with its source and the lease names it carries. */
    private record Frame(long t, Names.DataFileName name, int file, long offset, byte[] bytes, List<String> names) {
    }

    private record BucketFrames(SegmentFile.State state, List<SegmentFile.Source> files, List<Frame> frames) {
    }

    private static final Comparator<Frame> READ_ORDER = Comparator.comparingLong(Frame::t)
            .thenComparing(Frame::name).thenComparingLong(Frame::offset);

    /**
     * The frames of one bucket in read order, checked as a strict read checks them; a bucket that is not sealed, or
     * in which anything would be reported or refused, is returned without frames to be read from its directory.
     */
    private BucketFrames readBucket(LogHandle log, long start) throws BagStoreException, IOException {
        Path dir = log.bucketDir(start);
        LockFile lf;
        try {
            // The lock file is opened directly: a bucket past the horizon was sealed long ago, and its lock file
            // lists its data files, so the directory is listed only when the lock file is not found.
            lf = readLockOrNull(log, start, dir);
        } catch (CorruptRecordException | UnsupportedFormatVersionException e) {
            return unreadable(log, start, e.getMessage());
        }
        if (lf == null) {
            return new BucketFrames(SegmentFile.State.UNSEALED, List.of(), List.of());
        }
        Strict bucket = new Strict(log, start);
        List<SegmentFile.Source> files = new ArrayList<>();
        List<Frame> frames = new ArrayList<>();
        Frames.View view = new Frames.View();
        for (int i = 0; i < lf.files().size(); i++) {
            LockFile.Entry e = lf.files().get(i);
            files.add(new SegmentFile.Source(e.name(), e.size()));
            Names.DataFileName n = Names.parseDataFile(e.name());
            if (n == null) {
                return unreadable(log, start, "the lock file lists '" + e.name() + "', not a data file name");
            }
            if (e.size() == 0) {
                continue;
            }
            FileChannel ch;
            try {
                ch = fs.openForRead(dir.resolve(e.name()));
            } catch (NoSuchFileException ex) {
                return unreadable(log, start, "data file " + e.name() + " is listed but missing");
            }
            FileCursor c = new FileCursor(n, bucket, ch, e.size(), FileCursor.BUFFER);
            try {
                while (c.advance()) {
                    byte[] copy = java.util.Arrays.copyOfRange(c.frameBytes(), c.frameAt, c.frameAt + c.frameLength);
                    Frames.decode(copy, 0, copy.length, c.frameOffset, null, c.leases, view);
                    List<String> leaseNames = new ArrayList<>(view.leases().size());
                    for (StampedLease l : view.leases()) {
                        leaseNames.add(l.name());
                    }
                    frames.add(new Frame(c.t, n, i, c.frameOffset, copy, leaseNames));
                }
            } catch (CorruptRecordException | UnsupportedFormatVersionException ex) {
                return unreadable(log, start, ex.getMessage());
            } catch (FormatException ex) {
                return unreadable(log, start, "data file " + e.name() + " at offset " + c.frameOffset + ": "
                        + ex.getMessage());
            } finally {
                c.close();
            }
            if (bucket.problem != null) {
                return unreadable(log, start, bucket.problem);
            }
        }
        frames.sort(READ_ORDER);
        return new BucketFrames(SegmentFile.State.INCLUDED, files, frames);
    }

    /**
     * The lock file of bucket {@code start}, or null if it has none: a failed open is confirmed by listing the
     * directory (which revalidates a network client's cached entries) before the bucket is taken as unsealed.
     */
    private LockFile readLockOrNull(LogHandle log, long start, Path dir) throws BagStoreException, IOException {
        try {
            return sealer.readLock(log, start);
        } catch (NoSuchFileException e) {
            List<String> names;
            try {
                names = fs.list(dir);
            } catch (NoSuchFileException gone) {
                return null;
            }
            if (!names.contains(Names.LOCK)) {
                return null;
            }
            try {
                return sealer.readLock(log, start);
            } catch (NoSuchFileException again) {
                return null;
            }
        }
    }

    private static BucketFrames unreadable(LogHandle log, long start, String why) {
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6503 bucket {0} of log ''{1}'' stays out of its segment and is "
                + "read from its directory: {2}", log.bucketPath(start), log.name(), why);
        return new BucketFrames(SegmentFile.State.UNREADABLE, List.of(), List.of());
    }

    /** A bucket read strictly: nothing skipped, a torn tail remembered. */
    private static final class Strict implements CursorBucket {
        private final LogHandle log;
        private final long start;
        String problem;

        Strict(LogHandle log, long start) {
            this.log = log;
            this.start = start;
        }

        @Override
        public long start() {
            return start;
        }

        @Override
        public long end() {
            return start + log.geometry().widthMicros();
        }

        @Override
        public String path() {
            return log.bucketPath(start);
        }

        @Override
        public String log() {
            return log.name();
        }

        @Override
        public boolean sealed() {
            return true;
        }

        @Override
        public boolean skip() {
            return false;
        }

        @Override
        public int maxFrame() {
            return BagStoreConfig.FRAME_LIMIT;
        }

        @Override
        public String describe() {
            return "bucket " + path() + " of log '" + log.name() + "'";
        }

        @Override
        public void torn(String file, long offset, String detail) {
            problem = "a torn tail in data file " + file + " at offset " + offset + " (" + detail + ")";
        }

        @Override
        public void problem(ReadProblem p) {
            problem = p.toString();
        }
    }

    /** Sequential writes through a buffer, at the file's position. */
    private static final class Output {
        private final FileChannel ch;
        private final ByteBuffer buf = ByteBuffer.allocate(WRITE_BUFFER);
        private long written;

        Output(FileChannel ch) {
            this.ch = ch;
        }

        long position() {
            return written + buf.position();
        }

        void entry(int file, long offset, byte[] frame) throws IOException {
            if (buf.remaining() < SegmentFile.ENTRY_HEADER) {
                flush();
            }
            SegmentFile.entryHeader(buf, file, offset);
            put(frame);
        }

        void put(byte[] a) throws IOException {
            int at = 0;
            while (at < a.length) {
                if (!buf.hasRemaining()) {
                    flush();
                }
                int n = Math.min(buf.remaining(), a.length - at);
                buf.put(a, at, n);
                at += n;
            }
        }

        void flush() throws IOException {
            buf.flip();
            int n = buf.remaining();
            Sealer.writeFully(ch, buf, written);
            written += n;
            buf.clear();
        }
    }

    /** A growable list of (offset, length) pairs. */
    private static final class LongList {
        private long[] a = new long[8];
        private int n;

        void add(long offset, long length) {
            if (n + 2 > a.length) {
                a = java.util.Arrays.copyOf(a, a.length * 2);
            }
            a[n++] = offset;
            a[n++] = length;
        }

        long[] toArray() {
            return java.util.Arrays.copyOf(a, n);
        }
    }

    private static StoreUnavailableException unavailable(LogHandle log, String what, IOException e) {
        return new StoreUnavailableException(what + " log '" + log.name() + "' under " + log.dir() + " failed: "
                + IoErrors.describe(e) + "; " + IoErrors.advice(e) + ". Segments already published stay valid; run "
                + "the compaction again", e);
    }
}
