package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.ViewSnapshotFile;
import org.leasehold.time.Micros;

/**
 * The materialized views of one log, as {@link StoreReader#views} found them in {@code <log>/views/}: for each view
 * directory, its published snapshots (every version together: a snapshot's name carries its boundary and a digest of
 * its definition's version, docs/FORMAT.md "View snapshot file") and the prepared files beside them. One listing per
 * view and one open per snapshot; nothing is read from the files, so a damaged snapshot is counted like the others.
 *
 * @param log   the log
 * @param views the views, sorted by name
 */
public record ViewSurvey(String log, List<View> views) {

    /**
     * One view's directory.
     *
     * @param view           the view's name
     * @param snapshots      published snapshots, all versions
     * @param versions       distinct version digests among them
     * @param latestBoundary the latest boundary among them, or null if there is none
     * @param latestFile     the name of a snapshot at that boundary (of the last version in name order), or null
     * @param bytes          their sizes on disk
     * @param prepared       prepared snapshot files (being written now, or left by a crashed or losing builder; the next
     *                       build of a published boundary unlinks them)
     */
    public record View(String view, long snapshots, int versions, Instant latestBoundary, String latestFile, long bytes,
            long prepared) {
    }

    static ViewSurvey of(StoreContext store, LogHandle log) throws BagStoreException {
        NfsSafeFiles fs = store.files();
        Path dir = log.dir().resolve(Views.VIEWS);
        List<String> names;
        try {
            names = new ArrayList<>(fs.list(dir));
        } catch (NoSuchFileException | NotDirectoryException e) {
            return new ViewSurvey(log.name(), List.of());
        } catch (IOException e) {
            throw unavailable(log, dir, e);
        }
        names.sort(null);
        List<View> views = new ArrayList<>();
        for (String v : names) {
            Path vdir = dir.resolve(v);
            List<String> files;
            try {
                files = new ArrayList<>(fs.list(vdir));
            } catch (NoSuchFileException | NotDirectoryException e) {
                continue;
            } catch (IOException e) {
                throw unavailable(log, vdir, e);
            }
            files.sort(null);
            long snapshots = 0;
            long bytes = 0;
            long prepared = 0;
            long latest = Long.MIN_VALUE;
            String latestFile = null;
            Set<String> versions = new HashSet<>();
            for (String f : files) {
                if (NfsSafeFiles.isPreparedName(f)) {
                    prepared += f.contains(ViewSnapshotFile.SUFFIX + ".") ? 1 : 0;
                    continue;
                }
                int dash = f.indexOf('-');
                if (!f.endsWith(ViewSnapshotFile.SUFFIX) || dash <= 0) {
                    continue;
                }
                long b;
                try {
                    b = Long.parseLong(f.substring(0, dash));
                } catch (NumberFormatException e) {
                    continue;
                }
                try {
                    bytes += fs.openAndSize(vdir.resolve(f));
                } catch (NoSuchFileException e) {
                    // Listed a moment ago and gone since (removed by an operator): nothing to count.
                    continue;
                } catch (IOException e) {
                    throw unavailable(log, vdir, e);
                }
                snapshots++;
                versions.add(f.substring(dash + 1));
                if (b >= latest) {
                    latest = b;
                    latestFile = f;
                }
            }
            views.add(new View(v, snapshots, versions.size(), snapshots == 0 ? null : Micros.toInstant(latest),
                    latestFile, bytes, prepared));
        }
        return new ViewSurvey(log.name(), List.copyOf(views));
    }

    private static StoreUnavailableException unavailable(LogHandle log, Path dir, IOException e) {
        return new StoreUnavailableException("surveying the views of log '" + log.name() + "' in " + dir + " failed: "
                + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
    }
}
