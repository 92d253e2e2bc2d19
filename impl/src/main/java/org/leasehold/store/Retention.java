package org.leasehold.store;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.LockFile;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.Micros;

/**
 * Removes the files of the buckets that published segments hold (B11, first part), as a step of compaction when
 * {@link BagStoreConfig#removeCompactedBuckets()} is on.
 *
 * <p>When a segment is published is not recorded by its publisher (its bytes depend only on its buckets, and a file's
 * mtime is some server's clock). So the first run that finds a segment published without a publication mark links
 * one, {@code <from>-<to>.published}, holding its own clock reading taken after it listed the segment: the segment
 * was published at or before that instant. A later run removes the segment's buckets once its own clock reads at
 * least the mark's time plus {@link BagStoreConfig#retentionDelay()} plus the log's clock error: by then at least the
 * delay has passed since publication in real time, whichever process wrote the mark.
 *
 * <p>Before removing anything it reads the whole segment (trailer checksum, index, table, and every entry's and
 * frame's checksum); a damaged segment keeps all its buckets. Only buckets whose state in the segment is
 * <em>included</em> are touched, each only if its lock file lists exactly the files and sizes the segment's table
 * lists. In a bucket it unlinks the data files, then prepared lock files, {@code prelock}, and {@code lock} last, so a
 * bucket directory is either still sealed (maybe missing listed files) or empty; the directory itself stays (the file
 * system floor has no {@code rmdir}).
 */
final class Retention {
    private static final System.Logger LOG = System.getLogger(Retention.class.getName());
    /** The suffix of a segment's publication mark. */
    static final String MARK = ".published";
    private static final int MAX_MARK_BYTES = 4096;
    private static final Set<PosixFilePermission> WRITABLE_DIR = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_EXECUTE);

    private final NfsSafeFiles fs;
    private final Sealer sealer;
    private final String writerId;
    private final StoreHooks hooks;
    private final long delayMicros;
    private final SecureRandom random = new SecureRandom();

    Retention(StoreContext ctx) {
        this.fs = ctx.files();
        this.sealer = ctx.sealer();
        this.writerId = ctx.writerId();
        this.hooks = ctx.hooks();
        this.delayMicros = Micros.of(ctx.config().retentionDelay());
    }

    /** The name of the publication mark of segment {@code [from, to)}. */
    static String markName(long from, long to) {
        return from + "-" + to + MARK;
    }

    /**
     * Marks the segments of {@code log} seen published for the first time, and removes the buckets of those marked
     * long enough ago; {@code clock} is this store's, read once, after listing the segments. Returns how many buckets
     * were emptied.
     *
     * @throws StoreUnavailableException the file system failed; run the compaction again
     */
    int run(LogHandle log, java.util.function.LongSupplier clock) throws BagStoreException {
        Path segDir = log.dir().resolve(Compactor.SEGMENTS);
        long width = log.geometry().widthMicros();
        int emptied = 0;
        try {
            List<String> names;
            try {
                names = fs.list(segDir);
            } catch (NoSuchFileException e) {
                return 0;
            }
            // Read after the listing: every segment listed was published before this instant.
            long now = clock.getAsLong();
            Set<String> present = new HashSet<>(names);
            for (long[] r : SegmentChoice.published(names, width)) {
                String mark = markName(r[0], r[1]);
                if (!present.contains(mark)) {
                    writeMark(log, segDir, r, now);
                    continue;
                }
                Long seenAt = readMark(log, segDir.resolve(mark));
                if (seenAt == null || now < seenAt + delayMicros + log.geometry().errorMicros()) {
                    continue;
                }
                emptied += retire(log, segDir.resolve(SegmentFile.name(r[0], r[1])));
            }
            removePreparedMarks(segDir);
        } catch (IOException e) {
            throw new StoreUnavailableException("removing compacted buckets of log '" + log.name() + "' under "
                    + log.dir() + " failed: " + IoErrors.describe(e) + "; " + IoErrors.advice(e) + ". Buckets not "
                    + "removed yet stay readable; run the compaction again", e);
        }
        return emptied;
    }

    private void writeMark(LogHandle log, Path segDir, long[] r, long now) throws IOException {
        String mark = markName(r[0], r[1]);
        Path prepared = segDir.resolve(mark + "." + writerId + "." + HexFormat.of().toHexDigits(random.nextLong()));
        byte[] text = ("leasehold-published 1\nsegment " + SegmentFile.name(r[0], r[1]) + "\nseen-by " + writerId
                + "\nseen-at " + now + "\n").getBytes(StandardCharsets.US_ASCII);
        try (FileChannel ch = fs.createNew(prepared)) {
            Sealer.writeFully(ch, java.nio.ByteBuffer.wrap(text), 0);
            ch.force(true);
        }
        fs.link(segDir.resolve(mark), prepared);
        fs.unlinkPrepared(prepared);
        LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6505 segment {0} of log ''{1}'' first seen published at {2}; its "
                + "buckets may be removed {3} later", SegmentFile.name(r[0], r[1]), log.name(), Micros.toInstant(now),
                java.time.Duration.ofNanos(delayMicros * 1_000L));
    }

    /** The mark's time, or null (logged) if it does not read as written: then nothing of its segment is removed. */
    private Long readMark(LogHandle log, Path mark) throws IOException {
        String text;
        try {
            text = new String(Sealer.readSmall(fs, mark, MAX_MARK_BYTES), StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            return null;
        }
        String[] lines = text.split("\n");
        if (lines.length == 4 && lines[0].equals("leasehold-published 1") && lines[3].startsWith("seen-at ")) {
            try {
                return Long.parseLong(lines[3].substring("seen-at ".length()));
            } catch (NumberFormatException e) {
                // Reported below.
            }
        }
        LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6506 publication mark {0} of log ''{1}'' does not read as "
                + "written; the buckets of its segment are kept (unlink the mark to have it written again)",
                mark.getFileName(), log.name());
        return null;
    }

    /** Unlinks the prepared marks of marked segments (left by racing or crashed runs). */
    private void removePreparedMarks(Path segDir) throws IOException {
        List<String> names = fs.list(segDir);
        Set<String> present = new HashSet<>(names);
        for (String n : names) {
            int cut = n.indexOf(MARK + ".");
            if (cut > 0 && NfsSafeFiles.isPreparedName(n) && present.contains(n.substring(0, cut) + MARK)) {
                fs.unlinkPrepared(segDir.resolve(n));
            }
        }
    }

    /** Verifies the whole segment, then empties its included buckets whose lock files agree; returns how many. */
    private int retire(LogHandle log, Path file) throws BagStoreException, IOException {
        long width = log.geometry().widthMicros();
        long[] range = SegmentFile.parseName(file.getFileName().toString());
        List<SegmentFile.Bucket> included = new ArrayList<>();
        try (SegmentReader seg = SegmentReader.open(fs, file, width, range[0], range[1], Set.of(), null)) {
            while (seg.nextBucket()) {
                if (seg.bucket.state() == SegmentFile.State.INCLUDED) {
                    included.add(seg.bucket);
                    while (seg.next()) {
                        // Every entry is checked as it is read.
                    }
                }
            }
        } catch (SegmentReader.Damage d) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6507 segment {0} of log ''{1}'' is damaged ({2}): none of "
                    + "its buckets is removed (restore the segment from a replica, or unlink it for the next compaction "
                    + "to write it again from the buckets)", file.getFileName(), log.name(), d.getMessage());
            return 0;
        } catch (NoSuchFileException e) {
            return 0;
        }
        int emptied = 0;
        Set<Path> parents = new java.util.LinkedHashSet<>();
        for (SegmentFile.Bucket b : included) {
            if (empty(log, b, parents)) {
                emptied++;
            }
        }
        int dirs = removeEmptyParents(log, parents);
        if (emptied > 0 || dirs > 0) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6508 removed the files and directories of {0} buckets of log "
                    + "''{1}'' that segment {2} holds, and {3} emptied time directories above them", emptied,
                    log.name(), file.getFileName(), dirs);
        }
        return emptied;
    }

    /**
     * Removes the empty minute directories in {@code parents}, then each emptied one's hour, day, month and year
     * directory while they are empty ({@code rmdir} refuses one that holds anything); returns how many.
     */
    private int removeEmptyParents(LogHandle log, Set<Path> parents) throws IOException {
        int removed = 0;
        Set<Path> level = parents;
        while (!level.isEmpty()) {
            // One level at a time: every emptied minute directory, then the hours above the removed ones, and so on.
            Set<Path> next = new java.util.LinkedHashSet<>();
            for (Path d : level) {
                if (d != null && !d.equals(log.dir()) && d.startsWith(log.dir()) && fs.removeEmptyLayoutDirectory(d)) {
                    removed++;
                    next.add(d.getParent());
                }
            }
            level = next;
        }
        return removed;
    }

    /**
     * Empties bucket {@code b} if its lock file agrees with the segment's table, and removes its directory; true if
     * it removed anything. The bucket's parent directory goes to {@code parents} once the bucket's directory is gone.
     */
    private boolean empty(LogHandle log, SegmentFile.Bucket b, Set<Path> parents) throws BagStoreException,
            IOException {
        Path dir = log.bucketDir(b.start());
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (NoSuchFileException e) {
            // Removed before (this or an earlier run, which may have stopped before the directories above it).
            parents.add(dir.getParent());
            return false;
        }
        if (names.isEmpty()) {
            // Emptied before its directory was removed (a run that stopped there, or one of an older version).
            if (fs.removeEmptyLayoutDirectory(dir)) {
                parents.add(dir.getParent());
            }
            return false;
        }
        if (!names.contains(Names.LOCK)) {
            return false;
        }
        LockFile lf;
        try {
            lf = sealer.readLock(log, b.start());
        } catch (CorruptRecordException | UnsupportedFormatVersionException | NoSuchFileException e) {
            return false;
        }
        if (!agrees(lf, b)) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6509 bucket {0} of log ''{1}'' is kept: its lock file does "
                    + "not list the files and sizes its segment lists", log.bucketPath(b.start()), log.name());
            return false;
        }
        hooks.retentionStep(log.name(), b.start());
        fs.chmod(dir, WRITABLE_DIR);
        List<String> order = new ArrayList<>();
        for (String n : names) {
            if (Names.parseDataFile(n) != null) {
                order.add(n);
            }
        }
        for (String n : names) {
            if (n.startsWith(Names.LOCK + ".") && NfsSafeFiles.isBucketFileName(n)) {
                order.add(n);
            }
        }
        if (names.contains(Names.PRELOCK)) {
            order.add(Names.PRELOCK);
        }
        order.add(Names.LOCK);
        for (String n : order) {
            fs.unlinkBucketFile(dir.resolve(n));
        }
        if (fs.removeEmptyLayoutDirectory(dir)) {
            parents.add(dir.getParent());
        } else {
            // Not empty: something was created in it meanwhile (a seal of this old range asked for by hand).
            fs.chmod(dir, Sealer.READ_ONLY_DIR);
        }
        return true;
    }

    private static boolean agrees(LockFile lf, SegmentFile.Bucket b) {
        if (lf.files().size() != b.files().size()) {
            return false;
        }
        for (int i = 0; i < lf.files().size(); i++) {
            LockFile.Entry e = lf.files().get(i);
            SegmentFile.Source s = b.files().get(i);
            if (!e.name().equals(s.name()) || e.size() != s.sealedSize()) {
                return false;
            }
        }
        return true;
    }
}
