package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewEncodingException;
import org.leasehold.bag.ViewState;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.ViewSnapshotFile;
import org.leasehold.time.Micros;

/**
 * Materialized views: snapshots of an application's fold over a log as of sealed boundaries, in
 * {@code <log>/views/<view>/<boundary>-<version digest>.snapshot} (docs/FORMAT.md, "View snapshot file"), and reads
 * that start from the latest readable one.
 *
 * <p>A boundary is sealed when every bucket before it is sealed: the builder takes only boundaries whose last bucket
 * ended more than grace plus clock error ago (nothing can be written before them any more, as for the compaction
 * horizon) and seals every bucket directory before them that is not sealed yet. Publication is the compactor's: the
 * file is written under a prepared name, forced and linked into place; the first link wins; a loser compares the
 * winner's bytes with its own, refuses with {@link ViewEncodingException} if they differ, and unlinks its prepared
 * file. Nothing else is ever deleted.
 */
final class Views {
    private static final System.Logger LOG = System.getLogger(Views.class.getName());
    /** The directory of a log's view snapshots, one subdirectory per view. */
    static final String VIEWS = "views";
    private static final int MAX_NAME = 64;

    private final StoreContext ctx;
    private final NfsSafeFiles fs;
    private final FileBagStore store;
    private final Runnable beforeLink;
    private final SecureRandom random = new SecureRandom();

    Views(StoreContext ctx, FileBagStore store) {
        this(ctx, store, () -> { });
    }

    /** With a test step run between forcing the prepared file and linking it. */
    Views(StoreContext ctx, FileBagStore store, Runnable beforeLink) {
        this.ctx = ctx;
        this.fs = ctx.files();
        this.store = store;
        this.beforeLink = beforeLink;
    }

    /** A readable snapshot: its boundary and decoded state. */
    private record Found<S>(long boundary, S state) {
    }

    /** Checks a view's name (it names a directory). */
    static void checkName(ViewDefinition<?> d) {
        String n = d.name();
        boolean ok = n != null && !n.isEmpty() && n.length() <= MAX_NAME && n.charAt(0) != '.';
        for (int i = 0; ok && i < n.length(); i++) {
            char c = n.charAt(i);
            ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
                    || c == '-';
        }
        if (!ok) {
            throw new IllegalArgumentException("view name '" + n + "' is not acceptable: use 1 to " + MAX_NAME
                    + " characters among a-z A-Z 0-9 . _ - not starting with a dot");
        }
        if (d.version() == null) {
            throw new IllegalArgumentException("view '" + n + "' has no version: return a version string that changes "
                    + "whenever the fold or its encoding changes");
        }
    }

    /** The latest sealed boundary at or before {@code through} that may be taken now. */
    static long boundary(LogGeometry g, long through, long now) {
        long latest = now - g.graceMicros() - g.errorMicros() - 1;
        return g.bucketOf(Math.max(LogGeometry.MIN_MICROS, Math.min(through, latest)));
    }

    /**
     * The view's state: the latest readable snapshot (damaged ones logged and passed over) with the messages after
     * its boundary applied, read through the store's normal read (unsealed buckets too if asked).
     */
    <S> ViewState<S> read(LogHandle log, ViewDefinition<S> def, boolean includeUnsealed) throws BagStoreException {
        checkName(def);
        Found<S> start = latest(log, def, Long.MAX_VALUE);
        S state = start == null ? def.initial() : start.state();
        ReadRequest r = new ReadRequest(log.name(), start == null ? null : Micros.toInstant(start.boundary()), null,
                def.leaseNames(), false, includeUnsealed);
        long n = 0;
        boolean tentative = false;
        try (MessageStream s = store.read(r)) {
            Message m;
            while ((m = s.next()) != null) {
                state = def.apply(state, m);
                tentative |= m.tentative();
                n++;
            }
        }
        return new ViewState<>(state, start == null ? null : Micros.toInstant(start.boundary()), n, tentative);
    }

    /**
     * Publishes the snapshot at the latest sealed boundary at or before {@code through} (µs), starting from the latest
     * readable older snapshot; a snapshot already published there is left as it is.
     *
     * @throws ViewEncodingException     another builder published different bytes for the same boundary and version
     * @throws StoreUnavailableException the file system failed; a published snapshot stays valid
     */
    <S> ViewSnapshotReport build(LogHandle log, ViewDefinition<S> def, long through) throws BagStoreException {
        return build(log, def, through, ViewProgress.NONE);
    }

    /** {@link #build(LogHandle, ViewDefinition, long)}, reporting to {@code progress}. */
    <S> ViewSnapshotReport build(LogHandle log, ViewDefinition<S> def, long through, ViewProgress progress)
            throws BagStoreException {
        checkName(def);
        LogGeometry g = log.geometry();
        long b = boundary(g, through, ctx.time().nowMicros());
        byte[] digest = ViewSnapshotFile.versionDigest(def.version());
        Path dir = log.dir().resolve(VIEWS).resolve(def.name());
        String name = ViewSnapshotFile.name(b, digest);
        Path fin = dir.resolve(name);
        try {
            Found<S> start = latest(log, def, b);
            if (start != null && start.boundary() == b) {
                progress.starting(b, b, g.widthMicros());
                removePrepared(dir, name);
                return new ViewSnapshotReport(log.name(), def.name(), Micros.toInstant(b), name,
                        ViewSnapshotReport.Outcome.ALREADY_PUBLISHED, 0, fs.openAndSize(fin));
            }
            long from = start == null ? LogGeometry.MIN_MICROS : start.boundary();
            long first = sealBefore(log, from, b);
            progress.starting(from == LogGeometry.MIN_MICROS ? Math.min(first, b) : from, b, g.widthMicros());
            S state = start == null ? def.initial() : start.state();
            long n = 0;
            long reported = Long.MIN_VALUE;
            try (MessageStream s = store.read(new ReadRequest(log.name(), Micros.toInstant(from), Micros.toInstant(b),
                    def.leaseNames(), false, false))) {
                Message m;
                while ((m = s.next()) != null) {
                    state = def.apply(state, m);
                    n++;
                    long bucket = Micros.of(m.bucket());
                    if (bucket != reported) {
                        progress.folded(bucket);
                        reported = bucket;
                    }
                }
            }
            progress.folded(b);
            byte[] bytes = ViewSnapshotFile.encode(new ViewSnapshotFile.Snapshot(b, digest, def.name(),
                    def.encode(state)));
            fs.createDirectory(log.dir().resolve(VIEWS));
            fs.createDirectory(dir);
            Path prepared = dir.resolve(name + "." + ctx.writerId() + "." + HexFormat.of().toHexDigits(random.nextLong()));
            try (FileChannel ch = fs.createNew(prepared)) {
                Sealer.writeFully(ch, ByteBuffer.wrap(bytes), 0);
                ch.force(true);
            }
            beforeLink.run();
            boolean won;
            try {
                won = fs.link(fin, prepared);
            } catch (NoSuchFileException e) {
                // Another builder published this snapshot and unlinked our prepared file as a leftover.
                won = false;
            }
            ViewSnapshotReport.Outcome outcome = ViewSnapshotReport.Outcome.PUBLISHED;
            if (won) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-6550 published snapshot {0} of view ''{1}'' of log "
                        + "''{2}'': {3} messages folded, {4} bytes", name, def.name(), log.name(), n, bytes.length);
            } else {
                outcome = compare(log, def, fin, prepared, bytes) ? ViewSnapshotReport.Outcome.IDENTICAL
                        : ViewSnapshotReport.Outcome.DAMAGED;
            }
            fs.unlinkPrepared(prepared);
            removePrepared(dir, name);
            if (outcome != ViewSnapshotReport.Outcome.DAMAGED && start != null) {
                removeSuperseded(log, def, dir, digest, start.boundary());
            }
            return new ViewSnapshotReport(log.name(), def.name(), Micros.toInstant(b), name, outcome, n, bytes.length);
        } catch (IOException e) {
            throw new StoreUnavailableException("building snapshot " + name + " of view '" + def.name() + "' of log '"
                    + log.name() + "' under " + log.dir() + " failed: " + IoErrors.describe(e) + "; "
                    + IoErrors.advice(e) + ". Snapshots already published stay valid; build it again", e);
        }
    }

    /**
     * A loser's check of the winner's bytes: true if identical, false if the winner's are damaged; on any difference
     * the loser's prepared file is removed and nothing replaced.
     */
    private boolean compare(LogHandle log, ViewDefinition<?> def, Path fin, Path prepared, byte[] mine)
            throws BagStoreException, IOException {
        byte[] theirs = readFile(fin);
        if (Arrays.equals(theirs, mine)) {
            return true;
        }
        fs.unlinkPrepared(prepared);
        try {
            ViewSnapshotFile.decode(theirs);
        } catch (FormatException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6552 snapshot {0} of view ''{1}'' of log ''{2}'', published "
                    + "by another builder, is damaged: {3}; it stays, readers pass over it to an older snapshot or a "
                    + "full fold", fin.getFileName(), def.name(), log.name(), e.getMessage());
            return false;
        }
        int at = Arrays.mismatch(theirs, mine);
        throw new ViewEncodingException("snapshot " + fin.getFileName() + " of view '" + def.name() + "' of log '"
                + log.name() + "' was published by another builder with different bytes (" + theirs.length + " bytes "
                + "against " + mine.length + ", first difference at byte " + at + ") although both folded the same "
                + "sealed messages: the view's apply, encode or decode is not deterministic. The published snapshot was "
                + "left in place and this one discarded; make the definition deterministic and change its version");
    }

    /**
     * Seals every existing bucket directory of {@code [from, to)} that is not sealed yet; returns the start of the
     * first of them, or {@code to} if there is none.
     */
    private long sealBefore(LogHandle log, long from, long to) throws BagStoreException, IOException {
        BucketWalker w = new BucketWalker(fs, log.dir(), log.geometry().widthMicros(), from, to);
        long first = to;
        for (long bucket = w.next(); bucket >= 0; bucket = w.next()) {
            first = Math.min(first, bucket);
            ctx.sealer().seal(log, bucket, false, null);
        }
        return first;
    }

    /** The latest readable snapshot with a boundary at or before {@code atMost}, or null. */
    private <S> Found<S> latest(LogHandle log, ViewDefinition<S> def, long atMost) throws BagStoreException {
        // Builds remove superseded snapshots: a name listed may be gone when opened. If every one listed is gone,
        // newer ones were published meanwhile; list again (a few times, then fold from the beginning).
        for (int listing = 0; listing < 3; listing++) {
            Found<S> found = latest(log, def, atMost, listing == 2);
            if (found != GONE) {
                return found;
            }
        }
        return null;
    }

    /** The marker of a listing whose readable-looking names were all removed before they could be opened. */
    @SuppressWarnings("rawtypes")
    private static final Found GONE = new Found<>(-1, null);

    @SuppressWarnings("unchecked")
    private <S> Found<S> latest(LogHandle log, ViewDefinition<S> def, long atMost, boolean last)
            throws BagStoreException {
        byte[] digest = ViewSnapshotFile.versionDigest(def.version());
        Path dir = log.dir().resolve(VIEWS).resolve(def.name());
        List<Long> boundaries = new ArrayList<>();
        try {
            for (String n : fs.list(dir)) {
                long b = ViewSnapshotFile.parseName(n, digest);
                if (b >= 0 && b <= atMost) {
                    boundaries.add(b);
                }
            }
        } catch (NoSuchFileException e) {
            return null;
        } catch (IOException e) {
            throw new StoreUnavailableException("listing the snapshots of view '" + def.name() + "' of log '"
                    + log.name() + "' in " + dir + " failed: " + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        boundaries.sort(null);
        boolean vanished = false;
        for (int i = boundaries.size() - 1; i >= 0; i--) {
            long b = boundaries.get(i);
            String name = ViewSnapshotFile.name(b, digest);
            String problem;
            try {
                ViewSnapshotFile.Snapshot s = ViewSnapshotFile.decode(readFile(dir.resolve(name)));
                if (s.boundary() != b || !Arrays.equals(s.versionDigest(), digest) || !s.view().equals(def.name())) {
                    problem = "it holds view '" + s.view() + "' at " + s.boundary() + ", not what its name says";
                } else {
                    return new Found<>(b, def.decode(s.state()));
                }
            } catch (FormatException e) {
                problem = "at offset " + e.offset() + ": " + e.getMessage();
            } catch (NoSuchFileException e) {
                vanished = true; // removed since listing, by a build that published a newer one
                continue;
            } catch (IOException e) {
                problem = IoErrors.describe(e);
            } catch (RuntimeException e) {
                problem = "the definition cannot decode its state (" + e + ")";
            }
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-6551 snapshot {0} of view ''{1}'' of log ''{2}'' is "
                    + "unreadable: {3}; the view is read from an older snapshot or folded from the beginning", name,
                    def.name(), log.name(), problem);
        }
        return vanished && !last ? (Found<S>) GONE : null;
    }

    private byte[] readFile(Path file) throws IOException {
        try (FileChannel ch = fs.openForRead(file)) {
            long size = ch.size();
            if (size > ViewSnapshotFile.MAX_STATE + 1024L * 1024) {
                throw new IOException("snapshot " + file + " has " + size + " bytes, more than a snapshot may hold");
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            while (b.hasRemaining()) {
                if (ch.read(b, b.position()) < 0) {
                    break;
                }
            }
            return Arrays.copyOf(b.array(), b.position());
        }
    }

    /**
     * Unlinks the published snapshots of this version with a boundary before {@code kept}, the readable snapshot a
     * build started from and has now published a newer one above: two readable snapshots stay (the new one and
     * {@code kept}), and so do damaged ones between them, for inspection. Snapshots of other versions are left to
     * their own builders.
     */
    private void removeSuperseded(LogHandle log, ViewDefinition<?> def, Path dir, byte[] digest, long kept)
            throws IOException {
        int removed = 0;
        for (String n : fs.list(dir)) {
            long b = ViewSnapshotFile.parseName(n, digest);
            if (b >= 0 && b < kept && fs.unlinkSupersededSnapshot(dir.resolve(n))) {
                removed++;
            }
        }
        if (removed > 0) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6553 removed {0} snapshot(s) of view ''{1}'' of log ''{2}'' "
                    + "older than {3}, which a newer snapshot supersedes", removed, def.name(), log.name(),
                    ViewSnapshotFile.name(kept, digest));
        }
    }

    /** Unlinks the prepared files of the published snapshot {@code name} (those of crashed or losing builders). */
    private void removePrepared(Path dir, String name) throws IOException {
        for (String n : fs.list(dir)) {
            if (n.startsWith(name + ".") && NfsSafeFiles.isPreparedName(n)) {
                fs.unlinkPrepared(dir.resolve(n));
            }
        }
    }
}
