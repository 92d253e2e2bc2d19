package org.leasehold.fs;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.zip.CRC32C;

import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;

/**
 * A {@link TimeMark} in a directory, with the NFS-safe operations only (no rename, delete or truncate), so that it
 * can live under a bag store root as well as in a lease server's state directory.
 *
 * <p>The directory holds {@code mark.<n>} files. Each incarnation reads the newest record, then creates
 * {@code mark.<n+1>} exclusively (one past the highest number) and appends to it only, so a torn tail a crash left
 * behind is never appended to; after {@link #RECORDS_PER_FILE} records it goes on in the next number. A file is a
 * sequence of 32-byte records, big-endian: magic {@code "LHM1"}, horizon, bound and written-at (longs, microseconds
 * since the epoch), CRC32C of the first 28 bytes. Each record is forced before {@link #record} returns.
 *
 * <p>Reading takes the newest file with at least one whole record, and its last whole record. A shorter tail is a
 * record torn by a crash and is ignored; so is a last record that fails its checksum when the one before it is
 * whole (the write that was torn never returned, so nothing was granted under it). Anything else (two damaged
 * records at the end, a file of damaged records) is refused with a message that says what to do: the time mark is
 * what keeps generations and floors from going back, and a guess would defeat it.
 */
public final class TimeMarkFiles implements TimeMark, AutoCloseable {
    private static final System.Logger LOG = System.getLogger(TimeMarkFiles.class.getName());
    /** Bytes per record. */
    public static final int RECORD_BYTES = 32;
    /** Records per file before the next file is started (about a day at one record every 3 s). */
    public static final int RECORDS_PER_FILE = 32_768;
    private static final int MAGIC = 0x4C484D31;
    private static final String PREFIX = "mark.";

    private final NfsSafeFiles fs;
    private final Path dir;
    private final Recorded previous;
    private final Executor executor;
    private final ExecutorService ownThread;
    private FileChannel file;
    private int number;
    private int records;

    private TimeMarkFiles(NfsSafeFiles fs, Path dir, Recorded previous, FileChannel file, int number,
            ExecutorService ownThread) {
        this.fs = fs;
        this.dir = dir;
        this.previous = previous;
        this.file = file;
        this.number = number;
        this.ownThread = ownThread;
        this.executor = ownThread != null ? ownThread : Runnable::run;
    }

    /**
     * Reads the newest record in {@code dir} (created if missing; its parent must exist) and starts the next file.
     *
     * @param ownThread true: {@link #record} runs on a daemon thread of this mark's; false: on the engine's timer
     *                  thread (tests on a manual clock)
     * @throws IOException the directory cannot be read or written, or its newest records are damaged; the message
     *                     says which file and what to do
     */
    public static TimeMarkFiles open(NfsSafeFiles fs, Path dir, boolean ownThread) throws IOException {
        fs.createDirectory(dir);
        List<Integer> numbers = new ArrayList<>();
        for (String name : fs.list(dir)) {
            if (name.startsWith(PREFIX)) {
                try {
                    int n = Integer.parseInt(name.substring(PREFIX.length()));
                    if (n > 0) {
                        numbers.add(n);
                    }
                } catch (NumberFormatException e) {
                    // Not a mark file: ignored.
                }
            }
        }
        Collections.sort(numbers, Collections.reverseOrder());
        Recorded previous = null;
        for (int n : numbers) {
            previous = read(fs, dir.resolve(PREFIX + n));
            if (previous != null) {
                break;
            }
        }
        int mine = numbers.isEmpty() ? 1 : numbers.get(0) + 1;
        FileChannel ch = create(fs, dir, mine);
        ExecutorService thread = ownThread ? Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "leasehold-time-mark");
            t.setDaemon(true);
            return t;
        }) : null;
        return new TimeMarkFiles(fs, dir, previous, ch, mine, thread);
    }

    private static FileChannel create(NfsSafeFiles fs, Path dir, int n) throws IOException {
        try {
            return fs.createNew(dir.resolve(PREFIX + n));
        } catch (FileAlreadyExistsException e) {
            throw new IOException("the time mark file " + dir.resolve(PREFIX + n) + " was just created by someone "
                    + "else: another lease service records its time mark in " + dir + "; give each one its own", e);
        }
    }

    /** The last whole record of {@code f}, or null if it has none (a start that recorded nothing). */
    private static Recorded read(NfsSafeFiles fs, Path f) throws IOException {
        ByteBuffer last;
        ByteBuffer before;
        long whole;
        try (FileChannel ch = fs.openForRead(f)) {
            whole = ch.size() / RECORD_BYTES;
            if (whole == 0) {
                return null;
            }
            last = readAt(ch, (whole - 1) * RECORD_BYTES);
            before = whole > 1 ? readAt(ch, (whole - 2) * RECORD_BYTES) : null;
        }
        Recorded r = decode(last);
        if (r != null) {
            return r;
        }
        Recorded earlier = before == null ? null : decode(before);
        if (earlier != null) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-1012 the last record of the time mark file {0} is damaged "
                    + "(a write torn by a crash): using the record before it, horizon {1}", f,
                    Micros.toInstant(earlier.horizon()));
            return earlier;
        }
        throw new IOException("the time mark file " + f + " is damaged: its last " + (before == null ? "record fails"
                + " its checksum" : "two records fail their checksums") + ". It bounds every generation, floor and "
                + "deadline the last lease service granted, and cannot be guessed: if you are sure the clock of this "
                + "machine has not stepped back since that service stopped, move the directory " + f.getParent()
                + " aside and start again (the service then starts afresh, waiting out its quiet period)");
    }

    private static ByteBuffer readAt(FileChannel ch, long pos) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(RECORD_BYTES);
        while (b.hasRemaining()) {
            if (ch.read(b, pos + b.position()) < 0) {
                throw new IOException("the time mark file ended while reading a record at " + pos);
            }
        }
        return b.flip();
    }

    static ByteBuffer encode(Recorded r) {
        ByteBuffer b = ByteBuffer.allocate(RECORD_BYTES);
        b.putInt(MAGIC).putLong(r.horizon()).putLong(r.bound()).putLong(r.writtenAt());
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, RECORD_BYTES - 4);
        b.putInt((int) crc.getValue());
        return b.flip();
    }

    private static Recorded decode(ByteBuffer b) {
        CRC32C crc = new CRC32C();
        crc.update(b.array(), 0, RECORD_BYTES - 4);
        if (b.getInt(0) != MAGIC || b.getInt(RECORD_BYTES - 4) != (int) crc.getValue()) {
            return null;
        }
        return new Recorded(b.getLong(4), b.getLong(12), b.getLong(20));
    }

    @Override
    public Recorded previous() {
        return previous;
    }

    @Override
    public synchronized void record(Recorded r) throws IOException {
        if (file == null) {
            throw new IOException("the time mark in " + dir + " is closed");
        }
        if (records == RECORDS_PER_FILE) {
            FileChannel next = create(fs, dir, number + 1);
            file.close();
            file = next;
            number++;
            records = 0;
        }
        ByteBuffer b = encode(r);
        long pos = (long) records * RECORD_BYTES;
        while (b.hasRemaining()) {
            pos += file.write(b, pos);
        }
        file.force(false);
        records++;
    }

    @Override
    public Executor executor() {
        return executor;
    }

    /** The directory of the mark files. */
    public Path directory() {
        return dir;
    }

    @Override
    public synchronized void close() {
        if (ownThread != null) {
            ownThread.shutdown();
        }
        if (file != null) {
            try {
                file.close();
            } catch (IOException e) {
                // Every record was forced; a failed close loses nothing.
            }
            file = null;
        }
    }
}
