package org.leasehold.store;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.leasehold.bag.StoreUnavailableException;

/**
 * Machine-local exclusion of writer identities: two JVMs on one machine never write the same writer log. The identity
 * {@code <host>-<instance>} takes the lowest instance whose lock file, in a machine-local directory, this process can
 * lock ({@link FileChannel#tryLock()}); an explicitly configured identity is guarded by the same kind of lock. The
 * lock is held until {@link #close()} (or the process ends, when the operating system releases it).
 *
 * <p>The lock directory must be local to the machine (by default under {@code java.io.tmpdir}), never on the shared
 * store: file locks on NFS are exactly what the store avoids. This class is therefore not part of the store's
 * file-system boundary ({@link org.leasehold.fs.NfsSafeFiles}), which governs the shared root only.
 */
final class LocalWriterLock implements AutoCloseable {
    private static final int MAX_INSTANCES = 10_000;

    private final String writerId;
    private final FileChannel channel;
    private final FileLock lock;

    private LocalWriterLock(String writerId, FileChannel channel, FileLock lock) {
        this.writerId = writerId;
        this.channel = channel;
        this.lock = lock;
    }

    String writerId() {
        return writerId;
    }

    /** Takes the configured identity, or the lowest free {@code <host>-<instance>}. */
    static LocalWriterLock acquire(Path dir, String host, String explicitId) throws StoreUnavailableException {
        try {
            Files.createDirectories(dir);
        } catch (IOException e) {
            throw new StoreUnavailableException("cannot create the machine-local lock directory " + dir + " for writer "
                    + "identities: " + IoErrors.describe(e) + "; configure localLockDir to a writable local directory", e);
        }
        if (explicitId != null) {
            LocalWriterLock l = tryLock(dir, explicitId);
            if (l == null) {
                throw new StoreUnavailableException("writer identity '" + explicitId + "' is in use by another store on "
                        + "this machine (its lock " + dir.resolve(explicitId + ".lock") + " is held): two processes "
                        + "must never write the same writer log. Configure a different writerId, or leave it unset to "
                        + "get a free <host>-<instance> identity");
            }
            return l;
        }
        String h = Names.sanitizeHost(host != null ? host : localHostName());
        if (h.isEmpty()) {
            h = "host";
        }
        for (int i = 0; i < MAX_INSTANCES; i++) {
            LocalWriterLock l = tryLock(dir, h + "-" + i);
            if (l != null) {
                return l;
            }
        }
        throw new StoreUnavailableException("all " + MAX_INSTANCES + " writer identities " + h + "-0 to " + h + "-"
                + (MAX_INSTANCES - 1) + " are locked in " + dir + "; too many stores on this machine");
    }

    private static LocalWriterLock tryLock(Path dir, String id) throws StoreUnavailableException {
        Path file = dir.resolve(id + ".lock");
        FileChannel ch = null;
        try {
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            FileLock lock;
            try {
                lock = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock == null) {
                ch.close();
                return null;
            }
            return new LocalWriterLock(id, ch, lock);
        } catch (IOException e) {
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new StoreUnavailableException("cannot lock " + file + " for writer identity '" + id + "': "
                    + IoErrors.describe(e) + "; configure localLockDir to a writable local directory", e);
        }
    }

    private static String localHostName() {
        String env = System.getenv("HOSTNAME");
        if (env != null && !env.isBlank()) {
            return env;
        }
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException e) {
            // The process keeps nothing else on this channel; the OS releases the lock at exit anyway.
        }
    }
}
