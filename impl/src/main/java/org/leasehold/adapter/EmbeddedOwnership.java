package org.leasehold.adapter;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Embedded mode serves one server only: this is how a server owns a log while its embedded lease service grants
 * leases for it, and how a second server is refused (PROTOCOL-NOTES §8). It is the distributed-lock algorithm of a
 * TTL stored with the lock, refreshed well within it, and instant re-take by the same identity, on the file
 * operations that are safe on NFS (no rename, no delete):
 *
 * <ul>
 *   <li>Owners are the files {@code <root>/.leasehold/owners/<log>/owner.<n>}; the highest {@code n} is the current
 *       one. Each holds a header line ({@code writer=... ttl=...}) and then one heartbeat line (microseconds since the
 *       epoch) per refresh, appended by its single writer.
 *   <li>To claim, a server lists the directory and reads the highest file. If its last heartbeat is older than its TTL
 *       plus the clock error, or it is this writer's own (a restart), the server creates {@code owner.<n+1>} with an
 *       exclusive create; otherwise, or if another server created that file first, it refuses, saying who owns the log.
 *   <li>The owner appends a heartbeat every eighth of the TTL (of elapsed time). After each one it lets its lease
 *       engine grant for half a TTL more ({@link org.leasehold.engine.EmbeddedLeaseService#fenceAt}); an owner that
 *       stops refreshing (paused, cut off from the store) stops granting by itself before anyone may take over. If it
 *       finds a higher owner file, it has been replaced and fences its engine for good. If its clock reads more than
 *       the clock error below the latest time it read at a heartbeat (stepped back), it grants nothing until the
 *       clock reads that time again: its grants would otherwise carry times other servers have passed, and its
 *       heartbeats look stale to them, so one may take over meanwhile.
 *   <li>A new owner's engine waits out the previous owner's last grants: it grants from the previous owner's last
 *       heartbeat + TTL/2 + maximum lease + grace + clock error (nothing to wait for when there was none).
 * </ul>
 */
final class EmbeddedOwnership implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(EmbeddedOwnership.class.getName());
    private static final String PREFIX = "owner.";
    /** The header line is well within this. */
    private static final int HEAD_BYTES = 4096;
    /** The last heartbeats are well within this (a heartbeat line is about 17 bytes). */
    private static final int TAIL_BYTES = 64 * 1024;

    /** Why a claim failed; the message says who owns the log and what to do. */
    static final class OwnedElsewhereException extends Exception {
        private static final long serialVersionUID = 1L;

        OwnedElsewhereException(String message) {
            super(message);
        }
    }

    private final NfsSafeFiles fs;
    private final Path dir;
    private final int number;
    private final String writer;
    private final Duration ttl;
    private final TimeSource time;
    private final FileChannel file;
    private final Instant grantableFrom;
    private volatile Fence fence;
    private volatile TimeSource.Timer next;
    private volatile boolean replaced;
    private volatile boolean closed;
    private volatile int failures;
    private volatile String lastFailure;
    /** When the last heartbeat ran, successful or not. */
    private volatile long lastBeatMicros;
    private final long clockErrorMicros;
    /** The latest time the clock read at a heartbeat (the heartbeat thread's). */
    private long latestMicros;
    /** While the clock reads below {@link #latestMicros} by more than the clock error: why (null otherwise). */
    private volatile String steppedBack;

    /** What the owner moves forward after each heartbeat. */
    interface Fence {
        void grantUntil(Instant until, String reason);
    }

    @SuppressWarnings("checkstyle:ParameterNumber")
    private EmbeddedOwnership(NfsSafeFiles fs, Path dir, int number, String writer, Duration ttl, Duration clockError,
            TimeSource time, FileChannel file, Instant grantableFrom) {
        this.fs = fs;
        this.dir = dir;
        this.number = number;
        this.writer = writer;
        this.ttl = ttl;
        this.clockErrorMicros = Micros.of(clockError);
        this.time = time;
        this.file = file;
        this.grantableFrom = grantableFrom;
    }

    /**
     * Claims {@code log} for {@code writer}.
     *
     * @param maxLease      the lease engine's maximum lease duration
     * @param grace         grace after an unrelinquished expiry
     * @param clockError    bound on clock error between servers
     * @throws OwnedElsewhereException another live server owns the log
     */
    static EmbeddedOwnership claim(NfsSafeFiles fs, Path root, String log, String writer, Duration ttl,
            Duration maxLease, Duration grace, Duration clockError, TimeSource time)
            throws IOException, OwnedElsewhereException {
        Path base = root.resolve(".leasehold");
        fs.createDirectory(base);
        Path owners = base.resolve("owners");
        fs.createDirectory(owners);
        Path dir = owners.resolve(log);
        fs.createDirectory(dir);
        int highest = 0;
        for (String name : fs.list(dir)) {
            if (name.startsWith(PREFIX)) {
                try {
                    highest = Math.max(highest, Integer.parseInt(name.substring(PREFIX.length())));
                } catch (NumberFormatException e) {
                    // Not an owner file: ignored.
                }
            }
        }
        long now = time.nowMicros();
        Instant grantableFrom = Micros.toInstant(now);
        if (highest > 0) {
            Previous p = read(fs, dir.resolve(PREFIX + highest));
            long stale = Micros.plus(p.lastHeartbeat, Micros.of(p.ttl.plus(clockError)));
            if (!writer.equals(p.writer) && now < stale) {
                throw new OwnedElsewhereException("the log '" + log + "' in " + root + " is served by the embedded "
                        + "lease service of writer '" + p.writer + "' (last heartbeat " + Micros.toInstant(p.lastHeartbeat)
                        + ", TTL " + p.ttl.toMillis() + " ms): embedded mode serves one server only. Use a lease "
                        + "server (LeaseService=remote:...) for several servers, or stop the other one; if it crashed, "
                        + "its ownership lapses at " + Micros.toInstant(stale));
            }
            // The previous owner granted nothing after its last heartbeat + TTL/2; its leases are over a maximum lease
            // later, and its late writes sealed or refused a grace after that.
            long lastGrant = Micros.plus(p.lastHeartbeat, Micros.of(p.ttl) / 2);
            grantableFrom = Micros.toInstant(Math.max(now,
                    Micros.plus(lastGrant, Micros.of(maxLease.plus(grace).plus(clockError)))));
        }
        int mine = highest + 1;
        FileChannel ch;
        try {
            ch = fs.createNew(dir.resolve(PREFIX + mine));
        } catch (FileAlreadyExistsException e) {
            Previous p = read(fs, dir.resolve(PREFIX + mine));
            throw new OwnedElsewhereException("the log '" + log + "' in " + root + " was just claimed by writer '"
                    + p.writer + "': embedded mode serves one server only");
        }
        EmbeddedOwnership o = new EmbeddedOwnership(fs, dir, mine, writer, ttl, clockError, time, ch, grantableFrom);
        o.append("writer=" + writer + " ttl=" + ttl.toMillis() + " claimed=" + now + "\n" + now + "\n");
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4001 this server ({0}) owns log {1} for its embedded lease "
                + "service (owner file {2}); grants from {3}", writer, log, mine, grantableFrom);
        return o;
    }

    /** When the embedded engine may start granting: after the previous owner's last leases are over. */
    Instant grantableFrom() {
        return grantableFrom;
    }

    /** Starts the heartbeats; each one moves {@code fence} half a TTL ahead. */
    void start(Fence f) {
        this.fence = f;
        lastBeatMicros = time.nowMicros();
        latestMicros = lastBeatMicros;
        f.grantUntil(Micros.toInstant(Micros.plus(time.nowMicros(), Micros.of(ttl) / 2)), "not confirmed yet");
        schedule();
    }

    boolean replaced() {
        return replaced;
    }

    /** Null while the last heartbeat succeeded; otherwise how many failed in a row, and the last error. */
    String heartbeatProblem() {
        int n = failures;
        return n == 0 ? null : "the last " + n + " heartbeat(s) to its owner file in " + dir + " failed, the last with "
                + lastFailure;
    }

    /**
     * Null unless this server's clock stepped back beyond the clock error since a heartbeat: then why its embedded lease
     * service grants nothing until the clock reads the latest time it had read.
     */
    String clockProblem() {
        return steppedBack;
    }

    /** How long ago the last heartbeat ran (successful or not); zero before the first. */
    Duration sinceLastHeartbeat() {
        long last = lastBeatMicros;
        return last == 0 ? Duration.ZERO : Duration.ofNanos(Math.max(0, time.nowMicros() - last) * 1_000L);
    }

    private void schedule() {
        if (!closed && !replaced) {
            // Elapsed time: a heartbeat for a time of the clock would not come for as long as the clock stepped back,
            // and it is the heartbeat that sees the step.
            next = time.scheduleAfter(Micros.of(ttl) / 8, this::beat);
        }
    }

    private void beat() {
        if (closed) {
            return;
        }
        lastBeatMicros = time.nowMicros();
        try {
            for (String name : fs.list(dir)) {
                if (name.startsWith(PREFIX)) {
                    int n;
                    try {
                        n = Integer.parseInt(name.substring(PREFIX.length()));
                    } catch (NumberFormatException e) {
                        continue;
                    }
                    if (n > number) {
                        replaced = true;
                        fence.grantUntil(time.now(), "another server took over this log (owner file " + n + ")");
                        LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4101 this server ({0}) no longer owns its log: "
                                + "owner file {1} replaced {2}; the embedded lease service grants nothing any more",
                                writer, n, number);
                        return;
                    }
                }
            }
            long now = time.nowMicros();
            append(now + "\n");
            failures = 0;
            if (steppedBack(now)) {
                return;
            }
            fence.grantUntil(Micros.toInstant(Micros.plus(now, Micros.of(ttl) / 2)),
                    "this server could not confirm that it still owns its log (heartbeats failing)");
        } catch (IOException e) {
            lastFailure = e.toString();
            failures++;
            LOG.log(failures >= 3 ? System.Logger.Level.ERROR : System.Logger.Level.WARNING,
                    "LEASEHOLD-4102 heartbeat {0} of log ownership failed: {1}; the embedded lease service stops "
                            + "granting half a TTL after the last success", failures, e.toString());
        } finally {
            schedule();
        }
    }

    /**
     * Whether the clock reads more than the clock error below the latest time it read at a heartbeat: then the engine
     * grants nothing from now (logged once a step), until the clock reads that time again.
     */
    private boolean steppedBack(long now) {
        // Within the clock error a clock may move back; once it stepped beyond, it must read its latest time again.
        if (now >= latestMicros - (steppedBack == null ? clockErrorMicros : 0)) {
            latestMicros = Math.max(latestMicros, now);
            if (steppedBack != null) {
                steppedBack = null;
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4104 this server''s clock reads {0} again: its "
                        + "embedded lease service grants again", Micros.toInstant(latestMicros));
            }
            return false;
        }
        String why = "this server's clock stepped back: it reads " + Micros.toInstant(now) + ", "
                + Duration.ofNanos((latestMicros - now) * 1_000L) + " behind the " + Micros.toInstant(latestMicros)
                + " it read at an earlier heartbeat (more than MaxClockErrorMillis); its embedded lease service grants "
                + "nothing until the clock reads that time again, and another server may take the log over meanwhile. "
                + "Correct this machine's clock (NTP)";
        fence.grantUntil(Micros.toInstant(now), why);
        if (steppedBack == null) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4103 " + why);
        }
        steppedBack = why;
        return true;
    }

    private synchronized void append(String text) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        long pos = file.size();
        while (b.hasRemaining()) {
            pos += file.write(b, pos);
        }
        file.force(false);
    }

    private record Previous(String writer, Duration ttl, long lastHeartbeat) {
    }

    /**
     * The owner's header (the first line) and its last heartbeat (the last complete line). The file grows by a line
     * each heartbeat for as long as its owner lives, so its head and its tail are read, never the whole: a month of
     * heartbeats is tens of megabytes, and reading only a prefix would take a live owner's first heartbeats for its
     * last.
     */
    private static Previous read(NfsSafeFiles fs, Path f) throws IOException {
        String head;
        String tail;
        try (FileChannel ch = fs.openForRead(f)) {
            long size = ch.size();
            head = readText(ch, 0, (int) Math.min(size, HEAD_BYTES));
            long tailFrom = Math.max(0, size - TAIL_BYTES);
            tail = readText(ch, tailFrom, (int) (size - tailFrom));
        }
        String writer = "?";
        Duration ttl = Duration.ofSeconds(8);
        int firstEnd = head.indexOf('\n');
        String header = firstEnd < 0 ? "" : head.substring(0, firstEnd).trim();
        for (String part : header.split(" ")) {
            if (part.startsWith("writer=")) {
                writer = part.substring(7);
            } else if (part.startsWith("ttl=")) {
                try {
                    ttl = Duration.ofMillis(Long.parseLong(part.substring(4)));
                } catch (NumberFormatException e) {
                    // Keeps the default TTL: the conservative choice is a long one, but 8 s is the default.
                }
            }
        }
        long last = Long.MIN_VALUE;
        List<String> lines = List.of(tail.split("\n", -1));
        // The first element is the header (a whole file) or a line cut by the tail's start; the last follows the final
        // newline: empty, or a torn line being written. Neither is a heartbeat.
        for (int i = 1; i < lines.size() - 1; i++) {
            try {
                last = Math.max(last, Long.parseLong(lines.get(i).trim()));
            } catch (NumberFormatException e) {
                // A damaged line: skipped.
            }
        }
        if (last == Long.MIN_VALUE) {
            // A claim torn before its first heartbeat: treat it as fresh from the file's own header if possible.
            last = 0;
        }
        return new Previous(writer, ttl, last);
    }

    private static String readText(FileChannel ch, long from, int length) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(length);
        while (b.hasRemaining() && ch.read(b, from + b.position()) > 0) {
            // Reads until full or at the end.
        }
        return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        closed = true;
        TimeSource.Timer t = next;
        if (t != null) {
            t.cancel();
        }
        try {
            file.close();
        } catch (IOException e) {
            // The heartbeats were forced; a failed close loses nothing.
        }
    }
}
