package org.leasehold.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.CompactionReport;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.FlushPolicy;
import org.leasehold.time.ManualTimeSource;

/**
 * A read of one lease name over a log's whole history, from the bucket directories and from segments, in one run.
 * The same log (one writer, 4 messages a second, each under one of 100 names {@code account/<k>}, 1 s buckets, every
 * bucket sealed) is written into two roots; the second is compacted (1 h segments). Then the two reads of
 * {@code underAnyOf("account/7")} alternate, pair by pair (the order flipping every pair), each timed; the ratio is
 * taken per pair. Page cache warm. Files go to {@code benchmarks/target/bench-data} (or {@code --dir D}).
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.SegmentReadBench [--minutes 60] [--pairs 30]
 *     [--warmup 5] [--dir D]</pre>
 */
public final class SegmentReadBench {
    private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
    private static final String LOG = "accounts";

    private SegmentReadBench() {
    }

    private static long read(FileBagStore store) throws BagStoreException {
        long n = 0;
        try (MessageStream s = store.read(ReadRequest.all(LOG).sealedOnly().underAnyOf(Set.of("account/7")))) {
            Message m;
            while ((m = s.next()) != null) {
                n += m.payloadLength() > 0 ? 1 : 0;
            }
        }
        return n;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = BenchSupport.args(args, Map.of("minutes", "60", "pairs", "30", "warmup", "5", "dir",
                BenchSupport.defaultDir()));
        int minutes = BenchSupport.positive("minutes", a.get("minutes"));
        int pairs = BenchSupport.positive("pairs", a.get("pairs"));
        int warmup = Integer.parseInt(a.get("warmup"));
        Path dir = BenchSupport.dir(a.get("dir")).resolve("segments-" + System.nanoTime());
        Path buckets = dir.resolve("buckets");
        Path segments = dir.resolve("segments");
        Files.createDirectories(buckets);
        Files.createDirectories(segments);
        ManualTimeSource time = new ManualTimeSource(T0);
        List<FileBagStore> stores = new ArrayList<>();
        for (Path root : List.of(buckets, segments)) {
            stores.add(FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                    .metronome(false).flushPolicy(FlushPolicy.never()).build(), time));
        }
        int messages = minutes * 60 * 4;
        byte[] payload = new byte[100];
        for (int i = 0; i < messages; i++) {
            LeaseStamp l = new LeaseStamp("account/" + (i * 37 % 100), 1, Instant.EPOCH, T0.plusSeconds(86_400),
                    Instant.EPOCH, null, null);
            for (FileBagStore s : stores) {
                s.append(AppendRequest.of(LOG, List.of(l), payload));
            }
            time.advance(Duration.ofMillis(250));
        }
        time.advance(Duration.ofSeconds(5));
        for (FileBagStore s : stores) {
            s.sealThrough(LOG, T0, time.now().minusSeconds(3));
        }
        time.set(T0.plusSeconds(minutes * 60L + 7_200));
        long c0 = System.nanoTime();
        CompactionReport r = stores.get(1).compact(LOG);
        long compactNanos = System.nanoTime() - c0;
        System.out.printf(Locale.ROOT, "log: %d messages over %d min, 1 s buckets; compaction: %d segments, %d buckets, "
                + "%d frames, %d bytes in %.0f ms%n", messages, minutes, r.published().size(), r.buckets(), r.frames(),
                r.bytes(), compactNanos / 1e6);
        long expected = read(stores.get(0));
        if (read(stores.get(1)) != expected) {
            throw new IllegalStateException("the two reads differ");
        }
        for (int i = 0; i < warmup; i++) {
            read(stores.get(0));
            read(stores.get(1));
        }
        double[] fromBuckets = new double[pairs];
        double[] fromSegments = new double[pairs];
        double[] ratio = new double[pairs];
        for (int i = 0; i < pairs; i++) {
            for (int k = 0; k < 2; k++) {
                int side = (i + k) % 2;
                long t = System.nanoTime();
                read(stores.get(side));
                double ms = (System.nanoTime() - t) / 1e6;
                if (side == 0) {
                    fromBuckets[i] = ms;
                } else {
                    fromSegments[i] = ms;
                }
            }
            ratio[i] = fromBuckets[i] / fromSegments[i];
        }
        Arrays.sort(fromBuckets);
        Arrays.sort(fromSegments);
        Arrays.sort(ratio);
        System.out.printf(Locale.ROOT, "read of one name (%d messages), %d pairs: buckets median %.1f ms (p10 %.1f, p90 "
                + "%.1f); segments median %.2f ms (p10 %.2f, p90 %.2f); ratio per pair median %.0f× (p10 %.0f×, p90 "
                + "%.0f×); %s%n", expected, pairs, fromBuckets[pairs / 2], fromBuckets[pairs / 10],
                fromBuckets[pairs * 9 / 10], fromSegments[pairs / 2], fromSegments[pairs / 10],
                fromSegments[pairs * 9 / 10], ratio[pairs / 2], ratio[pairs / 10], ratio[pairs * 9 / 10],
                BenchSupport.load());
        for (FileBagStore s : stores) {
            s.close();
        }
    }
}
