package org.leasehold.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.zip.CRC32;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.ClockOffset;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

/**
 * The processes of the fault campaign other than the lease server, each on a clock the controller can offset (a line
 * {@code OFFSET <micros>} on standard input) and each recording what it was told in a journal whose lines are forced
 * before they count:
 * <ul>
 *   <li>{@code writer <root> <locks> <log> <server> <journal> <tag> <seed>}: takes exclusive leases on one or two of
 *       the campaign's names from the lease server (remote client), makes them ready after an expired predecessor and
 *       waits for a writable time as the resource adapter does ({@link WriteRule}), appends one to three frames under
 *       them and releases them with the highest timestamp written as watermark. Before each transaction it measures
 *       the lease server's clock and refuses to work while the offset, plus the measurement's error, is beyond the
 *       log's clock-error bound (the adapter's rule). An offset it is told takes effect between transactions. A line
 *       {@code TEAR} makes its next write stop half way through a frame, print {@code TORN} and wait to be killed;
 *   <li>{@code sealer <root> <locks> <log> <journal> <tag> <seed>}: seals the due buckets of the last seconds again
 *       and again;
 *   <li>{@code compactor <root> <locks> <log> <journal> <tag> <seed>}: compacts the log every few seconds;
 *   <li>{@code reader <root> <locks> <log> <journal> <tag> <seed>}: reads ranges that should be sealed, all messages
 *       or those of one name, and records the count and a checksum of what it read, unless a message was tentative.
 * </ul>
 * Journal lines (times in microseconds): {@code GRANT holder name generation floor deadline writableFrom grantedAt
 * predecessorExpired}, {@code SENT id}, {@code ACK id timestamp}, {@code REFUSED id reason}, {@code UNKNOWN id},
 * {@code RELEASED name generation at}, {@code SAW name generation from to count}, {@code READ from to name|* count
 * crc}, {@code CLOCK offset error}, {@code UNSEALED bucket file offset} (a read met an unsealed bucket's incomplete
 * tail), {@code PROBLEM ...}, and for information {@code NOTE ...}.
 */
public final class CampaignChild {
    /** The log's geometry and the lease server's: 200 ms buckets, 500 ms grace, 250 ms clock error, 2 s leases. */
    public static final Duration WIDTH = Duration.ofMillis(200);
    public static final Duration GRACE = Duration.ofMillis(500);
    public static final Duration ERROR = Duration.ofMillis(250);
    public static final Duration MAX_LEASE = Duration.ofSeconds(2);
    public static final List<String> NAMES = List.of("acct/0", "acct/1", "acct/2", "acct/3", "acct/4");

    private CampaignChild() {
    }

    /** The store configuration every campaign process uses (the compactor's horizon and span included). */
    public static BagStoreConfig.Builder config(Path root, Path locks) {
        return BagStoreConfig.builder(root).localLockDir(locks).bucketWidth(WIDTH).grace(GRACE).maxClockError(ERROR)
                .maxLeaseDuration(MAX_LEASE).metronome(false).compactionHorizon(Duration.ofSeconds(4))
                .segmentSpan(Duration.ofSeconds(10));
    }

    public static void main(String[] a) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        OffsetClock clock = new OffsetClock(new SystemTimeSource("base-clock").clock());
        Control control = new Control(clock, a[0].equals("writer"));
        Thread stdin = new Thread(() -> control.readCommands(out), "campaign-control");
        stdin.setDaemon(true);
        stdin.start();
        try (SystemTimeSource time = new SystemTimeSource(clock, "campaign-timer")) {
            switch (a[0]) {
                case "writer" -> new Writer(a, time, control, out).run();
                case "sealer" -> sealer(a, time);
                case "compactor" -> compactor(a, time);
                case "reader" -> reader(a, time);
                default -> throw new IllegalArgumentException("unknown mode " + a[0]);
            }
        }
    }

    /** A clock that runs {@code offset} ahead of its base, the offset set at any time by the controller. */
    static final class OffsetClock extends Clock {
        private final Clock base;
        private volatile long offsetMicros;

        OffsetClock(Clock base) {
            this.base = base;
        }

        void offset(long micros) {
            offsetMicros = micros;
        }

        long offset() {
            return offsetMicros;
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            throw new UnsupportedOperationException("the campaign's clocks are in UTC");
        }

        @Override
        public Instant instant() {
            return base.instant().plus(offsetMicros, java.time.temporal.ChronoUnit.MICROS);
        }
    }

    /** What the controller says on standard input; the process exits when it closes. */
    static final class Control {
        private final OffsetClock clock;
        private final boolean deferOffsets;
        private volatile Long pendingOffset;
        final AtomicBoolean tear = new AtomicBoolean();

        Control(OffsetClock clock, boolean deferOffsets) {
            this.clock = clock;
            this.deferOffsets = deferOffsets;
        }

        void readCommands(PrintStream out) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String l;
                while ((l = in.readLine()) != null) {
                    if (l.startsWith("OFFSET ")) {
                        long micros = Long.parseLong(l.substring(7).trim());
                        if (deferOffsets) {
                            pendingOffset = micros;
                        } else {
                            clock.offset(micros);
                        }
                        out.println("OFFSET-SET " + micros);
                    } else if (l.equals("TEAR")) {
                        tear.set(true);
                    }
                }
            } catch (IOException e) {
                // The controller is gone: stop below.
            }
            // The controller closed our standard input (it ended, or died): stop at once.
            Runtime.getRuntime().halt(0);
        }

        /** Applies an offset told since the last call (writers: between transactions); true if there was one. */
        boolean applyPending() {
            Long p = pendingOffset;
            if (p == null) {
                return false;
            }
            pendingOffset = null;
            clock.offset(p);
            return true;
        }
    }

    /** An append-only journal; every line is forced before {@link #line} returns. */
    static final class Journal implements AutoCloseable {
        private final FileChannel ch;

        Journal(Path file) throws IOException {
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        }

        synchronized void line(String s) throws IOException {
            ByteBuffer b = ByteBuffer.wrap((s + "\n").getBytes(StandardCharsets.UTF_8));
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(false);
        }

        @Override
        public void close() throws IOException {
            ch.close();
        }
    }

    /** One writer process. */
    private static final class Writer {
        private final String log;
        private final String server;
        private final Path journalFile;
        private final String tag;
        private final Random rnd;
        private final SystemTimeSource time;
        private final Control control;
        private final PrintStream out;
        private final Path root;
        private final Path locks;
        private boolean measureDue = true;
        private String lastNote;

        Writer(String[] a, SystemTimeSource time, Control control, PrintStream out) {
            this.root = Paths.get(a[1]);
            this.locks = Paths.get(a[2]);
            this.log = a[3];
            this.server = a[4];
            this.journalFile = Paths.get(a[5]);
            this.tag = a[6];
            this.rnd = new Random(Long.parseLong(a[7]));
            this.time = time;
            this.control = control;
            this.out = out;
        }

        void run() throws Exception {
            StoreHooks hooks = new StoreHooks() {
                @Override
                public int tearAfter(String l, Path file, int bytes) {
                    // Half the batch plus a few bytes, so that a frame is cut.
                    return control.tear.get() ? Math.max(1, Math.min(bytes - 1, bytes / 2 + 7)) : -1;
                }

                @Override
                public void torn(String l, Path file) {
                    out.println("TORN " + file.getFileName());
                    try {
                        new CountDownLatch(1).await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            };
            RemoteClientConfig cc = RemoteClientConfig.builder(server).callTimeout(Duration.ofSeconds(2))
                    .clockSyncInterval(Duration.ofSeconds(1)).process(tag).build();
            try (Journal j = new Journal(journalFile);
                    FileBagStore store = FileBagStore.open(config(root, locks).build(), time, hooks);
                    RemoteLeaseService leases = new RemoteLeaseService(cc, time)) {
                out.println("READY " + store.writerId());
                HolderId holder = new HolderId(tag, "t");
                long seq = 0;
                while (true) {
                    // A new offset: measure the server's clock again before the next lease.
                    measureDue |= control.applyPending();
                    if (!clockWithinBound(leases, j)) {
                        Thread.sleep(200);
                        continue;
                    }
                    List<String> names = new ArrayList<>();
                    names.add(NAMES.get(rnd.nextInt(NAMES.size())));
                    if (rnd.nextInt(4) == 0) {
                        String second = NAMES.get(rnd.nextInt(NAMES.size()));
                        if (!names.contains(second)) {
                            names.add(second);
                        }
                    }
                    Lease lease;
                    try {
                        lease = leases.acquire(LeaseRequest.builder(holder, names).leaseFor(MAX_LEASE)
                                .waitFor(Duration.ofSeconds(1)).build());
                    } catch (LeaseException e) {
                        note(j, "acquire", e);
                        Thread.sleep(20 + rnd.nextInt(80));
                        continue;
                    }
                    lastNote = null;
                    boolean expired = WriteRule.predecessorExpired(lease);
                    for (LeaseGrant g : lease.grants()) {
                        j.line("GRANT " + tag + " " + g.name() + " " + g.generation() + " " + Micros.of(g.floor()) + " "
                                + Micros.of(lease.deadline()) + " " + Micros.of(g.writableFrom()) + " "
                                + Micros.of(lease.grantedAt()) + " " + (expired ? 1 : 0));
                    }
                    Instant watermark = null;
                    try {
                        if (WriteRule.readyForSuccessor(store, log, lease, time)) {
                            saw(store, lease, j);
                        }
                        WriteRule.awaitWritable(List.of(lease), ERROR, time);
                        int frames = 1 + rnd.nextInt(3);
                        for (int f = 0; f < frames; f++) {
                            String id = tag + "." + seq++;
                            j.line("SENT " + id);
                            try {
                                Appended ack = store.append(AppendRequest.of(log, LeaseStamp.of(lease),
                                        id.getBytes(StandardCharsets.UTF_8)));
                                j.line("ACK " + id + " " + Micros.of(ack.timestamp()));
                                watermark = watermark == null || ack.timestamp().isAfter(watermark) ? ack.timestamp()
                                        : watermark;
                            } catch (WriteOutcomeUnknownException e) {
                                j.line("UNKNOWN " + id);
                                break;
                            } catch (BagStoreException e) {
                                j.line("REFUSED " + id + " " + e.getClass().getSimpleName());
                                break;
                            }
                        }
                    } catch (BagStoreException | LeaseException e) {
                        j.line("NOTE not ready: " + e.getClass().getSimpleName());
                    }
                    try {
                        Instant at = leases.release(lease, watermark, null);
                        for (LeaseGrant g : lease.grants()) {
                            j.line("RELEASED " + g.name() + " " + g.generation() + " " + Micros.of(at));
                        }
                    } catch (LeaseException e) {
                        // Expired: it ended at its deadline. Otherwise (no answer) the release may or may not have
                        // reached the server.
                        String how = e instanceof LeaseExpiredException ? "expired" : "unknown";
                        for (LeaseGrant g : lease.grants()) {
                            j.line("UNRELEASED " + g.name() + " " + g.generation() + " " + how);
                        }
                    }
                    Thread.sleep(rnd.nextInt(40));
                }
            }
        }

        /** Journals a failure unless the last one was of the same kind. */
        private void note(Journal j, String what, Exception e) throws IOException {
            String kind = what + " " + e.getClass().getSimpleName();
            if (!kind.equals(lastNote)) {
                j.line("NOTE " + kind + ": " + String.valueOf(e.getMessage()).replace('\n', ' '));
                lastNote = kind;
            }
        }

        /**
         * The adapter's clock rule: no lease while the server's clock is beyond the bound. The client measures it every
         * second; after an offset change, or when the last measurement is older than a second, it is measured now, and
         * until that succeeds nothing is taken.
         */
        private boolean clockWithinBound(RemoteLeaseService leases, Journal j) throws IOException {
            ClockOffset o = leases.clockOffset(server);
            if (measureDue || o.measuredAt() == null || o.measuredAt().isBefore(time.now().minusSeconds(1))) {
                try {
                    o = leases.measureClockOffset(server);
                    measureDue = false;
                } catch (LeaseException e) {
                    // Unreachable: after an offset change, wait for a measurement; otherwise the acquisition says so.
                    note(j, "measure", e);
                    return !measureDue;
                }
            }
            if (o.offset().abs().plus(o.errorBound()).compareTo(ERROR) > 0) {
                j.line("CLOCK " + Micros.of(o.offset()) + " " + Micros.of(o.errorBound()));
                return false;
            }
            return true;
        }

        /** After sealing for an expired predecessor: how many messages of each name it sees below its floor. */
        private void saw(FileBagStore store, Lease lease, Journal j) throws BagStoreException, IOException {
            for (LeaseGrant g : lease.grants()) {
                Instant to = g.floor();
                Instant from = to.minus(MAX_LEASE).minus(GRACE).minus(ERROR);
                int count = 0;
                try (MessageStream s = store.read(ReadRequest.all(log).between(from, to).underAnyOf(Set.of(g.name())))) {
                    while (s.next() != null) {
                        count++;
                    }
                }
                j.line("SAW " + g.name() + " " + g.generation() + " " + Micros.of(from) + " " + Micros.of(to) + " "
                        + count);
            }
        }
    }

    private static void sealer(String[] a, SystemTimeSource time) throws Exception {
        Random rnd = new Random(Long.parseLong(a[6]));
        String log = a[3];
        try (Journal j = new Journal(Paths.get(a[4]));
                FileBagStore store = FileBagStore.open(config(Paths.get(a[1]), Paths.get(a[2])).build(), time)) {
            System.out.println("READY " + store.writerId());
            Duration due = WIDTH.plus(GRACE);
            while (true) {
                Instant now = time.now();
                try {
                    store.sealThrough(log, now.minusSeconds(10), now.minus(due));
                } catch (BucketNotDueException e) {
                    // The clock moved between reading it and sealing; the next round seals it.
                } catch (BagStoreException e) {
                    j.line("NOTE seal " + e.getClass().getSimpleName());
                }
                Thread.sleep(100 + rnd.nextInt(300));
            }
        }
    }

    private static void compactor(String[] a, SystemTimeSource time) throws Exception {
        Random rnd = new Random(Long.parseLong(a[6]));
        String log = a[3];
        try (Journal j = new Journal(Paths.get(a[4]));
                FileBagStore store = FileBagStore.open(config(Paths.get(a[1]), Paths.get(a[2])).build(), time)) {
            System.out.println("READY " + store.writerId());
            while (true) {
                Thread.sleep(2000 + rnd.nextInt(3000));
                try {
                    CompactionReport r = store.compact(log);
                    j.line("NOTE compacted published=" + r.published().size() + " lost=" + r.lost().size()
                            + " buckets=" + r.buckets() + " frames=" + r.frames());
                } catch (BagStoreException e) {
                    j.line("NOTE compact " + e.getClass().getSimpleName());
                }
            }
        }
    }

    private static void reader(String[] a, SystemTimeSource time) throws Exception {
        Random rnd = new Random(Long.parseLong(a[6]));
        String log = a[3];
        long settled = WIDTH.plus(GRACE).plus(ERROR).toMillis() + 1500;
        try (Journal j = new Journal(Paths.get(a[4]));
                FileBagStore store = FileBagStore.open(config(Paths.get(a[1]), Paths.get(a[2])).build(), time)) {
            System.out.println("READY " + store.writerId());
            while (true) {
                Thread.sleep(300 + rnd.nextInt(700));
                Instant to = time.now().minusMillis(settled + rnd.nextInt(20_000));
                Instant from = to.minusMillis(200 + rnd.nextInt(rnd.nextInt(5) == 0 ? 60_000 : 5_000));
                String name = rnd.nextBoolean() ? "*" : NAMES.get(rnd.nextInt(NAMES.size()));
                ReadRequest r = ReadRequest.all(log).between(from, to);
                if (!name.equals("*")) {
                    r = r.underAnyOf(Set.of(name));
                }
                CRC32 crc = new CRC32();
                int count = 0;
                boolean tentative = false;
                try (MessageStream s = store.read(r)) {
                    Message m;
                    while ((m = s.next()) != null) {
                        tentative |= m.tentative();
                        count++;
                        crc.update(ByteBuffer.allocate(8).putLong(Micros.of(m.timestamp())).array());
                        crc.update(m.payload());
                    }
                    for (ReadProblem p : s.problems()) {
                        if (p.kind() == ReadProblem.Kind.INCOMPLETE_TAIL) {
                            // A bucket not sealed yet (its sealing held up by the faults: a full file system, paused
                            // sealers) whose file ends in a frame not complete: not delivered, as the store says it
                            // must not be; never acknowledged (the checker finds every acknowledged message stored).
                            j.line("UNSEALED " + p.bucket() + " " + p.file() + " " + p.offset());
                        } else if (p.kind() != ReadProblem.Kind.TORN_TAIL) {
                            j.line("PROBLEM " + p.kind() + " " + p.bucket() + " " + p.file() + " " + p.offset() + " "
                                    + p.detail().replace('\n', ' '));
                        }
                    }
                } catch (org.leasehold.bag.UnknownLogException e) {
                    continue;
                } catch (BagStoreException e) {
                    j.line("PROBLEM " + e.getClass().getSimpleName() + " " + e.getMessage().replace('\n', ' '));
                    continue;
                }
                if (!tentative) {
                    j.line("READ " + Micros.of(from) + " " + Micros.of(to) + " " + name + " " + count + " "
                            + Long.toHexString(crc.getValue()));
                }
            }
        }
    }
}
