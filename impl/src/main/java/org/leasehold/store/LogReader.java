package org.leasehold.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.Frames;
import org.leasehold.store.format.LockFile;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.Micros;

/**
 * An ordered, streaming read of one log: buckets in time order; inside a bucket, a k-way merge of its data files
 * (each in timestamp order) by {@code (timestamp, writer, sequence)}, each file read sequentially through its own
 * buffer. A sealed bucket is read exactly to the sizes its lock file lists (bytes past them are refused late writes
 * and are never read); an unsealed one to each file's size when the bucket is opened, its messages tentative.
 */
final class LogReader implements MessageStream {
    private static final System.Logger LOG = System.getLogger(LogReader.class.getName());
    /** The merge order of the cursors' current frames: timestamp, then the file's rank (writer, sequence). */
    private static boolean before(FileCursor a, FileCursor b) {
        return a.t < b.t || (a.t == b.t && a.rank < b.rank);
    }
    /** Total buffer budget per bucket; each file gets a share, at least 8 KiB. */
    private static final int BUCKET_BUFFER_BUDGET = 16 << 20;

    private final NfsSafeFiles fs;
    private final Sealer sealer;
    private final StoreHooks hooks;
    private final SegmentMetaCache segments;
    private final LogHandle log;
    private final ReadRequest request;
    private final long from;
    private final long to;
    private final List<long[]> pieces;
    private int pieceIndex;
    /** The walk of the current piece read from bucket directories, or null. */
    private BucketWalker walker;
    /** The end of the current walk's piece; the last bucket whose files were found gone and retried from a segment. */
    private long walkerTo;
    private long retried = Long.MIN_VALUE;
    /** The range of the last damaged segment whose buckets this read fell back to, or empty. */
    private long damagedFrom = Long.MAX_VALUE;
    private long damagedTo = Long.MIN_VALUE;
    /**
     * The piece of a segment that could not be opened (index or table damaged), read from directories, or null; and
     * whether a bucket with files was found in it.
     */
    private long[] tableless;
    private boolean tablelessFound;
    /** The current piece's segment, or null; whether its current bucket's frames are being read. */
    private SegmentReader segment;
    private boolean segmentInBucket;
    private final Frames.LeaseCache segmentLeases = new Frames.LeaseCache();
    /** The last segment frame delivered or filtered: after a damage in its bucket, the directory resumes after it. */
    private long lastSegBucket = -1;
    private long lastSegT;
    private Names.DataFileName lastSegName;
    private long lastSegOffset;
    private long resumeBucket = -1;
    private long resumeT;
    private Names.DataFileName resumeName;
    private long resumeOffset;
    /** A binary min-heap of the bucket's cursors by {@link #before}; {@code heap[0]} holds the next frame. */
    private FileCursor[] heap = new FileCursor[8];
    private int size;
    /** The top cursor whose current frame is being delivered: advanced once its messages are returned. */
    private FileCursor delivered;
    /** The frame being delivered, and the next message of it. */
    private final Frames.View view = new Frames.View();
    private boolean viewing;
    private int bodyIndex;
    private String bodyWriter;
    private String bodyFile;
    private long bodyOffset;
    private Instant bodyTimestamp;
    private final List<ReadProblem> problems = new ArrayList<>();
    private final Predicate<List<StampedLease>> leaseFilter;
    private MergedBucket current;
    private boolean closed;
    /** Recorded at {@link #close()}, with the messages returned and the buckets opened until then. */
    private final StoreEvents.Read event = new StoreEvents.Read();
    private long returned;
    private int bucketsOpened;

    LogReader(StoreContext ctx, LogHandle log, ReadRequest request) throws BagStoreException {
        event.begin();
        this.fs = ctx.files();
        this.sealer = ctx.sealer();
        this.hooks = ctx.hooks();
        this.segments = ctx.segments();
        this.log = log;
        this.request = request;
        this.from = request.from() == null ? LogGeometry.MIN_MICROS : Micros.of(request.from());
        this.to = request.to() == null ? LogGeometry.MAX_MICROS : Micros.of(request.to());
        Set<String> names = request.leaseNames();
        this.leaseFilter = names.isEmpty() ? null : leases -> {
            for (StampedLease l : leases) {
                if (names.contains(l.name())) {
                    return true;
                }
            }
            return false;
        };
        this.pieces = pieces();
    }

    /**
     * The read's range cut into pieces {@code {from, to, 1}} read from a published segment and {@code {from, to, 0}}
     * read from bucket directories ({@code 2}: without listing the segments again first), in time order.
     */
    private List<long[]> pieces() throws BagStoreException {
        List<String> names;
        try {
            names = fs.list(log.dir().resolve(Compactor.SEGMENTS));
        } catch (NoSuchFileException | java.nio.file.NotDirectoryException e) {
            names = List.of();
        } catch (IOException e) {
            throw unavailable("listing the segments of log '" + log.name() + "'", e);
        }
        List<long[]> out = new ArrayList<>();
        long at = from;
        for (long[] r : SegmentChoice.published(names, log.geometry().widthMicros())) {
            long a = Math.max(r[0], from);
            long b = Math.min(r[1], to);
            if (a >= b) {
                continue;
            }
            if (a > at) {
                out.add(new long[] {at, a, 0});
            }
            out.add(new long[] {a, b, 1, r[0], r[1]});
            at = b;
        }
        if (at < to) {
            out.add(new long[] {at, to, 0});
        }
        return out;
    }

    /** The bucket being merged: names, limits and how problems are handled. */
    private final class MergedBucket implements CursorBucket {
        private final long start;
        /** The bucket's path, formatted when first needed (a read through a segment rarely needs it). */
        private String path;
        private final boolean sealed;
        private final Instant startInstant;

        MergedBucket(long start, boolean sealed) {
            this.start = start;
            this.sealed = sealed;
            this.startInstant = Micros.toInstant(start);
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
            if (path == null) {
                path = log.bucketPath(start);
            }
            return path;
        }

        @Override
        public String log() {
            return log.name();
        }

        @Override
        public boolean sealed() {
            return sealed;
        }

        @Override
        public boolean skip() {
            return request.skipUnreadable();
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
            torn(file, offset, -1, detail);
        }

        @Override
        public void torn(String file, long offset, long end, String detail) {
            if (sealed) {
                problems.add(new ReadProblem(ReadProblem.Kind.TORN_TAIL, log.name(), path(), file, offset, end, detail
                        + "; dropped (a write that was never acknowledged, or the file was cut before the bucket was "
                        + "sealed)"));
            } else {
                problems.add(new ReadProblem(ReadProblem.Kind.INCOMPLETE_TAIL, log.name(), path(), file, offset, end,
                        "tail not complete: a write in progress or a cut file (" + detail + "; the file has not grown "
                        + "since this read opened it); not delivered by this read"));
            }
        }

        @Override
        public void problem(ReadProblem p) {
            problems.add(p);
        }
    }

    @Override
    public Message next() throws BagStoreException {
        if (closed) {
            throw new IllegalStateException("the message stream is closed");
        }
        while (true) {
            if (viewing) {
                int i = bodyIndex++;
                if (bodyIndex == view.count()) {
                    viewing = false;
                }
                returned++;
                return new Message(log.name(), current.startInstant, bodyWriter, bodyFile, bodyOffset, i, bodyTimestamp,
                        view.leases(), view.array(), view.offset(i), view.length(i), !current.sealed);
            }
            if (delivered != null) {
                // The classic k-way merge step: advance the top and sift it down (or replace it by the last). Only
                // once its frame was delivered, so that a damage found by the advance raises after that frame.
                FileCursor c = delivered;
                delivered = null;
                if (!c.advance()) {
                    c.close();
                    heap[0] = heap[--size];
                    heap[size] = null;
                }
                if (size > 1) {
                    siftDown(0);
                }
                continue;
            }
            if (size == 0) {
                if (!advanceSource()) {
                    return null;
                }
                continue;
            }
            emit(heap[0]);
            delivered = heap[0];
        }
    }

    private void push(FileCursor c) {
        if (size == heap.length) {
            heap = java.util.Arrays.copyOf(heap, size * 2);
        }
        int i = size++;
        heap[i] = c;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (!before(heap[i], heap[parent])) {
                break;
            }
            FileCursor tmp = heap[i];
            heap[i] = heap[parent];
            heap[parent] = tmp;
            i = parent;
        }
    }

    private void siftDown(int i) {
        FileCursor x = heap[i];
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            int right = child + 1;
            if (right < size && before(heap[right], heap[child])) {
                child = right;
            }
            if (!before(heap[child], x)) {
                break;
            }
            heap[i] = heap[child];
            i = child;
        }
        heap[i] = x;
    }

    private void emit(FileCursor c) throws BagStoreException {
        if (c.t < from || c.t >= to) {
            return;
        }
        if (resumeBucket == current.start && !afterResume(c)) {
            return;
        }
        boolean accepted;
        try {
            accepted = Frames.decode(c.frameBytes(), c.frameAt, c.frameLength, c.frameOffset, leaseFilter, c.leases,
                    view);
        } catch (FormatException e) {
            String detail = e.getMessage();
            if (request.skipUnreadable()) {
                problems.add(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, log.name(), current.path(), c.name.name(),
                        c.frameOffset, c.frameOffset + c.frameLength, detail + "; the frame was skipped"));
                return;
            }
            throw new CorruptRecordException(log.name(), current.path(), c.name.name(), c.frameOffset, "corrupt record in "
                    + "log '" + log.name() + "', bucket " + current.path() + ", data file " + c.name.name() + " at offset "
                    + c.frameOffset + ": " + detail + " (its checksum matches, so it was written this way). Read with "
                    + "skippingUnreadable() to skip it and get a report");
        }
        if (!accepted) {
            return;
        }
        deliver(c.name, c.frameOffset);
    }

    /** Whether frame {@code c} of the bucket being resumed comes after the last one its damaged segment delivered. */
    private boolean afterResume(FileCursor c) {
        if (c.t != resumeT) {
            return c.t > resumeT;
        }
        int n = c.name.compareTo(resumeName);
        return n != 0 ? n > 0 : c.frameOffset > resumeOffset;
    }

    /** Delivers the current frame of the segment (decoded into the view unless filtered out). */
    private void emitSegment() throws BagStoreException, SegmentReader.Damage {
        SegmentReader g = segment;
        boolean accepted = false;
        if (g.t >= from && g.t < to) {
            try {
                accepted = Frames.decode(g.frameBytes, g.frameAt, g.frameLength, g.sourceOffset, leaseFilter,
                        segmentLeases, view);
            } catch (FormatException e) {
                throw new SegmentReader.Damage(g.bucket.start(), "the frame from " + g.source.name() + " at offset "
                        + g.sourceOffset + ": " + e.getMessage());
            }
        }
        // Done with this frame: after a damage further on in its bucket, the directory resumes after it.
        lastSegBucket = g.bucket.start();
        lastSegT = g.t;
        lastSegName = g.source;
        lastSegOffset = g.sourceOffset;
        if (accepted) {
            deliver(g.source, g.sourceOffset);
        }
    }

    private void deliver(Names.DataFileName source, long offset) {
        viewing = true;
        bodyIndex = 0;
        bodyWriter = source.writer();
        bodyFile = source.name();
        bodyOffset = offset;
        long ts = view.timestamp();
        if (ts != lastMicros || lastInstant == null) {
            lastInstant = instant(ts);
            lastMicros = ts;
        }
        bodyTimestamp = lastInstant;
    }

    private long lastMicros;
    private Instant lastInstant;

    private static Instant instant(long micros) {
        return micros >= 0 ? Instant.ofEpochSecond(micros / 1_000_000L, (micros % 1_000_000L) * 1_000L)
                : Micros.toInstant(micros);
    }

    /**
     * Makes progress towards the next frame: a frame of a segment in the view, a bucket directory opened, or the
     * next piece of the range; false at the end of the read.
     */
    private boolean advanceSource() throws BagStoreException {
        closeCursors();
        long width = log.geometry().widthMicros();
        while (true) {
            if (segment != null) {
                try {
                    if (segmentInBucket && segment.next()) {
                        emitSegment();
                        return true;
                    }
                    if (!segment.nextBucket()) {
                        segment.close();
                        segment = null;
                        continue;
                    }
                    segmentInBucket = true;
                    if (segment.bucket.state() != SegmentFile.State.INCLUDED) {
                        openBucket(segment.bucket.start());
                        return true;
                    }
                    current = new MergedBucket(segment.bucket.start(), true);
                    bucketsOpened++;
                    continue;
                } catch (SegmentReader.Damage d) {
                    fallBack(d);
                    continue;
                } catch (IOException e) {
                    throw unavailable("reading segment " + segment.name() + " of log '" + log.name() + "'", e);
                }
            }
            if (walker != null) {
                long start;
                try {
                    start = walker.next();
                } catch (IOException e) {
                    throw unavailable("listing log '" + log.name() + "'", e);
                }
                if (start >= 0) {
                    if (openBucket(start)) {
                        return true;
                    }
                    continue;
                }
                walker = null;
                if (tableless != null) {
                    long[] p = tableless;
                    tableless = null;
                    if (!tablelessFound) {
                        unreadableTable(p);
                    }
                }
            }
            if (pieceIndex >= pieces.size()) {
                return false;
            }
            long[] p = pieces.get(pieceIndex++);
            if (p[2] == 0 && recut(p)) {
                continue;
            }
            if (p[2] == 1) {
                Path file = log.dir().resolve(Compactor.SEGMENTS).resolve(SegmentFile.name(p[3], p[4]));
                try {
                    segment = SegmentReader.open(fs, file, width, p[0], p[1], request.leaseNames(), segments);
                    segmentInBucket = false;
                    lastSegBucket = -1;
                    continue;
                } catch (SegmentReader.Damage d) {
                    LOG.log(System.Logger.Level.WARNING, DAMAGED, SegmentFile.name(p[3], p[4]), log.name(),
                            d.getMessage(), Micros.toInstant(p[0]), Micros.toInstant(p[1]));
                    damagedFrom = p[0];
                    damagedTo = p[1];
                    tableless = p;
                    tablelessFound = false;
                } catch (NoSuchFileException e) {
                    // Listed a moment ago; nothing deletes a published segment, but read the buckets then.
                } catch (IOException e) {
                    throw unavailable("opening segment " + file.getFileName() + " of log '" + log.name() + "'", e);
                }
            }
            walker = newWalker(p[0], p[1]);
        }
    }

    private static final String DAMAGED = "LEASEHOLD-6504 segment {0} of log ''{1}'' is damaged: {2}; the read uses "
            + "the buckets of [{3}, {4}) instead (restore the segment from a replica; the buckets it was made of are "
            + "kept unless retention removed them, and then the read reports each such bucket as unreadable)";

    /** A segment was found damaged: its range from the damaged bucket on is read from the bucket directories. */
    private void fallBack(SegmentReader.Damage d) throws BagStoreException {
        long a = Math.max(from, d.bucket);
        long b = Math.min(to, segment.segmentTo());
        LOG.log(System.Logger.Level.WARNING, DAMAGED, segment.name(), log.name(), d.getMessage(), Micros.toInstant(a),
                Micros.toInstant(b));
        if (lastSegBucket == d.bucket) {
            resumeBucket = d.bucket;
            resumeT = lastSegT;
            resumeName = lastSegName;
            resumeOffset = lastSegOffset;
        }
        long[] listed = segment.bucketsIn(a, b);
        segment.close();
        segment = null;
        damagedFrom = a;
        damagedTo = b;
        // The buckets its table lists, whether their directories still exist or not (retention removes them).
        walkerTo = b;
        try {
            walker = BucketWalker.of(fs, log.geometry().widthMicros(), listed);
        } catch (IOException e) {
            throw unavailable("listing log '" + log.name() + "'", e);
        }
    }

    /**
     * Bucket {@code start}, in the range of a damaged segment this read fell back from, has no files left: retention
     * removed them once the segment was published, so the segment was their only copy. Never silent: a problem when
     * the read skips unreadable records, a {@link CorruptRecordException} otherwise.
     */
    private void lostWithDamagedSegment(long start) throws BagStoreException {
        String detail = "the segment holding this bucket is damaged and retention removed the bucket's files, so "
                + "messages of it after the damage may be missing from this read; restore the segment (or the bucket's "
                + "files) from a replica";
        if (request.skipUnreadable()) {
            problems.add(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, log.name(), log.bucketPath(start), "", 0,
                    detail));
            return;
        }
        throw new CorruptRecordException(log.name(), log.bucketPath(start), "", 0, "unreadable bucket "
                + log.bucketPath(start) + " of log '" + log.name() + "': " + detail + ". Read with skippingUnreadable() "
                + "to read the rest and get a report");
    }

    /**
     * Before piece {@code p} is walked from the bucket directories: lists the segments again and, if segments were
     * published in its range since the read began (retention may have removed their buckets, even every directory
     * of the range), cuts the piece into segment pieces and the rest; true if it did. A read that began long before
     * (longer than the retention delay) reads the range from the segments, which hold the same messages.
     */
    private boolean recut(long[] p) throws BagStoreException {
        List<String> names;
        try {
            names = fs.list(log.dir().resolve(Compactor.SEGMENTS));
        } catch (NoSuchFileException | java.nio.file.NotDirectoryException e) {
            return false;
        } catch (IOException e) {
            throw unavailable("listing the segments of log '" + log.name() + "'", e);
        }
        List<long[]> add = new ArrayList<>();
        long at = p[0];
        for (long[] r : SegmentChoice.published(names, log.geometry().widthMicros())) {
            long a = Math.max(r[0], at);
            long b = Math.min(r[1], p[1]);
            if (a >= b) {
                continue;
            }
            if (a > at) {
                add.add(new long[] {at, a, 0});
            }
            add.add(new long[] {a, b, 1, r[0], r[1]});
            at = b;
        }
        if (add.isEmpty()) {
            return false;
        }
        if (at < p[1]) {
            add.add(new long[] {at, p[1], 0});
        }
        // The gaps are walked without listing the segments again.
        for (long[] q : add) {
            if (q[2] == 0) {
                q[2] = 2;
            }
        }
        pieces.addAll(pieceIndex, add);
        return true;
    }

    /**
     * Piece {@code p}'s segment cannot be opened (its index or table is damaged), so which buckets it held is unknown,
     * and its range, read from directories, had no bucket with files although a segment is written only for a range
     * with buckets. If it carries a publication mark, retention runs on this log and removed them: the piece's range is
     * reported unreadable, never passed over in silence.
     */
    private void unreadableTable(long[] p) throws BagStoreException {
        List<String> names;
        try {
            names = fs.list(log.dir().resolve(Compactor.SEGMENTS));
        } catch (IOException e) {
            throw unavailable("listing the segments of log '" + log.name() + "'", e);
        }
        if (!names.contains(Retention.markName(p[3], p[4]))) {
            return;
        }
        String detail = "segment " + SegmentFile.name(p[3], p[4]) + " is damaged (its index or table), and retention "
                + "may have removed the buckets it holds, so messages of [" + Micros.toInstant(p[0]) + ", "
                + Micros.toInstant(p[1]) + ") may be missing from this read; restore the segment from a replica";
        if (request.skipUnreadable()) {
            problems.add(new ReadProblem(ReadProblem.Kind.CORRUPT_RECORD, log.name(), log.bucketPath(
                    log.geometry().bucketOf(p[0])), "", 0, detail));
            return;
        }
        throw new CorruptRecordException(log.name(), log.bucketPath(log.geometry().bucketOf(p[0])), "", 0,
                "unreadable range of log '" + log.name() + "': " + detail + ". Read with skippingUnreadable() to read "
                + "the rest and get a report");
    }

    private BucketWalker newWalker(long a, long b) throws BagStoreException {
        walkerTo = b;
        try {
            return new BucketWalker(fs, log.dir(), log.geometry().widthMicros(), a, b, true);
        } catch (IOException e) {
            throw unavailable("listing log '" + log.name() + "'", e);
        }
    }

    /**
     * Opens bucket {@code start} from its directory; false if there is nothing to read in it, or if, in a piece read
     * from bucket directories, its files were found gone and the bucket is read from a segment published since
     * (see {@link #retryFromSegment}).
     */
    private boolean openBucket(long start) throws BagStoreException {
        Path dir = log.bucketDir(start);
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (NoSuchFileException e) {
            if (!retryFromSegment(start) && start >= damagedFrom && start < damagedTo) {
                lostWithDamagedSegment(start);
            }
            return false;
        } catch (IOException e) {
            throw unavailable("listing bucket " + log.bucketPath(start) + " of log '" + log.name() + "'", e);
        }
        hooks.bucketListed(log.name(), start);
        boolean sealed = names.contains(Names.LOCK);
        if (tableless != null && (sealed || names.stream().anyMatch(Names::isDataFile))) {
            tablelessFound = true;
        }
        if (!sealed && names.stream().noneMatch(Names::isDataFile)) {
            if (retryFromSegment(start)) {
                return false;
            }
            if (start >= damagedFrom && start < damagedTo) {
                lostWithDamagedSegment(start);
                return false;
            }
        }
        if (!sealed && !request.includeUnsealed()) {
            return false;
        }
        current = new MergedBucket(start, sealed);
        List<FileCursor> cursors = sealed ? openSealed(start, dir) : openUnsealed(dir, names);
        if (cursors == null) {
            return false;
        }
        bucketsOpened++;
        cursors.sort((a, b) -> a.name.compareTo(b.name));
        for (int i = 0; i < cursors.size(); i++) {
            cursors.get(i).rank = i;
        }
        for (FileCursor c : cursors) {
            if (c.advance()) {
                push(c);
            } else {
                c.close();
            }
        }
        return true;
    }

    /** The cursors of sealed bucket {@code start}, or null if its files were gone and it is retried from a segment. */
    private List<FileCursor> openSealed(long start, Path dir) throws BagStoreException {
        LockFile lf;
        try {
            lf = sealer.readLock(log, start);
        } catch (NoSuchFileException e) {
            if (retryFromSegment(start)) {
                return null;
            }
            throw unavailable("reading the lock file of bucket " + log.bucketPath(start) + " of log '" + log.name()
                    + "'", e);
        } catch (IOException e) {
            throw unavailable("reading the lock file of bucket " + log.bucketPath(start) + " of log '" + log.name() + "'",
                    e);
        }
        List<FileCursor> cursors = new ArrayList<>(lf.files().size());
        int files = lf.files().size();
        try {
            for (LockFile.Entry e : lf.files()) {
                Names.DataFileName n = Names.parseDataFile(e.name());
                if (n == null) {
                    throw new CorruptRecordException(log.name(), current.path(), Names.LOCK, 0, "the lock file of bucket "
                            + current.path() + " of log '" + log.name() + "' lists '" + e.name() + "', which is not a data "
                            + "file name; restore the lock file from a replica or backup");
                }
                if (e.size() == 0) {
                    continue;
                }
                FileChannel ch;
                try {
                    ch = fs.openForRead(dir.resolve(e.name()));
                } catch (NoSuchFileException ex) {
                    if (retryFromSegment(start)) {
                        for (FileCursor c : cursors) {
                            c.close();
                        }
                        return null;
                    }
                    throw new CorruptRecordException(log.name(), current.path(), e.name(), 0, "data file " + e.name()
                            + " of bucket " + current.path() + " of log '" + log.name() + "' is listed in the lock file ("
                            + e.size() + " bytes) but does not exist: it was deleted or renamed; restore it from a "
                            + "replica or backup");
                } catch (IOException ex) {
                    throw unavailable("opening data file " + e.name() + " of bucket " + current.path(), ex);
                }
                cursors.add(new FileCursor(n, current, ch, e.size(), bufferSize(files)));
            }
        } catch (BagStoreException e) {
            for (FileCursor c : cursors) {
                c.close();
            }
            throw e;
        }
        return cursors;
    }

    private List<FileCursor> openUnsealed(Path dir, List<String> names) throws BagStoreException {
        List<Names.DataFileName> files = new ArrayList<>();
        for (String n : names) {
            Names.DataFileName d = Names.parseDataFile(n);
            if (d != null) {
                files.add(d);
            }
        }
        List<FileCursor> cursors = new ArrayList<>(files.size());
        for (Names.DataFileName n : files) {
            try {
                FileChannel ch = fs.openForRead(dir.resolve(n.name()));
                long size = ch.size();
                cursors.add(new FileCursor(n, current, ch, size, bufferSize(files.size())));
            } catch (NoSuchFileException e) {
                // Listed a moment ago; the store never deletes, so something else did. Nothing to read.
            } catch (IOException e) {
                for (FileCursor c : cursors) {
                    c.close();
                }
                throw unavailable("opening data file " + n.name() + " of bucket " + current.path(), e);
            }
        }
        return cursors;
    }

    /**
     * Bucket {@code start}'s files are gone (its directory, lock file or a listed data file; or it has neither a lock
     * file nor data files) while it is read from bucket directories: retention may have removed them after this read
     * listed the segments. Lists the segments again and, if a published one covers the bucket, reads the rest of this
     * piece from it, from this bucket on (nothing of the bucket was delivered yet), and the remainder after it from
     * directories again. False, changing nothing, if no segment covers it, when reading a segment's bucket from its
     * directory, or for a bucket already retried (a segment that turned out damaged).
     */
    private boolean retryFromSegment(long start) throws BagStoreException {
        if (segment != null || walker == null || start <= retried || (start >= damagedFrom && start < damagedTo)) {
            return false;
        }
        List<String> names;
        try {
            names = fs.list(log.dir().resolve(Compactor.SEGMENTS));
        } catch (NoSuchFileException | java.nio.file.NotDirectoryException e) {
            return false;
        } catch (IOException e) {
            throw unavailable("listing the segments of log '" + log.name() + "'", e);
        }
        // Every bucket of a directory found gone was in a segment (retention removes only those): read them there.
        long end = walkerTo;
        long goneEnd = Math.min(walker.lastEnd(), end);
        List<long[]> add = new ArrayList<>();
        long at = start;
        for (long[] r : SegmentChoice.published(names, log.geometry().widthMicros())) {
            if (r[1] > start && r[0] < goneEnd) {
                add.add(new long[] {Math.max(r[0], start), Math.min(r[1], end), 1, r[0], r[1]});
                at = Math.min(r[1], end);
            }
        }
        if (add.isEmpty()) {
            return false;
        }
        if (at < end) {
            add.add(new long[] {at, end, 0});
        }
        retried = start;
        pieces.addAll(pieceIndex, add);
        walker = null;
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6510 the files of bucket {0} of log ''{1}'' were removed while it "
                + "was read; the read continues from segment {2}", log.bucketPath(start), log.name(),
                SegmentFile.name(add.get(0)[3], add.get(0)[4]));
        return true;
    }

    private static int bufferSize(int files) {
        return Math.max(8 << 10, Math.min(FileCursor.BUFFER, BUCKET_BUFFER_BUDGET / Math.max(1, files)));
    }

    private StoreUnavailableException unavailable(String what, IOException e) {
        return new StoreUnavailableException(what + " under " + log.dir() + " failed: " + IoErrors.describe(e) + "; "
                + IoErrors.advice(e), e);
    }

    @Override
    public List<ReadProblem> problems() {
        return Collections.unmodifiableList(new ArrayList<>(problems));
    }

    private void closeCursors() {
        delivered = null;
        for (int i = 0; i < size; i++) {
            heap[i].close();
            heap[i] = null;
        }
        size = 0;
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            closeCursors();
            if (segment != null) {
                segment.close();
                segment = null;
            }
            viewing = false;
            event.end();
            if (event.shouldCommit()) {
                event.log = log.name();
                event.from = request.from() == null ? "" : request.from().toString();
                event.to = request.to() == null ? "" : request.to().toString();
                event.includeUnsealed = request.includeUnsealed();
                event.messages = returned;
                event.buckets = bucketsOpened;
                event.problems = problems.size();
                event.commit();
            }
        }
    }
}
