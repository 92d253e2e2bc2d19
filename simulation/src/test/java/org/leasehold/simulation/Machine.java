package org.leasehold.simulation;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.bag.WriteOutcomeUnknownException;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.simulation.nfs.NfsHost;
import org.leasehold.simulation.nfs.SimNfsClient;
import org.leasehold.store.LogGeometry;
import org.leasehold.store.SimStore;
import org.leasehold.time.Micros;

/**
 * One simulated machine: a clock with its own offset and drift, an NFS client, and the store's code as one process
 * runs it, with three activities: a writer that takes leases and appends, a sealer (the metronome's work) and a
 * reader of sealed buckets. A crash ends all three where they are and loses the client's unsent writes and caches; the
 * machine comes back after a while as a new incarnation (same writer identity, as the machine-local lock gives it
 * back), which starts new data files.
 */
final class Machine implements NfsHost {
    private final Simulation sim;
    private final Scheduler scheduler;
    private final String id;
    private final SimClock clock;
    private final Role role;
    private final List<Fiber> fibers = new ArrayList<>();
    private int incarnation;
    private long pausedUntil = Long.MIN_VALUE;
    private boolean down;
    private SimNfsClient client;
    private SimStore store;

    /** What a machine runs. */
    enum Role {
        /** a writer, a sealer and a reader */
        WRITER,
        /** a sealer and a reader */
        OBSERVER,
        /** nothing of its own: the simulation runs the final sealing on it */
        OPERATOR
    }

    Machine(Simulation sim, String id, SimClock clock, Role role) {
        this.sim = sim;
        this.scheduler = sim.scheduler();
        this.id = id;
        this.clock = clock;
        this.role = role;
    }

    String id() {
        return id;
    }

    SimClock clock() {
        return clock;
    }

    long pausedUntil() {
        return pausedUntil;
    }

    boolean down() {
        return down;
    }

    /** Starts (or restarts) the machine's process: a fresh client and store, and its activities. */
    void boot() {
        incarnation++;
        down = false;
        client = new SimNfsClient(sim.server(), this, sim.nfsModel(), id + "#" + incarnation);
        store = new SimStore(sim.storeConfig(client.path("/store")), id + "-0", clock, client.path("/store/"
                + Simulation.LOG), Simulation.LOG, sim.trustModeBits());
        scheduler.trace().record(scheduler.now(), "BOOT " + id + "#" + incarnation);
        long now = scheduler.now();
        if (role == Role.OPERATOR) {
            return;
        }
        if (role == Role.WRITER) {
            fibers.add(new Fiber(scheduler, this, id + "-writer", this::writer, now + 1 + sim.random().nextInt(50_000)));
        }
        fibers.add(new Fiber(scheduler, this, id + "-sealer", this::sealer, now + 1 + sim.random().nextInt(300_000)));
        fibers.add(new Fiber(scheduler, this, id + "-reader", this::reader, now + 1 + sim.random().nextInt(900_000)));
    }

    /** Kills the process where it is: unsent writes and caches are lost. */
    void crash() {
        if (down) {
            return;
        }
        down = true;
        scheduler.trace().record(scheduler.now(), "CRASH " + id);
        client.crash();
        for (Fiber f : fibers) {
            f.kill();
        }
    }

    /** Stops the whole machine (GC pause, SIGSTOP) for {@code micros}; its clock keeps running. */
    void pause(long micros) {
        pausedUntil = Math.max(pausedUntil, scheduler.now() + micros);
        scheduler.trace().record(scheduler.now(), "PAUSE " + id + " " + micros);
    }

    List<Fiber> fibers() {
        return fibers;
    }

    // ------------------------------------------------------------------------------------------------ NfsHost

    @Override
    public void step(String op, String path) {
        scheduler.countOperation();
        scheduler.trace().record(scheduler.now(), id + " " + op + " " + path);
        Fiber f = scheduler.current();
        if (f == null || f.machine() != this) {
            throw new IllegalStateException("a file-system call of " + id + " outside its own activities");
        }
        f.step(sim.latency());
    }

    @Override
    public long now() {
        return scheduler.now();
    }

    @Override
    public SplittableRandom random() {
        return sim.random();
    }

    @Override
    public Error crashed() {
        return new SimCrash();
    }

    @Override
    public void refused(String what) {
        sim.history().refusedOperations.add(id + ": " + what);
    }

    // ------------------------------------------------------------------------------------------------ the writer

    private LeaseService engine(Fiber f) {
        scheduler.countOperation();
        f.step(sim.latency());
        return sim.engine();
    }

    private void writer(Fiber f) throws Exception {
        SplittableRandom r = sim.random();
        HolderId holder = new HolderId(id + "#" + incarnation, "writer");
        while (true) {
            String name = sim.names().get(r.nextInt(sim.names().size()));
            Lease lease;
            try {
                lease = engine(f).acquire(LeaseRequest.builder(holder, name)
                        .leaseFor(Duration.ofMillis(800 + r.nextInt(3_200))).waitFor(Duration.ZERO).build());
            } catch (LeaseException e) {
                f.sleep(20_000 + r.nextInt(300_000));
                continue;
            }
            LeaseGrant lg = lease.grant(name);
            History.Grant grant = sim.history().granted(name, lg.generation(), Micros.of(lease.grantedAt()),
                    Micros.of(lease.deadline()), Micros.of(lg.floor()), holder.toString());
            scheduler.trace().record(scheduler.now(), "GRANT " + name + "#" + grant.ordinal + " to " + id
                    + (lg.predecessor() != null ? " after " + lg.predecessor().ending() : ""));
            hold(f, r, lease, grant);
        }
    }

    /** Works under one lease: gets ready after an expired predecessor, reads the name's state, appends, ends. */
    private void hold(Fiber f, SplittableRandom r, Lease lease, History.Grant grant) throws Exception {
        String name = grant.name;
        List<LeaseStamp> stamps = LeaseStamp.of(lease);
        long deadline = Micros.of(lease.deadline());
        long ready = Micros.of(lease.writableFrom());
        for (LeaseStamp s : stamps) {
            if (s.predecessorExpiredAt() != null) {
                ready = Math.max(ready, store.successorWritableFrom(Micros.of(s.predecessorExpiredAt())));
            }
        }
        if (ready >= deadline) {
            end(f, r, lease, grant, Long.MIN_VALUE);
            return;
        }
        f.sleepUntilLocal(ready);
        try {
            for (LeaseStamp s : stamps) {
                if (s.predecessorExpiredAt() != null) {
                    store.sealForSuccessor(Micros.of(s.predecessorExpiredAt()));
                }
            }
            readState(f, grant);
        } catch (BagStoreException e) {
            sim.history().notes.add(id + " could not get ready under " + name + ": " + e.getMessage());
            end(f, r, lease, grant, Long.MIN_VALUE);
            return;
        }
        long watermark = Long.MIN_VALUE;
        int batches = 1 + r.nextInt(6);
        for (int b = 0; b < batches; b++) {
            List<SimStore.Submission> batch = new ArrayList<>();
            List<long[]> ids = new ArrayList<>();
            int frames = 1 + r.nextInt(3);
            for (int i = 0; i < frames; i++) {
                int messages = 1 + r.nextInt(3);
                List<byte[]> payloads = new ArrayList<>();
                long[] frameIds = new long[messages];
                for (int m = 0; m < messages; m++) {
                    frameIds[m] = sim.nextMessageId();
                    sim.history().answered(new History.Answer(frameIds[m], History.Status.PENDING, null,
                            Long.MIN_VALUE, null, -1, m, name, grant.generation));
                    payloads.add(payload(frameIds[m], r.nextInt(48)));
                }
                batch.add(new SimStore.Submission(stamps, payloads));
                ids.add(frameIds);
            }
            scheduler.countOperation();
            List<SimStore.Outcome> outcomes = store.commit(batch);
            for (int i = 0; i < outcomes.size(); i++) {
                SimStore.Outcome o = outcomes.get(i);
                if (o.written() || o.appended() != null) {
                    watermark = Math.max(watermark, o.timestamp());
                }
                record(name, grant.generation, ids.get(i), o);
            }
            f.sleep(r.nextInt(400_000));
        }
        end(f, r, lease, grant, watermark);
    }

    private void end(Fiber f, SplittableRandom r, Lease lease, History.Grant grant, long watermark) {
        if (r.nextInt(100) < 12) {
            scheduler.trace().record(scheduler.now(), "ABANDON " + grant.name + "#" + grant.ordinal);
            return;
        }
        try {
            Instant ended = engine(f).release(lease, watermark == Long.MIN_VALUE ? null : Micros.toInstant(watermark),
                    null);
            grant.endedAt = Micros.of(ended);
            scheduler.trace().record(scheduler.now(), "RELEASE " + grant.name + "#" + grant.ordinal);
        } catch (LeaseException e) {
            scheduler.trace().record(scheduler.now(), "RELEASE-FAILED " + grant.name + "#" + grant.ordinal + " "
                    + e.getClass().getSimpleName());
        }
    }

    private void record(String name, long generation, long[] ids, SimStore.Outcome o) {
        for (int m = 0; m < ids.length; m++) {
            History.Answer a;
            if (o.appended() != null) {
                a = new History.Answer(ids[m], History.Status.ACKNOWLEDGED, null, o.timestamp(), o.appended().file(),
                        o.appended().offset(), m, name, generation);
            } else if (o.failure() instanceof WriteOutcomeUnknownException) {
                a = new History.Answer(ids[m], History.Status.UNKNOWN, o.failure().getMessage(), o.timestamp(), null,
                        -1, m, name, generation);
            } else {
                a = new History.Answer(ids[m], History.Status.REFUSED, reason(o.failure()), o.timestamp(), null, -1, m,
                        name, generation);
            }
            sim.history().answered(a);
            scheduler.trace().record(scheduler.now(), id + " " + a.status() + " " + ids[m] + " " + a.reason()
                    + " " + a.file() + "@" + a.offset());
        }
    }

    private static String reason(BagStoreException e) {
        if (e instanceof BucketSealedException bs) {
            return "BucketSealedException " + bs.reason();
        }
        if (e instanceof TimestampOutOfRangeException ts) {
            return "TimestampOutOfRangeException " + ts.reason();
        }
        return e.getClass().getSimpleName();
    }

    static byte[] payload(long id, int filler) {
        ByteBuffer b = ByteBuffer.allocate(8 + filler);
        b.putLong(id);
        for (int i = 0; i < filler; i++) {
            b.put((byte) (id * 31 + i));
        }
        return b.array();
    }

    /** Reads what the previous holders of the name wrote, from far enough back to cover the previous holder. */
    private void readState(Fiber f, History.Grant grant) throws BagStoreException {
        LogGeometry g = store.geometry();
        long from = grant.floor - sim.maxLeaseMicros() - g.graceMicros() - g.errorMicros() - 1_000_000L;
        Set<Long> seen = new HashSet<>();
        scheduler.countOperation();
        try (MessageStream s = store.read(Micros.toInstant(Math.max(0, from)), null, false, grant.name)) {
            for (Message m = s.next(); m != null; m = s.next()) {
                seen.add(ByteBuffer.wrap(m.payload()).getLong());
            }
        }
        sim.history().successorReads.add(new History.SuccessorRead(grant, from, seen));
    }

    // ------------------------------------------------------------------------------------------------ the sealer

    /** The metronome's work: every few hundred ms, seals the due buckets it finds by listing minute directories. */
    private void sealer(Fiber f) throws Exception {
        SplittableRandom r = sim.random();
        LogGeometry g = store.geometry();
        Set<Long> sealed = new HashSet<>();
        Path logDir = client.path("/store/" + Simulation.LOG);
        while (true) {
            f.sleep(150_000 + r.nextInt(500_000));
            long now = clock.nowMicros();
            for (long m = LogGeometry.minuteOf(now - 20_000_000L); m <= now; m += 60_000_000L) {
                List<String> leaves;
                try {
                    leaves = list(LogGeometry.minuteDir(logDir, m));
                } catch (NoSuchFileException e) {
                    continue;
                }
                for (String leaf : leaves) {
                    long within = LogGeometry.parseLeaf(leaf);
                    if (within < 0) {
                        continue;
                    }
                    long b = m + within;
                    if (g.dueAt(b) > now || b < now - 20_000_000L || sealed.contains(b)) {
                        continue;
                    }
                    try {
                        if (store.seal(b)) {
                            sealed.add(b);
                        }
                    } catch (BagStoreException e) {
                        sim.history().notes.add(id + " could not seal " + b + ": " + e.getMessage());
                    }
                }
            }
            sealed.removeIf(b -> b < now - 30_000_000L);
        }
    }

    private static List<String> list(Path dir) throws IOException {
        List<String> names = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) {
                names.add(p.getFileName().toString());
            }
        }
        return names;
    }

    // ------------------------------------------------------------------------------------------------ the reader

    /** Reads recent sealed buckets and records what it saw in each. */
    private void reader(Fiber f) throws Exception {
        SplittableRandom r = sim.random();
        while (true) {
            f.sleep(400_000 + r.nextInt(1_200_000));
            long now = clock.nowMicros();
            long from = store.geometry().bucketOf(now - 4_000_000L - r.nextInt(12_000_000));
            Map<Long, List<Long>> seen = new LinkedHashMap<>();
            scheduler.countOperation();
            long to = store.geometry().bucketOf(now);
            try (MessageStream s = store.read(Micros.toInstant(from), Micros.toInstant(to), true, null)) {
                for (Message m = s.next(); m != null; m = s.next()) {
                    seen.computeIfAbsent(Micros.of(m.bucket()), k -> new ArrayList<>())
                            .add(ByteBuffer.wrap(m.payload()).getLong());
                }
            } catch (BagStoreException e) {
                sim.history().notes.add(id + " read failed: " + e.getMessage());
                continue;
            }
            Set<Long> buckets = new LinkedHashSet<>(seen.keySet());
            for (long b : buckets) {
                sim.history().observations.add(new History.Observation(id, b, seen.get(b)));
            }
        }
    }

    /** The last activity of a run, on the operator's machine: seals every bucket of {@code [from, through)}. */
    Fiber sealEverything(long from, long through) {
        Fiber f = new Fiber(scheduler, this, id + "-operator", x -> {
            x.sleepUntilLocal(store.geometry().dueAt(store.geometry().bucketOf(through - 1)) + 1);
            store.sealRange(from, through);
        }, scheduler.now());
        fibers.add(f);
        return f;
    }
}
