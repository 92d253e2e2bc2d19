package org.leasehold.store;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketNotDueException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.time.SystemTimeSource;

/**
 * The other JVMs of the multi-process tests, on the real clock:
 * <ul>
 *   <li>{@code hold <root> <lockDir> <writerId|->}: opens a store, prints {@code WRITER <id>} (or
 *       {@code FAILED <message>}), and keeps it open until its standard input closes;
 *   <li>{@code writer <root> <lockDir> <log> <threads> <millis> <out>}: appends from several threads, some with
 *       timestamps near their bucket's grace boundary, and writes every outcome to {@code out};
 *   <li>{@code sealer <root> <lockDir> <log> <millis>}: seals every due bucket again and again;
 *   <li>{@code crash <root> <lockDir> <log> <threads> <tearAfterBatches>}: appends and prints {@code ACK <id>} per
 *       acknowledgement; with a positive {@code tearAfterBatches} it writes only half of that batch, forces it,
 *       prints {@code TORN} and waits to be killed;
 *   <li>{@code compact <root> <lockDir> <log> <stopAt|->}: opens a store with the geometry of
 *       {@link SegmentsRandomizedTest}, prints {@code READY}, waits for a line on its standard input, compacts the log
 *       and prints {@code DONE <published> <lost> <prepared removed>} and {@code PUBLISHED <name>} per segment; it
 *       prints {@code STEP <step> <from>} at every publication step, and at the first {@code stopAt} step waits to be
 *       killed.
 *   <li>{@code retire <root> <lockDir> <log> <nowMicros> <delayMillis>}: opens a store with the geometry of
 *       {@link SegmentsRandomizedTest} and retention on, on a manual clock set to {@code nowMicros}, prints
 *       {@code READY}, waits for a line on its standard input, compacts (publishing and marking the segments), moves
 *       its clock past the retention delay, compacts again (removing the buckets' files and directories) and prints
 *       {@code DONE <published> <buckets removed>}.
 * </ul>
 * Geometry for writer and sealer: 100 ms buckets, 200 ms grace, 50 ms maximum clock error.
 */
public final class StoreChild {
    static final Duration WIDTH = Duration.ofMillis(100);
    static final Duration GRACE = Duration.ofMillis(200);
    static final Duration ERROR = Duration.ofMillis(50);
    static final int MIN_PER_THREAD = 60;

    private StoreChild() {
    }

    static BagStoreConfig.Builder raceConfig(Path root, Path locks) {
        return BagStoreConfig.builder(root).localLockDir(locks).bucketWidth(WIDTH).grace(GRACE).maxClockError(ERROR)
                .metronomeLookback(Duration.ofSeconds(5));
    }

    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        switch (args[0]) {
            case "hold" -> hold(args, out);
            case "writer" -> writer(args);
            case "sealer" -> sealer(args);
            case "crash" -> crash(args, out);
            case "compact" -> compact(args, out);
            case "retire" -> retire(args, out);
            default -> throw new IllegalArgumentException("unknown mode " + args[0]);
        }
    }

    private static void hold(String[] a, PrintStream out) throws Exception {
        BagStoreConfig.Builder b = BagStoreConfig.builder(Paths.get(a[1])).localLockDir(Paths.get(a[2]))
                .metronome(false);
        if (!a[3].equals("-")) {
            b.writerId(a[3]);
        }
        try (SystemTimeSource time = new SystemTimeSource("child-timer");
                FileBagStore store = FileBagStore.open(b.build(), time)) {
            out.println("WRITER " + store.writerId());
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // Hold the identity until the parent closes our standard input.
            }
        } catch (BagStoreException e) {
            out.println("FAILED " + e.getMessage());
            System.exit(3);
        }
    }

    private static void writer(String[] a) throws Exception {
        Path root = Paths.get(a[1]);
        String log = a[3];
        int threads = Integer.parseInt(a[4]);
        long millis = Long.parseLong(a[5]);
        Path outFile = Paths.get(a[6]);
        List<String> outcomes = java.util.Collections.synchronizedList(new ArrayList<>());
        try (SystemTimeSource time = new SystemTimeSource("child-timer");
                FileBagStore store = FileBagStore.open(raceConfig(root, Paths.get(a[2])).build(), time)) {
            String me = store.writerId();
            // At least the given time, and at least MIN_PER_THREAD appends per thread (a loaded machine is slow), but
            // never more than ten times the given time.
            long until = System.nanoTime() + millis * 1_000_000L;
            long cap = System.nanoTime() + 10 * millis * 1_000_000L;
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int tid = t;
                Thread th = new Thread(() -> {
                    int seq = 0;
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    while ((System.nanoTime() < until || seq < MIN_PER_THREAD) && System.nanoTime() < cap) {
                        String id = me + "-" + tid + "-" + seq++;
                        AppendRequest r = AppendRequest.of(log, List.of(), id.getBytes(StandardCharsets.UTF_8));
                        if (rnd.nextInt(3) == 0) {
                            // A timestamp whose bucket is near its grace boundary: on time, late, or refused.
                            Instant now = time.now();
                            long back = WIDTH.plus(GRACE).minus(ERROR).toMillis() + rnd.nextLong(-60, 40);
                            r = r.at(now.minusMillis(back));
                        }
                        try {
                            Appended ack = store.append(r);
                            outcomes.add("ACK " + id + " " + ack.file() + " " + ack.offset() + " " + ack.bucket());
                        } catch (BucketSealedException e) {
                            outcomes.add("REFUSED " + id + " " + e.reason());
                        } catch (WriteOutcomeUnknownException e) {
                            outcomes.add("UNKNOWN " + id);
                        } catch (BagStoreException e) {
                            outcomes.add("REFUSED " + id + " " + e.getClass().getSimpleName());
                        }
                    }
                }, "writer-" + t);
                th.start();
                ts.add(th);
            }
            for (Thread th : ts) {
                th.join();
            }
            outcomes.add("STATS " + store.stats().lateChecks() + " " + store.stats().batches() + " "
                    + store.stats().frames());
        }
        Files.write(outFile, outcomes);
    }

    private static void sealer(String[] a) throws Exception {
        Path root = Paths.get(a[1]);
        String log = a[3];
        long millis = Long.parseLong(a[4]);
        try (SystemTimeSource time = new SystemTimeSource("child-timer");
                FileBagStore store = FileBagStore.open(raceConfig(root, Paths.get(a[2])).metronome(false).build(),
                        time)) {
            long until = System.nanoTime() + millis * 1_000_000L;
            Duration due = WIDTH.plus(GRACE);
            while (System.nanoTime() < until) {
                Instant now = time.now();
                try {
                    store.sealThrough(log, now.minusSeconds(1), now.minus(due));
                } catch (BucketNotDueException e) {
                    // The clock moved between reading it and sealing; the next round seals it.
                }
                Thread.sleep(ThreadLocalRandom.current().nextInt(5, 25));
            }
        }
    }

    private static void crash(String[] a, PrintStream out) throws Exception {
        Path root = Paths.get(a[1]);
        String log = a[3];
        int threads = Integer.parseInt(a[4]);
        int tearAfter = Integer.parseInt(a[5]);
        AtomicInteger batches = new AtomicInteger();
        StoreHooks hooks = new StoreHooks() {
            @Override
            public int tearAfter(String l, Path file, int bytes) {
                // Half the batch plus a few bytes, so that a frame is cut (not just a batch at a frame boundary).
                return tearAfter > 0 && batches.incrementAndGet() == tearAfter ? Math.min(bytes - 1, bytes / 2 + 7) : -1;
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
        SystemTimeSource time = new SystemTimeSource("child-timer");
        FileBagStore store = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(Paths.get(a[2]))
                .metronome(false).build(), time, hooks);
        out.println("WRITER " + store.writerId());
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tid = t;
            Thread th = new Thread(() -> {
                byte[] pad = new byte[4096];
                for (int seq = 0; ; seq++) {
                    String id = store.writerId() + "-" + ProcessHandle.current().pid() + "-" + tid + "-" + seq;
                    byte[] idBytes = id.getBytes(StandardCharsets.UTF_8);
                    byte[] payload = new byte[pad.length];
                    System.arraycopy(idBytes, 0, payload, 0, idBytes.length);
                    out.println("SENT " + id);
                    try {
                        store.append(AppendRequest.of(log, List.of(), payload));
                        out.println("ACK " + id);
                    } catch (BagStoreException e) {
                        out.println("REFUSED " + id + " " + e.getClass().getSimpleName());
                    }
                }
            }, "crash-writer-" + t);
            th.setDaemon(true);
            th.start();
            ts.add(th);
        }
        for (Thread th : ts) {
            th.join();
        }
    }

    private static void retire(String[] a, PrintStream out) throws Exception {
        org.leasehold.time.ManualTimeSource time = new org.leasehold.time.ManualTimeSource(
                org.leasehold.time.Micros.toInstant(Long.parseLong(a[4])));
        Duration delay = Duration.ofMillis(Long.parseLong(a[5]));
        try (FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(Paths.get(a[1]), null)
                .localLockDir(Paths.get(a[2])).removeCompactedBuckets(true).retentionDelay(delay).build(), time)) {
            out.println("READY");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            in.readLine();
            CompactionReport r = store.compact(a[3]);
            time.advance(delay.plus(ERROR));
            CompactionReport removed = store.compact(a[3]);
            out.println("DONE " + r.published().size() + " " + removed.bucketsRemoved());
        }
    }

    private static void compact(String[] a, PrintStream out) throws Exception {
        String stopAt = a[4];
        StoreHooks hooks = new StoreHooks() {
            @Override
            public void compactionStep(String log, long from, String step) {
                out.println("STEP " + step + " " + from);
                if (step.equals(stopAt)) {
                    try {
                        new CountDownLatch(1).await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        };
        try (SystemTimeSource time = new SystemTimeSource("child-timer");
                FileBagStore store = FileBagStore.open(SegmentsRandomizedTest.config(Paths.get(a[1]), null)
                        .localLockDir(Paths.get(a[2])).build(), time, hooks)) {
            out.println("READY");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            in.readLine();
            CompactionReport r = store.compact(a[3]);
            for (String n : r.published()) {
                out.println("PUBLISHED " + n);
            }
            out.println("DONE " + r.published().size() + " " + r.lost().size() + " " + r.preparedRemoved());
        }
    }
}
