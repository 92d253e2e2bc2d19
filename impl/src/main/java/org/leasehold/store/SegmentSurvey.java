package org.leasehold.store;

import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.Micros;

/**
 * The segments of one log, as {@link StoreReader#segments} found them in {@code <log>/segments/}: the published
 * segments readers use (the choice every reader makes from the names), the time they cover and their size, and the
 * prepared files left beside them. One directory listing and one open per segment; nothing is read from the files.
 *
 * @param log           the log
 * @param segments      published segments readers use
 * @param first         the start of the first of them, or null if there is none
 * @param last          the end of the last of them, or null
 * @param coveredMicros the time they cover together (less than {@code last - first} where there are gaps)
 * @param bytes         their sizes on disk
 * @param prepared      prepared segment files in the directory (being written now, or left by a crashed or losing
 *                      compactor; the next compaction of a published range unlinks them)
 */
public record SegmentSurvey(String log, long segments, Instant first, Instant last, long coveredMicros, long bytes,
        long prepared) {

    static SegmentSurvey of(StoreContext store, LogHandle log) throws BagStoreException {
        NfsSafeFiles fs = store.files();
        Path dir = log.dir().resolve(Compactor.SEGMENTS);
        List<String> names;
        try {
            names = fs.list(dir);
        } catch (NoSuchFileException e) {
            return new SegmentSurvey(log.name(), 0, null, null, 0, 0, 0);
        } catch (IOException e) {
            throw unavailable(log, dir, e);
        }
        List<long[]> used = SegmentChoice.published(names, log.geometry().widthMicros());
        long covered = 0;
        long bytes = 0;
        long prepared = 0;
        try {
            for (long[] r : used) {
                covered += r[1] - r[0];
                try {
                    bytes += fs.openAndSize(dir.resolve(SegmentFile.name(r[0], r[1])));
                } catch (NoSuchFileException e) {
                    // Listed a moment ago and gone since (removed by an operator): nothing to count.
                }
            }
        } catch (IOException e) {
            throw unavailable(log, dir, e);
        }
        for (String n : names) {
            if (n.contains(".segment.") && NfsSafeFiles.isPreparedName(n)) {
                prepared++;
            }
        }
        return new SegmentSurvey(log.name(), used.size(), used.isEmpty() ? null : Micros.toInstant(used.get(0)[0]),
                used.isEmpty() ? null : Micros.toInstant(used.get(used.size() - 1)[1]), covered, bytes, prepared);
    }

    private static StoreUnavailableException unavailable(LogHandle log, Path dir, IOException e) {
        return new StoreUnavailableException("surveying the segments of log '" + log.name() + "' in " + dir
                + " failed: " + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
    }
}
