package org.leasehold.simulation;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.simulation.nfs.NfsModel;
import org.leasehold.simulation.nfs.SimNfsServer;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FlushPolicy;

/**
 * One run of the deterministic simulation for one seed: a lease engine (the real {@link EmbeddedLeaseService}, on the
 * lease server's simulated clock), writer and observer machines running the store's real code over a simulated NFS,
 * faults (pauses, crashes and restarts of machines, restarts of the lease engine, slow calls), then a final sealing of
 * every bucket by an operator's process, and the {@link Checker}'s verdict. Everything is drawn from the seed and
 * runs on one scheduler, so a seed replays exactly.
 */
final class Simulation {
    static final String LOG = "orders";
    /** The first instant of every run (true time). */
    static final long START = 1_795_000_000_000_000L;

    /**
     * What to run.
     *
     * @param trustModeBits BROKEN writers that trust mode bits instead of the prelock (see {@code SimStore})
     */
    record Options(long seed, long operations, NfsModel nfs, boolean trustModeBits) {
    }

    /** What a run did and what the checker found. */
    record Result(long seed, long operations, long events, long digest, List<String> violations, String summary,
            List<String> lastEvents) {
    }

    private final Options options;
    private final Trace trace = new Trace();
    private final Scheduler scheduler;
    private final SplittableRandom random;
    private final SimNfsServer server = new SimNfsServer();
    private final History history = new History();
    private final NfsModel nfs;
    private final Duration width;
    private final Duration grace;
    private final Duration error;
    private final Duration maxLease = Duration.ofSeconds(4);
    private final FlushPolicy flush;
    private final List<String> names = new ArrayList<>();
    private final List<Machine> machines = new ArrayList<>();
    private final SimClock engineClock;
    private final EngineConfig engineConfig;
    private EmbeddedLeaseService engine;
    private long messageIds;
    private final double slowChance;

    Simulation(Options options) {
        this.options = options;
        this.scheduler = new Scheduler(options.seed(), START, trace);
        this.random = scheduler.random();
        this.nfs = options.nfs();
        long[] widths = {250, 500, 1000};
        this.width = Duration.ofMillis(widths[random.nextInt(widths.length)]);
        this.grace = Duration.ofMillis(random.nextBoolean() ? 1000 : 2000);
        this.error = Duration.ofMillis(random.nextBoolean() ? 250 : 500);
        this.flush = random.nextInt(10) < 7 ? FlushPolicy.everyBatch() : FlushPolicy.never();
        this.slowChance = 0.0005 + random.nextDouble() * 0.002;
        int nameCount = 1 + random.nextInt(4);
        for (int i = 0; i < nameCount; i++) {
            names.add("account/" + i);
        }
        this.engineClock = newClock();
        this.engineConfig = EngineConfig.defaults().withServiceId("sim-lease-server").withMaxLeaseDuration(maxLease)
                .withGrace(grace).withClockErrorBound(error);
        // The export, with the store's root and the log's directory made by the operator before anything runs.
        SimNfsServer.Node store = server.create(server.root(), "store", true, 0755);
        server.create(store, LOG, true, 0755);
    }

    /** A clock within half the clock-error bound of true time for the whole run (so any two are within the bound). */
    private SimClock newClock() {
        long half = error.toNanos() / 2_000;
        long offset = (long) ((random.nextDouble() * 2 - 1) * half * 0.8);
        double ppm = (random.nextDouble() * 2 - 1) * 50;
        return new SimClock(scheduler, START, offset, ppm);
    }

    Scheduler scheduler() {
        return scheduler;
    }

    SplittableRandom random() {
        return random;
    }

    SimNfsServer server() {
        return server;
    }

    NfsModel nfsModel() {
        return nfs;
    }

    boolean trustModeBits() {
        return options.trustModeBits();
    }

    History history() {
        return history;
    }

    List<String> names() {
        return names;
    }

    EmbeddedLeaseService engine() {
        return engine;
    }

    long maxLeaseMicros() {
        return maxLease.toNanos() / 1_000;
    }

    long nextMessageId() {
        return ++messageIds;
    }

    BagStoreConfig storeConfig(Path root) {
        return BagStoreConfig.builder(root).bucketWidth(width).grace(grace).maxClockError(error)
                .maxLeaseDuration(maxLease).flushPolicy(flush).metronome(false).build();
    }

    /** How long one call takes: tens to hundreds of µs, now and then a slow one of up to seconds. */
    long latency() {
        if (random.nextDouble() < slowChance) {
            return 200_000 + random.nextInt(2_300_000);
        }
        return 20 + random.nextInt(400);
    }

    /** Runs the simulation and judges it. */
    Result run() {
        engine = new EmbeddedLeaseService(engineConfig, engineClock);
        int writers = 2 + random.nextInt(3);
        int observers = 1 + random.nextInt(2);
        for (int i = 0; i < writers + observers; i++) {
            Machine m = new Machine(this, "m" + i, newClock(), i < writers ? Machine.Role.WRITER
                    : Machine.Role.OBSERVER);
            machines.add(m);
            m.boot();
        }
        trace.record(scheduler.now(), "SETUP width " + width + " grace " + grace + " error " + error + " flush "
                + flush + " names " + names.size() + " writers " + writers + " observers " + observers);
        scheduleFault();
        scheduler.runUntil(Long.MAX_VALUE, () -> scheduler.operations() >= options.operations() || failed() != null);
        long end = scheduler.now();
        for (Machine m : machines) {
            m.crash();
        }
        Machine operator = new Machine(this, "operator", new SimClock(scheduler, START, 0, 0), Machine.Role.OPERATOR);
        operator.boot();
        Fiber last = operator.sealEverything(START - 60_000_000L, end + 5_000_000L);
        stopFaults = true;
        scheduler.runUntil(Long.MAX_VALUE, () -> last.done() && allDone());
        engine.close();
        List<String> violations = new ArrayList<>();
        Throwable failure = failed();
        if (failure != null) {
            violations.add("the simulation failed: " + failure + stack(failure));
        }
        Checker checker = new Checker(server, LOG, history, width.toNanos() / 1_000);
        violations.addAll(checker.check());
        String summary = String.format("%d operations (%d hand-overs), %.1f s simulated, %d grants, "
                + "%d acknowledged, %d refused %s, %d unknown, %d visible, %d sealed buckets, %d successor reads, "
                + "%d reader observations, %d notes; width %s, grace %s, error %s, flush %s, %d names, %d machines",
                scheduler.operations(), scheduler.handOvers(), (end - START) / 1e6, history.grants.size(),
                history.acknowledged, history.refused, history.refusals, history.unknown, checker.visible(),
                checker.buckets(), history.successorReads.size(), history.observations.size(), history.notes.size(),
                width, grace, error, flush.mode(), names.size(), machines.size());
        return new Result(options.seed(), scheduler.operations(), trace.events(), trace.digest(), violations, summary,
                trace.last());
    }

    private static String stack(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (StackTraceElement e : t.getStackTrace()) {
            sb.append("\n    at ").append(e);
        }
        return sb.toString();
    }

    private Throwable failed() {
        for (Machine m : machines) {
            for (Fiber f : m.fibers()) {
                if (f.failure() != null) {
                    return f.failure();
                }
            }
        }
        return null;
    }

    private boolean allDone() {
        for (Machine m : machines) {
            for (Fiber f : m.fibers()) {
                if (!f.done()) {
                    return false;
                }
            }
        }
        return true;
    }

    private boolean stopFaults;

    /** The next fault, a few hundred ms to a few s from now. */
    private void scheduleFault() {
        scheduler.at(scheduler.now() + 200_000 + random.nextInt(2_500_000), () -> {
            if (stopFaults) {
                return;
            }
            injectFault();
            scheduleFault();
        });
    }

    private void injectFault() {
        Machine m = machines.get(random.nextInt(machines.size()));
        int kind = random.nextInt(100);
        if (kind < 55) {
            // A GC pause or SIGSTOP: mostly short, sometimes past any lease deadline.
            long d = random.nextInt(10) < 7 ? 50_000 + random.nextInt(1_500_000) : 2_000_000 + random.nextInt(6_000_000);
            if (!m.down()) {
                m.pause(d);
            }
        } else if (kind < 80) {
            if (!m.down()) {
                m.crash();
                scheduler.at(scheduler.now() + 200_000 + random.nextInt(4_000_000), () -> {
                    if (!stopFaults) {
                        m.boot();
                    }
                });
            }
        } else if (kind < 85) {
            trace.record(scheduler.now(), "LEASE-SERVER RESTART");
            engine.close();
            engine = new EmbeddedLeaseService(engineConfig, engineClock);
        }
        // Otherwise: no fault this time.
    }
}
