package org.leasehold.campaign;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.leasehold.server.LeaseServerMain;
import org.leasehold.store.CampaignChild;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.SystemTimeSource;

/**
 * The controller of the fault campaign: starts a lease server, writers, sealers, a compactor and a reader as
 * processes, injects faults at random times drawn from one seed (kill -9 and restart, SIGSTOP past a lease deadline and
 * SIGCONT, clock offsets within and beyond the bound, lease-server restarts on the same state directory, a full file
 * system and its freeing, writers killed half way through a frame), stops everything, seals what is left, and hands the
 * stored bytes and the journals to {@link CampaignChecker}.
 *
 * <p>The faults' kinds, targets, times and parameters come from the seed; the processes' own timing does not, so a
 * seed replays the same sequence of faults, not the same interleaving.
 */
final class Campaign {
    static final String LOG = "campaign";
    private static final Pattern READY = Pattern.compile("LEASEHOLD-2000 ready grpc=(\\S+)");
    private static final long E_MICROS = CampaignChild.ERROR.toNanos() / 1000;
    /** How long a process must have been at work before a fault may stop it. */
    private static final long WORKING_MILLIS = 10_000;
    /** How long the lease server must have been at work before it is stopped again (its clients reconnect slowly). */
    private static final long SERVER_WORKING_MILLIS = 30_000;

    /** The fault kinds, in the summary's order. */
    enum Kind { KILL, TORN_WRITE, PAUSE, CLOCK_WITHIN, CLOCK_BEYOND, SERVER_RESTART, DISK_FULL }

    /** A process slot: one role, restarted as often as it is killed. */
    private final class Slot {
        final String role;
        final int index;
        int incarnation;
        ChildProcess current;
        boolean busy;

        Slot(String role, int index) {
            this.role = role;
            this.index = index;
        }

        String name() {
            return role + "-" + index;
        }
    }

    private final Path dir;
    private final long seed;
    private final Duration duration;
    private final Path store;
    private final Path locks;
    private final Path journals;
    private final Path logs;
    private final Path serverState;
    private final List<Slot> slots = new ArrayList<>();
    private final Slot server = new Slot("server", 0);
    private final Map<String, AtomicInteger> faults = new TreeMap<>();
    private final Map<String, AtomicInteger> kills = new TreeMap<>();
    private final List<String> trace = new ArrayList<>();
    private final ScheduledExecutorService later = new ScheduledThreadPoolExecutor(2);
    private final List<Thread> tears = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final java.util.concurrent.ExecutorService injecting = java.util.concurrent.Executors.newFixedThreadPool(4);
    private Tmpfs tmpfs;
    private String tmpfsWhy;
    private String serverAddress;
    private long started;

    Campaign(Path dir, long seed, Duration duration) {
        this.dir = dir;
        this.seed = seed;
        this.duration = duration;
        this.store = dir.resolve("store");
        this.locks = dir.resolve("locks");
        this.journals = dir.resolve("journals");
        this.logs = dir.resolve("logs");
        this.serverState = dir.resolve("server-state");
        for (Kind k : Kind.values()) {
            faults.put(k.name(), new AtomicInteger());
        }
    }

    /** Runs the campaign and the checker; the summary's text is in {@link Report#text()}. */
    Report run() throws Exception {
        Files.createDirectories(store);
        Files.createDirectories(locks);
        Files.createDirectories(journals);
        Files.createDirectories(logs);
        Files.createDirectories(serverState);
        String[] why = new String[1];
        tmpfs = Tmpfs.mount(store, "size=512m", why);
        tmpfsWhy = why[0];
        Thread hook = new Thread(this::stopAll, "campaign-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            return campaign();
        } finally {
            stopAll();
            later.shutdownNow();
            injecting.shutdownNow();
            if (tmpfs != null) {
                tmpfs.close();
            }
            Runtime.getRuntime().removeShutdownHook(hook);
        }
    }

    private Report campaign() throws Exception {
        Random rnd = new Random(seed);
        started = System.nanoTime();
        startServer(0);
        for (int i = 0; i < 3; i++) {
            slots.add(new Slot("writer", i));
        }
        for (int i = 0; i < 2; i++) {
            slots.add(new Slot("sealer", i));
        }
        slots.add(new Slot("compactor", 0));
        slots.add(new Slot("reader", 0));
        for (Slot s : slots) {
            synchronized (s) {
                startChild(s, rnd.nextLong());
            }
        }
        long end = started + duration.toNanos();
        while (System.nanoTime() < end) {
            long waitMillis = 500 + rnd.nextInt(3000);
            Thread.sleep(waitMillis);
            // Each fault on its own thread, so that a slow kill or restart does not hold up the next one.
            int p = rnd.nextInt(100);
            long a = rnd.nextLong();
            int b = rnd.nextInt(1000);
            long childSeed = rnd.nextLong();
            injecting.execute(() -> {
                try {
                    inject(p, a, b, childSeed);
                } catch (Exception e) {
                    note("fault failed: " + e);
                }
            });
        }
        injecting.shutdown();
        injecting.awaitTermination(60, TimeUnit.SECONDS);
        // Let delayed endings (SIGCONT, freeing the disk, restarts) run, then stop everything.
        for (Thread t : tears) {
            t.join(30_000);
        }
        later.shutdown();
        later.awaitTermination(30, TimeUnit.SECONDS);
        stopAll();
        finalSeal();
        CampaignChecker.Outcome outcome = AuditCheck.verify(store, LOG,
                CampaignChecker.check(store.resolve(LOG), journals));
        return new Report(seed, duration, faults, kills, tmpfs != null ? null : tmpfsWhy, outcome, trace);
    }

    private void note(String s) {
        String line = String.format("%8.1f s  %s", (System.nanoTime() - started) / 1e9, s);
        synchronized (trace) {
            trace.add(line);
        }
    }

    // ------------------------------------------------------------------------------------------------------- faults

    /** One fault: its kind from {@code p}, its target from {@code a}, its size from {@code b}. */
    private void inject(int p, long a, int b, long childSeed) throws Exception {
        Kind kind = p < 10 ? Kind.KILL : p < 17 ? Kind.TORN_WRITE : p < 31 ? Kind.PAUSE : p < 60 ? Kind.CLOCK_WITHIN
                : p < 80 ? Kind.CLOCK_BEYOND : p < 85 ? Kind.SERVER_RESTART : Kind.DISK_FULL;
        switch (kind) {
            case KILL -> {
                Slot s = pick(a, null);
                if (s != null) {
                    killAndRestart(s, 200 + b, childSeed, "kill -9");
                    count(kind);
                }
            }
            case TORN_WRITE -> {
                Slot s = pick(a, "writer");
                if (s != null) {
                    Thread t = new Thread(() -> tear(s, childSeed), "campaign-tear");
                    t.setDaemon(true);
                    t.start();
                    tears.add(t);
                }
            }
            case PAUSE -> {
                Slot s = a % 8 == 0 && server.current.workingFor(SERVER_WORKING_MILLIS) ? server
                        : pick(a, a % 3 == 0 ? null : "writer");
                if (s != null) {
                    pause(s, CampaignChild.MAX_LEASE.toMillis() + 300 + 2L * b);
                    count(kind);
                }
            }
            case CLOCK_WITHIN -> {
                Slot s = pick(a, null);
                if (s != null) {
                    long off = (long) ((b / 999.0 - 0.5) * E_MICROS);
                    offset(s, off);
                    note("clock of " + s.name() + " offset by " + off + " us (within the bound)");
                    count(kind);
                }
            }
            case CLOCK_BEYOND -> {
                Slot s = pick(a, "writer");
                if (s != null) {
                    long off = (E_MICROS + 50_000 + b * 3L * E_MICROS / 1000) * (a % 2 == 0 ? 1 : -1);
                    offset(s, off);
                    note("clock of " + s.name() + " offset by " + off + " us (beyond the bound " + E_MICROS + " us)");
                    count(kind);
                    later.schedule(() -> offset(s, 0), 2000 + 3L * b, TimeUnit.MILLISECONDS);
                }
            }
            case SERVER_RESTART -> {
                synchronized (server) {
                    if (!server.busy && server.current.workingFor(SERVER_WORKING_MILLIS)) {
                        server.busy = true;
                        boolean graceful = a % 3 == 0;
                        ChildProcess c = server.current;
                        if (graceful) {
                            c.signal("CONT");
                            c.terminate();
                        } else {
                            c.kill();
                        }
                        countKill("server");
                        note("lease server " + (graceful ? "stopped (SIGTERM)" : "killed (kill -9)") + ", restarting");
                        later.schedule(this::restartServer, b, TimeUnit.MILLISECONDS);
                        count(kind);
                    }
                }
            }
            case DISK_FULL -> {
                if (tmpfs != null && fillDisk()) {
                    note("file system full");
                    count(kind);
                    later.schedule(this::freeDisk, 1000 + 3L * b, TimeUnit.MILLISECONDS);
                }
            }
            default -> throw new IllegalStateException("unknown fault " + kind);
        }
    }

    private void count(Kind k) {
        faults.get(k.name()).incrementAndGet();
    }

    private void countKill(String role) {
        synchronized (kills) {
            kills.computeIfAbsent(role, r -> new AtomicInteger()).incrementAndGet();
        }
    }

    /**
     * An idle slot of {@code role} (any role but the server if null) whose process has been at work for a few seconds
     * (on a loaded machine a JVM takes that long to start, and a process killed before it did anything tests little),
     * chosen by {@code a}; null if none.
     */
    private Slot pick(long a, String role) {
        List<Slot> c = new ArrayList<>();
        for (Slot s : slots) {
            synchronized (s) {
                if (!s.busy && s.current.workingFor(WORKING_MILLIS) && (role == null || s.role.equals(role))) {
                    c.add(s);
                }
            }
        }
        return c.isEmpty() ? null : c.get((int) Math.floorMod(a, (long) c.size()));
    }

    private void killAndRestart(Slot s, long downMillis, long childSeed, String what) throws InterruptedException {
        synchronized (s) {
            s.busy = true;
            s.current.kill();
            countKill(s.role);
            note(s.name() + " " + what + ", restarting in " + downMillis + " ms");
        }
        later.schedule(() -> restart(s, childSeed), downMillis, TimeUnit.MILLISECONDS);
    }

    private void restart(Slot s, long childSeed) {
        synchronized (s) {
            try {
                startChild(s, childSeed);
            } catch (IOException e) {
                note("could not restart " + s.name() + ": " + e.getMessage());
            } finally {
                s.busy = false;
            }
        }
    }

    private void tear(Slot s, long childSeed) {
        ChildProcess c;
        synchronized (s) {
            if (s.busy) {
                return;
            }
            s.busy = true;
            c = s.current;
        }
        try {
            c.tell("TEAR");
            String torn = c.await(l -> l.startsWith("TORN"), 15_000);
            c.kill();
            countKill(s.role);
            if (torn != null) {
                count(Kind.TORN_WRITE);
                note(s.name() + " killed half way through a frame (" + torn + ")");
            } else {
                count(Kind.KILL);
                note(s.name() + " killed (it wrote nothing to tear within 15 s)");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        restart(s, childSeed);
    }

    private void pause(Slot s, long millis) throws InterruptedException {
        ChildProcess c;
        synchronized (s) {
            if (s.busy) {
                return;
            }
            s.busy = true;
            c = s.current;
            c.signal("STOP");
            note(s.name() + " stopped (SIGSTOP) for " + millis + " ms");
        }
        later.schedule(() -> {
            try {
                c.signal("CONT");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                synchronized (s) {
                    s.busy = false;
                }
            }
        }, millis, TimeUnit.MILLISECONDS);
    }

    private void offset(Slot s, long micros) {
        synchronized (s) {
            if (s.current != null && s.current.alive()) {
                s.current.tell("OFFSET " + micros);
            }
        }
    }

    /** Fills the store's tmpfs with a ballast file; false if it could not, or if it is full already. */
    private synchronized boolean fillDisk() {
        Path ballast = store.resolve("ballast");
        if (Files.exists(ballast)) {
            return false;
        }
        byte[] chunk = new byte[1 << 20];
        try (FileChannel ch = FileChannel.open(ballast, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.APPEND)) {
            while (true) {
                ByteBuffer b = ByteBuffer.wrap(chunk);
                ch.write(b);
            }
        } catch (IOException e) {
            // No space left: the file system is full, as wanted. Fill the last bytes with small writes.
        }
        try (FileChannel ch = FileChannel.open(ballast, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            while (true) {
                ch.write(ByteBuffer.wrap(new byte[512]));
            }
        } catch (IOException e) {
            // Full to the last block.
        }
        return Files.exists(ballast);
    }

    private synchronized void freeDisk() {
        try {
            Files.deleteIfExists(store.resolve("ballast"));
            note("file system freed");
        } catch (IOException e) {
            note("could not free the file system: " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------------------------------------------- processes

    private void startChild(Slot s, long childSeed) throws IOException {
        s.incarnation++;
        String tag = s.name() + "." + s.incarnation;
        Path journal = journals.resolve(tag + ".journal");
        List<String> args = new ArrayList<>();
        args.add(s.role);
        args.add(store.toAbsolutePath().toString());
        args.add(locks.toAbsolutePath().toString());
        args.add(LOG);
        if (s.role.equals("writer")) {
            args.add(serverAddress);
        }
        args.add(journal.toAbsolutePath().toString());
        args.add(tag);
        args.add(Long.toString(childSeed));
        s.current = ChildProcess.start(tag, logs.resolve(s.name() + ".log"), CampaignChild.class.getName(), args);
    }

    private void startServer(int port) throws Exception {
        synchronized (server) {
            server.incarnation++;
            List<String> args = List.of("--listen=127.0.0.1:" + port, "--http-listen=none",
                    "--state-dir=" + serverState.toAbsolutePath(), "--max-lease=" + CampaignChild.MAX_LEASE.toMillis() + "ms",
                    "--grace=" + CampaignChild.GRACE.toMillis() + "ms",
                    "--clock-error=" + CampaignChild.ERROR.toMillis() + "ms", "--exit-when-stdin-closes",
                    "--publish-keys=" + store.toAbsolutePath());
            for (int attempt = 0; ; attempt++) {
                ChildProcess c = ChildProcess.start("server." + server.incarnation, logs.resolve("server-0.log"),
                        LeaseServerMain.class.getName(), args);
                String ready = c.await(l -> READY.matcher(l).find(), 120_000);
                if (ready != null) {
                    Matcher m = READY.matcher(ready);
                    m.find();
                    serverAddress = m.group(1);
                    server.current = c;
                    return;
                }
                c.kill();
                if (attempt >= 5) {
                    throw new IOException("the lease server did not start; see " + logs.resolve("server-0.log"));
                }
                // The port may still be held by the process just killed: try again shortly.
                Thread.sleep(500);
            }
        }
    }

    private void restartServer() {
        try {
            int port = Integer.parseInt(serverAddress.substring(serverAddress.lastIndexOf(':') + 1));
            startServer(port);
        } catch (Exception e) {
            note("could not restart the lease server: " + e);
        } finally {
            synchronized (server) {
                server.busy = false;
            }
        }
    }

    private void stopAll() {
        List<Slot> all = new ArrayList<>(slots);
        all.add(server);
        for (Slot s : all) {
            ChildProcess c = s.current;
            if (c != null) {
                try {
                    c.stop();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** After every process stopped: seals every bucket of the run (as any late sealer would), so all is settled. */
    private void finalSeal() throws Exception {
        Files.deleteIfExists(store.resolve("ballast"));
        Thread.sleep(CampaignChild.WIDTH.plus(CampaignChild.GRACE).plus(CampaignChild.ERROR).toMillis() * 2);
        if (!Files.exists(store.resolve(LOG))) {
            return;
        }
        try (SystemTimeSource time = new SystemTimeSource("final-seal");
                FileBagStore s = FileBagStore.open(CampaignChild.config(store, locks).build(), time)) {
            Instant now = time.now();
            Duration ran = Duration.ofNanos(System.nanoTime() - started).plusMinutes(1);
            s.sealThrough(LOG, now.minus(ran), now.minus(CampaignChild.WIDTH.plus(CampaignChild.GRACE)));
        }
    }

    /** The campaign's figures and the checker's verdict. */
    record Report(long seed, Duration duration, Map<String, AtomicInteger> faults, Map<String, AtomicInteger> kills,
            String diskFullSkipped, CampaignChecker.Outcome outcome, List<String> trace) {

        int totalFaults() {
            int n = 0;
            for (AtomicInteger v : faults.values()) {
                n += v.get();
            }
            return n;
        }

        String text() {
            StringBuilder b = new StringBuilder();
            b.append("fault campaign: seed ").append(seed).append(", ").append(duration.toSeconds()).append(" s of faults\n");
            b.append("faults injected: ").append(totalFaults()).append("\n");
            for (Map.Entry<String, AtomicInteger> e : faults.entrySet()) {
                b.append(String.format("  %-16s %6d%n", e.getKey(), e.getValue().get()));
            }
            if (diskFullSkipped != null) {
                b.append("  (DISK_FULL not injected: ").append(diskFullSkipped).append(")\n");
            }
            b.append("processes killed (kill -9, or SIGTERM for some server restarts):\n");
            for (Map.Entry<String, AtomicInteger> e : kills.entrySet()) {
                b.append(String.format("  %-16s %6d%n", e.getKey(), e.getValue().get()));
            }
            b.append("checked:\n");
            for (Map.Entry<String, Long> e : outcome.counts().entrySet()) {
                b.append(String.format("  %-34s %9d%n", e.getKey(), e.getValue()));
            }
            b.append("violations: ").append(outcome.violations().size()).append("\n");
            int shown = 0;
            for (String v : outcome.violations()) {
                if (shown++ == 50) {
                    b.append("  ...\n");
                    break;
                }
                b.append("  ").append(v).append("\n");
            }
            return b.toString();
        }

        void write(Path file) throws IOException {
            StringBuilder t = new StringBuilder(text()).append("\nfault trace:\n");
            for (String l : trace) {
                t.append(l).append("\n");
            }
            Files.write(file, t.toString().getBytes(StandardCharsets.UTF_8));
        }
    }
}
