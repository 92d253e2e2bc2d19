package org.leasehold.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.CompactionReport;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.store.ViewSnapshotReport;
import org.leasehold.time.ManualTimeSource;

/**
 * The day-scale benchmark of the bag store (issue 19): a day of one log (86,400 one-second buckets, 8 writers, about a
 * million messages of 100 bytes, each under one of 100 names {@code account/<k>}, every bucket sealed), written on a
 * manual clock and cached in {@code <dir>/day-cache} so that reruns do not rebuild it. Each run makes a hard-linked
 * copy of the cached day, compacts and retires it there (the cache stays uncompacted), and measures, each beside its
 * baseline in the same run:
 * <ul>
 *   <li>directory entries under the log before and after compaction and retention;
 *   <li>a read of one name over the day, compacted (the copy) against uncompacted (the cache), in alternating pairs;
 *   <li>a view (balance per name) on a cold start (a store opened, the view read, the store closed) against a full
 *       fold of the raw log;
 *   <li>compaction against a raw sequential copy (read, write, force) of the same data files.
 * </ul>
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.DayBench [--hours 24] [--writers 8]
 *     [--messages 1000000] [--pairs 20] [--dir D]</pre>
 */
public final class DayBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final String LOG = "day";
    private static final int NAMES = 100;
    private static final String NAME = "account/7";

    private DayBench() {
    }

    /** Balance per name: the sum of the first 8 bytes of each message's payload, per lease name. */
    static final class Balances implements ViewDefinition<long[]> {
        @Override
        public String name() {
            return "balances";
        }

        @Override
        public String version() {
            return "1";
        }

        @Override
        public long[] initial() {
            return new long[NAMES];
        }

        @Override
        public long[] apply(long[] state, Message m) {
            String n = m.leases().get(0).name();
            int k = Integer.parseInt(n.substring(n.indexOf('/') + 1));
            state[k] += m.payloadBuffer().getLong(m.payloadBuffer().position());
            return state;
        }

        @Override
        public byte[] encode(long[] state) {
            ByteBuffer b = ByteBuffer.allocate(8 * state.length);
            for (long v : state) {
                b.putLong(v);
            }
            return b.array();
        }

        @Override
        public long[] decode(byte[] bytes) {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            long[] s = new long[bytes.length / 8];
            for (int i = 0; i < s.length; i++) {
                s[i] = b.getLong();
            }
            return s;
        }
    }

    private static BagStoreConfig.Builder config(Path root, Path locks) {
        return BagStoreConfig.builder(root).localLockDir(locks).metronome(false).flushPolicy(FlushPolicy.never());
    }

    /** Writes the day into {@code root} with {@code writers} stores on one manual clock, then seals every bucket. */
    private static void build(Path root, Path locks, int hours, int writers, long messages) throws Exception {
        ManualTimeSource time = new ManualTimeSource(T0);
        List<FileBagStore> stores = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            stores.add(FileBagStore.open(config(root, locks).writerId("w" + w).build(), time));
        }
        long seconds = hours * 3600L;
        byte[] payload = new byte[100];
        long i = 0;
        long t0 = System.nanoTime();
        List<CompletableFuture<Appended>> pending = new ArrayList<>();
        for (long s = 0; s < seconds; s++) {
            long upTo = (s + 1) * messages / seconds;
            long inSecond = upTo - i;
            for (long j = 0; i < upTo; i++, j++) {
                time.set(T0.plusSeconds(s).plusNanos(j * 1_000_000_000L / inSecond));
                int k = (int) (i * 37 % NAMES);
                LeaseStamp l = new LeaseStamp("account/" + k, 1, Instant.EPOCH, T0.plusSeconds(seconds + 86_400),
                        Instant.EPOCH, null, null);
                ByteBuffer.wrap(payload).putLong(i % 1000 - 500);
                pending.add(stores.get((int) (i % writers)).appendAsync(AppendRequest.of(LOG, List.of(l),
                        payload.clone())));
            }
            if (!pending.isEmpty()) {
                for (CompletableFuture<Appended> f : pending) {
                    f.get();
                }
                pending.clear();
            }
            if (s % 3600 == 3599) {
                System.out.printf(Locale.ROOT, "built %d h of %d (%d messages) in %.0f s%n", (s + 1) / 3600, hours, i,
                        (System.nanoTime() - t0) / 1e9);
            }
        }
        time.set(T0.plusSeconds(seconds + 10));
        Thread[] sealers = new Thread[2];
        Exception[] failed = new Exception[1];
        for (int k = 0; k < sealers.length; k++) {
            FileBagStore st = stores.get(k % stores.size());
            Instant a = T0.plusSeconds(seconds * k / sealers.length);
            Instant b = T0.plusSeconds(seconds * (k + 1) / sealers.length);
            sealers[k] = new Thread(() -> {
                try {
                    st.sealThrough(LOG, a, b);
                } catch (BagStoreException e) {
                    failed[0] = e;
                }
            });
            sealers[k].start();
        }
        for (Thread t : sealers) {
            t.join();
        }
        if (failed[0] != null) {
            throw failed[0];
        }
        for (FileBagStore s : stores) {
            s.close();
        }
        System.out.printf(Locale.ROOT, "built and sealed the day in %.0f s%n", (System.nanoTime() - t0) / 1e9);
    }

    /** Directory entries under {@code dir} (files and directories, {@code dir} itself not counted). */
    private static long entries(Path dir) throws IOException {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.count() - 1;
        }
    }

    /** A copy of the tree {@code from} at {@code to} made of hard links, with the directories' permissions. */
    private static void linkCopy(Path from, Path to) throws IOException {
        List<Path[]> dirs = new ArrayList<>();
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) throws IOException {
                Files.createDirectory(to.resolve(from.relativize(d).toString()));
                dirs.add(new Path[] {d, to.resolve(from.relativize(d).toString())});
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                Files.createLink(to.resolve(from.relativize(f).toString()), f);
                return FileVisitResult.CONTINUE;
            }
        });
        for (Path[] d : dirs) {
            Files.setPosixFilePermissions(d[1], Files.getPosixFilePermissions(d[0]));
        }
    }

    /** The data files of {@code log}'s buckets, in bucket order (the layout sorts by name). */
    private static List<Path> dataFiles(Path log) throws IOException {
        try (Stream<Path> s = Files.walk(log)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".data")).sorted().toList();
        }
    }

    /** Reads every file into one output file sequentially, forces it; returns the bytes copied. */
    private static long rawCopy(List<Path> files, Path out) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect(1 << 20);
        long total = 0;
        try (FileChannel o = FileChannel.open(out, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (Path f : files) {
                try (FileChannel in = FileChannel.open(f, StandardOpenOption.READ)) {
                    while (in.read(buf) >= 0) {
                        if (!buf.hasRemaining()) {
                            buf.flip();
                            total += writeAll(o, buf);
                        }
                    }
                }
            }
            buf.flip();
            total += writeAll(o, buf);
            o.force(true);
        }
        Files.delete(out);
        return total;
    }

    private static int writeAll(FileChannel o, ByteBuffer b) throws IOException {
        int n = b.remaining();
        while (b.hasRemaining()) {
            o.write(b);
        }
        b.clear();
        return n;
    }

    /** The messages of {@link #NAME} over the whole log, and a digest of their timestamps and payloads. */
    private static long[] readName(FileBagStore store) throws BagStoreException {
        long n = 0;
        long digest = 0;
        try (MessageStream s = store.read(ReadRequest.all(LOG).sealedOnly().underAnyOf(Set.of(NAME)))) {
            Message m;
            while ((m = s.next()) != null) {
                n++;
                digest = digest * 31 + m.timestamp().toEpochMilli() * 7 + m.payloadBuffer().getLong(
                        m.payloadBuffer().position());
            }
        }
        return new long[] {n, digest};
    }

    private static long[] fullFold(FileBagStore store) throws BagStoreException {
        Balances v = new Balances();
        long[] state = v.initial();
        try (MessageStream s = store.read(ReadRequest.all(LOG).sealedOnly())) {
            Message m;
            while ((m = s.next()) != null) {
                state = v.apply(state, m);
            }
        }
        return state;
    }

    private static double median(double[] a) {
        double[] c = a.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    private static String spread(double[] a) {
        double[] c = a.clone();
        Arrays.sort(c);
        return String.format(Locale.ROOT, "%.2f (p10 %.2f, p90 %.2f)", c[c.length / 2], c[c.length / 10],
                c[c.length * 9 / 10]);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = BenchSupport.args(args, Map.of("hours", "24", "writers", "8", "messages", "1000000",
                "pairs", "20", "dir", BenchSupport.defaultDir()));
        int hours = BenchSupport.positive("hours", a.get("hours"));
        int writers = BenchSupport.positive("writers", a.get("writers"));
        long messages = BenchSupport.positive("messages", a.get("messages"));
        int pairs = BenchSupport.positive("pairs", a.get("pairs"));
        Path dir = BenchSupport.dir(a.get("dir"));
        Path cache = dir.resolve("day-cache");
        Path cacheRoot = cache.resolve("root");
        Path locks = dir.resolve("day-locks");
        String key = "hours " + hours + " writers " + writers + " messages " + messages + "\n";
        Path done = cache.resolve("built");
        if (!Files.exists(done) || !Files.readString(done).equals(key)) {
            BenchSupport.deleteTree(cache);
            Files.createDirectories(cacheRoot);
            build(cacheRoot, locks, hours, writers, messages);
            Files.writeString(done, key, StandardCharsets.US_ASCII);
        } else {
            System.out.println("using the cached day in " + cache);
        }
        Path run = dir.resolve("day-run");
        BenchSupport.deleteTree(run);
        Files.createDirectories(run);
        Path root = run.resolve("root");
        long c0 = System.nanoTime();
        linkCopy(cacheRoot, root);
        System.out.printf(Locale.ROOT, "hard-linked copy of the day in %.0f s%n", (System.nanoTime() - c0) / 1e9);
        long before = entries(root.resolve(LOG));
        // The copy's names of the same files (hard links: the same data), read by the raw copy.
        List<Path> files = dataFiles(root.resolve(LOG));

        // Compaction beside a raw sequential copy of the same data files, hour by hour in alternating order (the clock
        // moved so that each compaction covers one more hour), the ratio taken per hour.
        FileBagStore compacted = null;
        ManualTimeSource time = new ManualTimeSource(T0);
        rawCopy(files, run.resolve("raw-copy"));
        double[] copySeconds = new double[hours];
        double[] compactSeconds = new double[hours];
        double[] ratio = new double[hours];
        long copied = 0;
        long written = 0;
        long frames = 0;
        int segments = 0;
        for (int h = 0; h < hours; h++) {
            String hour = String.format(Locale.ROOT, "%02d", h);
            List<Path> inHour = files.stream().filter(f -> f.getParent().getParent().getParent().getFileName()
                    .toString().equals(hour)).toList();
            time.set(T0.plusSeconds((h + 1) * 3600L + 3600 + 1));
            if (compacted == null) {
                // Compaction alone: with retention on, each hour's compaction would also remove the buckets of the
                // hour before (the clock moves an hour each time, past the delay). Retention is measured on its own,
                // after the day is compacted.
                compacted = FileBagStore.open(config(root, locks).build(), time);
            }
            for (int k = 0; k < 2; k++) {
                long t = System.nanoTime();
                if ((h + k) % 2 == 0) {
                    copied += rawCopy(inHour, run.resolve("raw-copy"));
                    copySeconds[h] = (System.nanoTime() - t) / 1e9;
                } else {
                    CompactionReport r = compacted.compact(LOG);
                    compactSeconds[h] = (System.nanoTime() - t) / 1e9;
                    written += r.bytes();
                    frames += r.frames();
                    segments += r.published().size();
                }
            }
            ratio[h] = copySeconds[h] / compactSeconds[h];
        }
        double copyTotal = Arrays.stream(copySeconds).sum();
        double compactTotal = Arrays.stream(compactSeconds).sum();
        System.out.printf(Locale.ROOT, "day: %d data files, %d bytes; compaction: %d segments, %d frames, %d bytes "
                + "written in %.1f s (%s of the data files); raw copy (read, write, force) %.1f s (%s); compaction / "
                + "copy throughput per hour %s (overall %s)%n", files.size(), copied, segments, frames, written,
                compactTotal, BenchSupport.mb(copied / compactTotal), copyTotal, BenchSupport.mb(copied / copyTotal),
                spread(ratio), BenchSupport.pct(copyTotal / compactTotal));
        // Retention on its own: a store that removes compacted buckets marks the segments it finds published (its
        // first compaction, with nothing left to compact), and removes their buckets once the delay has passed.
        compacted.close();
        compacted = FileBagStore.open(config(root, locks).removeCompactedBuckets(true)
                .retentionDelay(Duration.ofMinutes(10)).build(), time);
        CompactionReport marked = compacted.compact(LOG);
        if (!marked.published().isEmpty() || marked.bucketsRemoved() != 0) {
            throw new IllegalStateException("the first compaction with retention on should publish nothing (the day "
                    + "is compacted) and remove nothing (it only marks the segments): " + marked);
        }
        time.advance(Duration.ofMinutes(11));
        long e0 = System.nanoTime();
        CompactionReport retired = compacted.compact(LOG);
        double retireSeconds = (System.nanoTime() - e0) / 1e9;
        long after = entries(root.resolve(LOG));
        System.out.printf(Locale.ROOT, "retention: %d buckets removed in %.1f s; entries under the log: %d before, %d "
                + "after (%.0f× fewer)%n", retired.bucketsRemoved(), retireSeconds, before, after,
                (double) before / after);
        try (Stream<Path> s = Files.walk(root.resolve(LOG))) {
            s.filter(p -> !p.startsWith(root.resolve(LOG).resolve("segments"))).limit(20).forEach(p -> System.out.println(
                    "  left: " + root.resolve(LOG).relativize(p)));
        }

        // A read of one name over the day: compacted (the copy) against uncompacted (the cache), alternating.
        FileBagStore raw = FileBagStore.open(config(cacheRoot, locks).build(), time);
        long[] expected = readName(raw);
        if (!Arrays.equals(readName(compacted), expected)) {
            throw new IllegalStateException("the compacted read differs from the uncompacted one");
        }
        // Warm-up: enough reads of the compacted copy (10,000 messages each) for the read path to be compiled, as it is
        // in a process that reads all day; the uncompacted read warms the shared code as well.
        for (int i = 0; i < 30; i++) {
            readName(compacted);
        }
        readName(raw);
        double[] fromBuckets = new double[pairs];
        double[] fromSegments = new double[pairs];
        double[] readRatio = new double[pairs];
        for (int i = 0; i < pairs; i++) {
            for (int k = 0; k < 2; k++) {
                boolean seg = (i + k) % 2 == 0;
                long t = System.nanoTime();
                readName(seg ? compacted : raw);
                double ms = (System.nanoTime() - t) / 1e6;
                if (seg) {
                    fromSegments[i] = ms;
                } else {
                    fromBuckets[i] = ms;
                }
            }
            readRatio[i] = fromBuckets[i] / fromSegments[i];
        }
        double goal = 20 + expected[0] / 1000.0;
        System.out.printf(Locale.ROOT, "read of one name (%d messages), %d pairs: buckets %s ms; segments %s ms "
                + "(goal %.1f ms); ratio per pair %s×%n", expected[0], pairs, spread(fromBuckets), spread(fromSegments),
                goal, spread(readRatio));

        // A view on a cold start against a full fold of the raw log.
        Balances view = new Balances();
        ViewSnapshotReport built = compacted.buildView(LOG, view, time.now());
        System.out.printf(Locale.ROOT, "view snapshot %s: %s, %d messages folded%n", built.file(), built.outcome(),
                built.messages());
        long[] folded = fullFold(raw);
        int views = Math.max(5, pairs / 2);
        double[] cold = new double[views];
        double[] fold = new double[views];
        for (int i = 0; i < views; i++) {
            long t = System.nanoTime();
            ViewState<long[]> st;
            try (FileBagStore s = FileBagStore.open(config(root, locks).build(), time)) {
                st = s.view(LOG, view, false);
            }
            cold[i] = (System.nanoTime() - t) / 1e6;
            if (!Arrays.equals(st.state(), folded)) {
                throw new IllegalStateException("the view differs from the full fold");
            }
            t = System.nanoTime();
            fullFold(raw);
            fold[i] = (System.nanoTime() - t) / 1e6;
        }
        System.out.printf(Locale.ROOT, "view on a cold start (store opened, view read, store closed), %d runs: %s ms "
                + "(goal 100 ms); full fold of the raw log: %s ms (%.0f×)%n", views, spread(cold), spread(fold),
                median(fold) / median(cold));
        System.out.println(BenchSupport.load());
        raw.close();
        compacted.close();
    }
}
