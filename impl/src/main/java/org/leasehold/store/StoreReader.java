package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnknownLogException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * A read-only view of a bag store, for tools and readers that never append or seal: it takes no writer identity (no
 * machine-local writer lock, so it never shifts the {@code <host>-<instance>} identities of this machine's writers),
 * runs no metronome and creates nothing, not even a log it is asked about. Its reads are those of
 * {@link FileBagStore#read}; {@link #logs()}, {@link #survey}, {@link #segments} and {@link #views} list what is on disk. Thread-safe.
 */
public final class StoreReader implements AutoCloseable {
    private final FileBagStore store;
    private final NfsSafeFiles fs;
    private final Path root;

    private StoreReader(FileBagStore store) {
        this.store = store;
        this.fs = store.context().files();
        this.root = store.config().root();
    }

    /**
     * Opens the store rooted at {@code root} for reading, with time from {@code time} (used by {@link #survey} only
     * through the instant it is given).
     *
     * @throws StoreUnavailableException the root is missing, not a directory or cannot be listed
     */
    public static StoreReader open(Path root, TimeSource time) throws BagStoreException {
        return new StoreReader(FileBagStore.openReader(BagStoreConfig.builder(root).metronome(false).build(), time));
    }

    /** The store's root directory. */
    public Path root() {
        return root;
    }

    /**
     * The logs under the root, sorted by name: every directory whose name is an acceptable log name. A log created
     * by {@link FileBagStore#createLog} but never written is listed too.
     *
     * @throws StoreUnavailableException the root cannot be listed
     */
    public List<String> logs() throws BagStoreException {
        List<String> names;
        try {
            names = fs.list(root);
        } catch (IOException e) {
            throw new StoreUnavailableException("cannot list the bag store's root " + root + ": " + IoErrors.describe(e)
                    + "; " + IoErrors.advice(e), e);
        }
        List<String> logs = new ArrayList<>();
        for (String n : names) {
            if (Names.logNameProblem(n) != null) {
                continue;
            }
            try {
                fs.list(root.resolve(n));
                logs.add(n);
            } catch (NotDirectoryException | NoSuchFileException e) {
                // A file, or gone since the listing: not a log.
            } catch (IOException e) {
                throw new StoreUnavailableException("cannot list log '" + n + "' under " + root + ": "
                        + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
            }
        }
        logs.sort(null);
        return logs;
    }

    /**
     * The geometry of {@code log} as its descriptor records it (the defaults for a log created but never written).
     *
     * @throws UnknownLogException the log does not exist
     */
    public LogGeometry geometry(String log) throws BagStoreException {
        return store.logForReading(log).geometry();
    }

    /** Reads {@code log} as {@link FileBagStore#read} does. */
    public MessageStream read(ReadRequest request) throws BagStoreException {
        return store.read(request);
    }

    /**
     * What is on disk for {@code log} in the buckets that intersect {@code [fromMicros, toMicros)}, judged at
     * {@code nowMicros}: see {@link LogSurvey}. Lists every bucket directory in the range and opens every data file to
     * size it, so it costs about what a read of the range costs in directory operations.
     *
     * @throws UnknownLogException       the log does not exist
     * @throws StoreUnavailableException listing or sizing failed
     */
    public LogSurvey survey(String log, long fromMicros, long toMicros, long nowMicros) throws BagStoreException {
        return LogSurvey.of(store.context(), store.logForReading(log), fromMicros, toMicros, nowMicros);
    }

    /**
     * The segments of {@code log}: see {@link SegmentSurvey}. One directory listing and one open per segment.
     *
     * @throws UnknownLogException       the log does not exist
     * @throws StoreUnavailableException listing or sizing failed
     */
    public SegmentSurvey segments(String log) throws BagStoreException {
        return SegmentSurvey.of(store.context(), store.logForReading(log));
    }

    /**
     * The start of the earliest bucket of {@code log} on disk, as a bucket directory or inside a published segment, or
     * null if it has none. Lists one directory a level down to the first bucket, and the segments.
     *
     * @throws UnknownLogException       the log does not exist
     * @throws StoreUnavailableException listing failed
     */
    public Instant firstBucket(String log) throws BagStoreException {
        LogHandle h = store.logForReading(log);
        long first = Long.MAX_VALUE;
        try {
            long b = new BucketWalker(fs, h.dir(), h.geometry().widthMicros(), LogGeometry.MIN_MICROS,
                    LogGeometry.MAX_MICROS).next();
            if (b >= 0) {
                first = b;
            }
        } catch (IOException e) {
            throw new StoreUnavailableException("listing log '" + log + "' under " + root + " failed: "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
        Instant seg = segments(log).first();
        if (seg != null) {
            first = Math.min(first, Micros.of(seg));
        }
        return first == Long.MAX_VALUE ? null : Micros.toInstant(first);
    }

    /**
     * The materialized views of {@code log} and their snapshots: see {@link ViewSurvey}. One listing per view and one
     * open per snapshot.
     *
     * @throws UnknownLogException       the log does not exist
     * @throws StoreUnavailableException listing or sizing failed
     */
    public ViewSurvey views(String log) throws BagStoreException {
        return ViewSurvey.of(store.context(), store.logForReading(log));
    }

    /**
     * The state of {@code definition}'s view of {@code log}, read as {@link FileBagStore#view(String, ViewDefinition,
     * boolean)} reads it; builds and publishes nothing.
     *
     * @throws UnknownLogException the log does not exist
     */
    public <S> ViewState<S> view(String log, ViewDefinition<S> definition, boolean includeUnsealed)
            throws BagStoreException {
        return store.view(log, definition, includeUnsealed);
    }

    @Override
    public void close() {
        store.close();
    }

    @Override
    public String toString() {
        return "StoreReader[" + root + "]";
    }
}
