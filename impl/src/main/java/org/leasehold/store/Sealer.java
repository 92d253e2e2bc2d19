package org.leasehold.store;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.CorruptRecordException;
import org.leasehold.bag.SealReport;
import org.leasehold.bag.StoreUnavailableException;
import org.leasehold.bag.UnsupportedFormatVersionException;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.format.FormatException;
import org.leasehold.store.format.LockFile;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Seals buckets with the five steps of the protocol, wait-free: any number of processes may run it on one bucket at
 * once, none waits for another, and losing a race (steps 1 and 4) means someone else is helping.
 *
 * <ol>
 *   <li>ensure {@code prelock} exists (create exclusively; "already exists" is fine);
 *   <li>list the bucket (after the prelock exists) and make every data file read-only;
 *   <li>write a lock file listing every data file and its size under a unique name, and force it;
 *   <li>{@code link(2)} it as {@code lock} ("already exists" is fine: another sealer's lock file wins);
 *   <li>make the bucket directory read-only.
 * </ol>
 *
 * A data file created after step 2's listing is not listed: its writer checks for {@code prelock} after creating it
 * and refuses to write. Mode bits are defence in depth only; nothing depends on them.
 */
final class Sealer {
    private static final System.Logger LOG = System.getLogger(Sealer.class.getName());
    static final Set<PosixFilePermission> READ_ONLY_FILE = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ);
    static final Set<PosixFilePermission> READ_ONLY_DIR = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.GROUP_READ, PosixFilePermission.GROUP_EXECUTE,
            PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_EXECUTE);
    /** Lock files larger than this are refused as corrupt (a bucket with a million writers would still fit). */
    static final int MAX_LOCK_BYTES = 64 << 20;

    private final NfsSafeFiles fs;
    private final String sealerId;
    private final TimeSource time;
    private final SecureRandom random = new SecureRandom();

    Sealer(NfsSafeFiles fs, String sealerId, TimeSource time) {
        this.fs = fs;
        this.sealerId = sealerId;
        this.time = time;
    }

    /**
     * The result of sealing one bucket.
     *
     * @param lock    the lock file now in place (whoever wrote it)
     * @param outcome how it came about
     */
    record Result(LockFile lock, SealReport.Outcome outcome) {
    }

    /**
     * Seals the bucket starting at {@code start}.
     *
     * @param createMissing create the bucket directory if it does not exist (so nothing can be written there later);
     *                      otherwise a missing bucket is left alone and null returned
     * @param ownSizes      sizes to list for data files of this process instead of their current size (a writer
     *                      sealing from its late path lists its file without the frames it is deciding about)
     */
    Result seal(LogHandle log, long start, boolean createMissing, Map<String, Long> ownSizes) throws BagStoreException {
        StoreEvents.Seal event = new StoreEvents.Seal();
        event.begin();
        Result r = null;
        boolean failed = true;
        try {
            r = sealBucket(log, start, createMissing, ownSizes);
            failed = false;
            return r;
        } finally {
            event.end();
            if (event.shouldCommit()) {
                event.log = log.name();
                event.bucket = log.bucketPath(start);
                event.bucketStart = Micros.toInstant(start).toString();
                event.outcome = failed ? "failed" : r == null ? "missing" : switch (r.outcome()) {
                    case SEALED -> "sealed";
                    case HELPED -> "helped";
                    case ALREADY_SEALED -> "already sealed";
                };
                event.files = r == null ? 0 : r.lock().files().size();
                event.bytes = r == null ? 0 : r.lock().totalBytes();
                event.commit();
            }
        }
    }

    private Result sealBucket(LogHandle log, long start, boolean createMissing, Map<String, Long> ownSizes)
            throws BagStoreException {
        Path dir = log.bucketDir(start);
        String where = "bucket " + log.bucketPath(start) + " of log '" + log.name() + "'";
        try {
            List<String> names;
            try {
                names = fs.list(dir);
            } catch (NoSuchFileException e) {
                if (!createMissing) {
                    return null;
                }
                names = createAndList(log.dir(), dir);
            }
            if (names.contains(Names.LOCK)) {
                return new Result(readLock(log, start), SealReport.Outcome.ALREADY_SEALED);
            }
            // Step 1: declare the intent. Losing the race means another sealer declared it.
            if (!names.contains(Names.PRELOCK)) {
                try (FileChannel ch = fs.createNew(dir.resolve(Names.PRELOCK))) {
                    byte[] text = ("leasehold-prelock 1\nsealer " + sealerId + "\nat " + time.nowMicros() + "\n")
                            .getBytes(StandardCharsets.US_ASCII);
                    writeFully(ch, ByteBuffer.wrap(text), 0);
                } catch (FileAlreadyExistsException e) {
                    // Another sealer is at work: help it.
                } catch (IOException e) {
                    if (fs.list(dir).contains(Names.LOCK)) {
                        return new Result(readLock(log, start), SealReport.Outcome.HELPED);
                    }
                    throw e;
                }
            }
            // Step 2: list again, now that the prelock exists: any data file created later sees it and stays empty.
            names = fs.list(dir);
            if (names.contains(Names.LOCK)) {
                return new Result(readLock(log, start), SealReport.Outcome.HELPED);
            }
            List<String> dataFiles = new ArrayList<>();
            for (String n : names) {
                if (Names.isDataFile(n)) {
                    dataFiles.add(n);
                }
            }
            dataFiles.sort(null);
            for (String n : dataFiles) {
                try {
                    fs.chmod(dir.resolve(n), READ_ONLY_FILE);
                } catch (IOException e) {
                    // Defence in depth only (another user's file on NFS cannot be chmod-ed by us); the lock decides.
                    LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6201 could not make {0} read-only in {1}: {2}", n, where,
                            IoErrors.describe(e));
                }
            }
            // Step 3: the sizes, after the prelock and the chmod.
            List<LockFile.Entry> entries = new ArrayList<>(dataFiles.size());
            for (String n : dataFiles) {
                Long own = ownSizes == null ? null : ownSizes.get(n);
                long size = own != null ? own : fs.openAndSize(dir.resolve(n));
                entries.add(new LockFile.Entry(n, size));
            }
            LockFile mine = new LockFile(log.name(), start, log.geometry().widthMicros(), sealerId, time.nowMicros(),
                    entries);
            byte[] bytes = mine.encode();
            Path prepared = dir.resolve(Names.LOCK_PREPARED_PREFIX + sealerId + "." + HexFormat.of().toHexDigits(
                    random.nextLong()));
            try (FileChannel ch = fs.createNew(prepared)) {
                writeFully(ch, ByteBuffer.wrap(bytes), 0);
                ch.force(true);
            } catch (IOException e) {
                if (fs.list(dir).contains(Names.LOCK)) {
                    return new Result(readLock(log, start), SealReport.Outcome.HELPED);
                }
                throw e;
            }
            // Step 4: publish. Losing means another sealer's lock file is the bucket's truth.
            boolean won = fs.link(dir.resolve(Names.LOCK), prepared);
            // Step 5: the directory, read-only (defence in depth).
            try {
                fs.chmod(dir, READ_ONLY_DIR);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6202 could not make {0} read-only: {1}", where,
                        IoErrors.describe(e));
            }
            if (won) {
                LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-6203 sealed {0}: {1} data files, {2} bytes", where,
                        entries.size(), mine.totalBytes());
                return new Result(mine, SealReport.Outcome.SEALED);
            }
            return new Result(readLock(log, start), SealReport.Outcome.HELPED);
        } catch (IOException e) {
            throw new StoreUnavailableException("could not seal " + where + " under " + log.dir() + ": "
                    + IoErrors.describe(e) + "; " + IoErrors.advice(e), e);
        }
    }

    /** How often a chain of {@code mkdir}s is retried when retention removed a directory of it meanwhile. */
    static final int MKDIR_ATTEMPTS = 8;

    /**
     * Creates the bucket directory and any missing parent up to the log directory. Retention removes emptied
     * directories of old ranges ({@code rmdir}); when one of the parents disappears between its creation and its
     * child's, the chain is created again, a few times.
     */
    void ensureDirectories(Path logDir, Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            try {
                createChain(logDir, dir);
                return;
            } catch (NoSuchFileException e) {
                if (attempt >= MKDIR_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    private void createChain(Path logDir, Path dir) throws IOException {
        try {
            fs.createDirectory(dir);
        } catch (NoSuchFileException e) {
            Path parent = dir.getParent();
            if (parent == null || parent.equals(logDir)) {
                throw e;
            }
            createChain(logDir, parent);
            fs.createDirectory(dir);
        }
    }

    /** Creates bucket directory {@code dir} (and its parents) and lists it, again if retention removed it meanwhile. */
    private List<String> createAndList(Path logDir, Path dir) throws IOException {
        for (int attempt = 1; ; attempt++) {
            ensureDirectories(logDir, dir);
            try {
                return fs.list(dir);
            } catch (NoSuchFileException e) {
                if (attempt >= MKDIR_ATTEMPTS) {
                    throw e;
                }
            }
        }
    }

    /** Reads and verifies the lock file of a bucket. */
    LockFile readLock(LogHandle log, long start) throws BagStoreException, IOException {
        Path dir = log.bucketDir(start);
        byte[] bytes = readSmall(fs, dir.resolve(Names.LOCK), MAX_LOCK_BYTES);
        String bucket = log.bucketPath(start);
        try {
            LockFile lf = LockFile.parse(bytes);
            if (lf.bucketStart() != start || !lf.log().equals(log.name())) {
                throw new CorruptRecordException(log.name(), bucket, Names.LOCK, 0, "the lock file of bucket " + bucket
                        + " of log '" + log.name() + "' describes bucket " + lf.bucketStart() + " of log '" + lf.log()
                        + "': it was copied from elsewhere; restore the right one from a backup");
            }
            return lf;
        } catch (FormatException e) {
            if (e.version() != 0) {
                throw new UnsupportedFormatVersionException(log.name(), bucket, Names.LOCK, 0, e.version(),
                        "the lock file of bucket " + bucket + " of log '" + log.name() + "' is unreadable: "
                                + e.getMessage() + "; upgrade this reader");
            }
            throw new CorruptRecordException(log.name(), bucket, Names.LOCK, e.offset(), "the lock file of bucket "
                    + bucket + " of log '" + log.name() + "' is corrupt: " + e.getMessage()
                    + "; restore it from a replica or backup (it is the list of the bucket's data files and sizes)");
        }
    }

    /** Reads a whole small file (up to {@code max} bytes). */
    static byte[] readSmall(NfsSafeFiles fs, Path file, int max) throws IOException {
        try (FileChannel ch = fs.openForRead(file)) {
            long size = ch.size();
            if (size > max) {
                throw new IOException(file + " is " + size + " bytes; more than the " + max + " expected");
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            while (b.hasRemaining()) {
                if (ch.read(b, b.position()) < 0) {
                    break;
                }
            }
            byte[] out = new byte[b.position()];
            System.arraycopy(b.array(), 0, out, 0, out.length);
            return out;
        }
    }

    /** Writes all of {@code b} at {@code position}. */
    static void writeFully(FileChannel ch, ByteBuffer b, long position) throws IOException {
        long p = position;
        while (b.hasRemaining()) {
            p += ch.write(b, p);
        }
    }
}
