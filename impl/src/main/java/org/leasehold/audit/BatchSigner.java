package org.leasehold.audit;

import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Signs statements in batches: one thread takes what callers submitted, waits for more, builds the batch's Merkle
 * tree, signs its root once, and completes each statement's future with its {@link BatchProof}. A caller never waits
 * for the signature: {@link #submit(byte[])} only queues, and wakes the signing thread only when it waits for a first
 * statement (or a batch is full), not for each statement while a batch fills.
 *
 * <p>A batch waits {@code linger} after its first statement (none if it is 0), or {@value #SIGNATURE_FACTOR} times as
 * long as the last batch's signature took if that is longer (at most {@value #MAX_LINGER_MICROS} µs, or {@code linger}
 * if that is more), then takes everything queued (up to {@code maxBatch}: a full batch is signed at once). Signatures
 * thus take a hundredth of the signing thread's time at most: an Ed25519 signature costs tens of microseconds, which
 * per grant would cost more than the grant, and even once per few grants takes a core from whatever shares it (with
 * one caller on the socket transport both ends keep a core each awake, and every microsecond the signing thread runs
 * is taken from one of them). What each statement costs besides (its leaf hash, its inclusion path, handing out its
 * proof) does not shrink with the batch, so it does not stretch the linger. A proof nobody waits for follows its
 * statement by a few hundred microseconds to a few milliseconds (at most {@value #MAX_LINGER_MICROS} µs, or the
 * configured linger if that is longer).
 *
 * <p>Unless somebody waits for it: a caller blocking on a proof's future ({@link ProofFuture}: a commit writing its
 * lease's witness, a time request) {@linkplain #hurry() hurries} the batch, which is then signed as soon as the signing
 * thread has rested {@value #HURRY_FACTOR} times as long as its last batch took, so that hurried batches take a
 * quarter of its time at most. With few callers a proof then follows its statement by one signature instead of a
 * linger; with many, batches still form while a batch is signed.
 *
 * <p>At most {@code maxQueued} statements wait to be signed ({@value #DEFAULT_MAX_QUEUED} by default): a caller that
 * finds the queue full waits until the signing thread has taken a batch, so that callers faster than the signer (a
 * burst of grants and renewals) slow down to its pace instead of filling the heap with statements and their futures.
 * The signing thread itself never waits (what runs on it when a proof is handed out may submit), nor does an
 * interrupted caller (its statement is queued beyond the bound and its interrupt kept).
 *
 * <p>The linger is a real-time batching delay, not part of any decision, so it is measured with {@link System#nanoTime()}
 * and not with the injected clock.
 */
public final class BatchSigner implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(BatchSigner.class.getName());

    /**
     * What receives a statement's proof: called once, on the signing thread once its batch is signed (or on the
     * submitting thread if the signer was closed first), with the proof or with why there is none. A sink does little
     * and throws nothing: every statement of the batch waits for the sinks before it.
     */
    public interface ProofSink {
        /** The statement's batch is signed: {@code proof} proves it. */
        void proven(BatchProof proof);

        /** The statement will not be signed by this signer: {@code error} says why. */
        void failed(Throwable error);
    }

    /** A sink that completes a future. */
    private record FutureSink(CompletableFuture<BatchProof> future) implements ProofSink {
        @Override
        public void proven(BatchProof proof) {
            future.complete(proof);
        }

        @Override
        public void failed(Throwable error) {
            future.completeExceptionally(error);
        }
    }

    private record Pending(byte[] statement, ProofSink sink) {
    }

    /** The places left in the queue; a place taken beyond the bound makes them negative until given back. */
    private static final class Room extends Semaphore {
        private static final long serialVersionUID = 1L;

        Room(int places) {
            super(places);
        }

        void beyondBound() {
            reducePermits(1);
        }
    }

    private static final Pending STOP = new Pending(new byte[0], new FutureSink(new CompletableFuture<>()));

    /**
     * On the signing thread while it hands out a batch's proofs: what {@link #afterBatch(Runnable)} deferred to the
     * end of the batch.
     */
    private static final ThreadLocal<List<Runnable>> AFTER_BATCH = new ThreadLocal<>();

    /**
     * A batch waits at least this many times as long as the last batch's signature took, so that signatures take a
     * hundredth of the signing thread's time (9 times the whole batch's time, as before, left the single caller of the
     * socket transport at 66–78 % of its calls without signing, 100 times the signature at 85 %: docs/BENCHMARKS.md,
     * "Signing").
     */
    static final int SIGNATURE_FACTOR = 100;
    /**
     * A hurried batch waits until the signing thread has rested this many times as long as the last batch took (1 and
     * 3 measured in the XA benchmark: 3 spent less CPU a transaction at 16 clients, and kept one client's latency).
     */
    static final int HURRY_FACTOR = 3;
    /** The longest a batch waits for more statements because signing took long (unless the linger is longer). */
    static final long MAX_LINGER_MICROS = 20_000;
    /** Default most statements waiting to be signed before a caller waits: 64 full batches of 512. */
    public static final int DEFAULT_MAX_QUEUED = 32_768;

    private final SigningKey key;
    private final long lingerNanos;
    private final int maxBatch;
    private final BlockingQueue<Pending> queue;
    /** Statements that may still be queued before a caller waits: taken by a submission, given back by the signer. */
    private final Room room;
    private final Thread thread;
    private volatile boolean closed;
    private volatile long batches;
    private volatile long statements;
    private volatile long waits;
    /** How long the next batch waits after its first statement, in nanoseconds (only the signing thread writes it). */
    private volatile long nextLingerNanos;
    /** Somebody waits for a proof of a statement not yet signed: sign the next batch without its linger. */
    private volatile boolean hurried;
    /** When the last batch was handed out, and how long it took ({@link System#nanoTime()}; the signing thread's). */
    private long lastEndNanos;
    private long lastTookNanos;
    /** How long the last batch's signature took (the signing thread's). */
    private long lastSignatureNanos;
    private volatile long hurriedBatches;

    /**
     * Starts the signing thread.
     *
     * @param key          the signing key
     * @param lingerMicros how long a batch waits for more statements after its first, 0 for not at all
     * @param maxBatch     the most statements in one batch (1 to {@link BatchProof#MAX_LEAVES})
     * @param threadName   the signing thread's name
     */
    public BatchSigner(SigningKey key, long lingerMicros, int maxBatch, String threadName) {
        this(key, lingerMicros, maxBatch, DEFAULT_MAX_QUEUED, threadName);
    }

    /**
     * Starts the signing thread.
     *
     * @param key          the signing key
     * @param lingerMicros how long a batch waits for more statements after its first, 0 for not at all
     * @param maxBatch     the most statements in one batch (1 to {@link BatchProof#MAX_LEAVES})
     * @param maxQueued    the most statements waiting to be signed before a caller waits (at least {@code maxBatch})
     * @param threadName   the signing thread's name
     */
    public BatchSigner(SigningKey key, long lingerMicros, int maxBatch, int maxQueued, String threadName) {
        if (lingerMicros < 0 || lingerMicros > 1_000_000) {
            throw new IllegalArgumentException("the batch linger is 0 to 1000000 us, got " + lingerMicros);
        }
        if (maxBatch < 1 || maxBatch > BatchProof.MAX_LEAVES) {
            throw new IllegalArgumentException("a batch holds 1 to " + BatchProof.MAX_LEAVES + " statements, got "
                    + maxBatch);
        }
        if (maxQueued < maxBatch) {
            throw new IllegalArgumentException("at most " + maxQueued + " queued statements is fewer than a batch of "
                    + maxBatch + ": allow at least a batch");
        }
        this.queue = new LinkedBlockingQueue<>();
        this.room = new Room(maxQueued);
        this.key = key;
        this.lingerNanos = lingerMicros * 1_000L;
        this.nextLingerNanos = lingerNanos;
        this.maxBatch = maxBatch;
        this.lastEndNanos = System.nanoTime();
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    public SigningKey key() {
        return key;
    }

    /**
     * Queues {@code statement} (an encoded witness or signed time) for the next batch. The future completes with its
     * proof once the batch is signed, or exceptionally with {@link IllegalStateException} if the signer was closed
     * first; blocking on it, or on a stage derived from it, {@linkplain #hurry() hurries} the batch.
     */
    public CompletableFuture<BatchProof> submit(byte[] statement) {
        CompletableFuture<BatchProof> f = new ProofFuture<>(this::hurry);
        submit(statement, new FutureSink(f));
        return f;
    }

    /**
     * Queues {@code statement} for the next batch, and hands its proof to {@code sink} once the batch is signed
     * ({@link ProofSink#failed} with {@link IllegalStateException} if the signer was closed first, at once if it is
     * closed now). Without the chain of futures {@link #submit(byte[])} makes: what a caller does with each proof runs
     * on the signing thread, per statement, so it is kept to one step (e.g. a frame witness encoded into a future of
     * its own that hurries this signer when waited for).
     */
    public void submit(byte[] statement, ProofSink sink) {
        java.util.Objects.requireNonNull(sink, "BatchSigner.submit sink");
        if (closed) {
            sink.failed(closedError());
            return;
        }
        waitForRoom();
        queue.add(new Pending(statement, sink));
        if (closed) {
            drainClosed();
        } else if (queue.size() >= maxBatch) {
            LockSupport.unpark(thread);
        }
    }

    /**
     * Takes a place in the queue, waiting while it is full, except on the signing thread or when interrupted (then the
     * statement goes beyond the bound: {@link #room} may go negative, and the signer gives the places back all the
     * same).
     */
    private void waitForRoom() {
        if (room.tryAcquire()) {
            return;
        }
        if (Thread.currentThread() == thread) {
            forceRoom();
            return;
        }
        waits++;
        try {
            while (!closed && !room.tryAcquire(10, TimeUnit.MILLISECONDS)) {
                // The signer gives places back as it takes each batch; closed: queued and failed at once.
            }
            if (closed) {
                forceRoom();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            forceRoom();
        }
    }

    /** Takes a place beyond the bound (given back like any other when the signer takes the statement). */
    private void forceRoom() {
        room.beyondBound();
    }

    /**
     * Asks for the batch being gathered to be signed now rather than at the end of its linger: a caller waits for one
     * of its proofs. {@link ProofFuture} calls it when a caller blocks; a caller that will block on a proof some other
     * way calls it itself.
     */
    public void hurry() {
        if (!hurried) {
            hurried = true;
            LockSupport.unpark(thread);
        }
    }

    /** How many batches were signed before the end of their linger because somebody waited. */
    public long hurriedBatches() {
        return hurriedBatches;
    }

    /** How many submissions found the queue full and waited (or went beyond the bound) so far. */
    public long waits() {
        return waits;
    }

    /** How many batches were signed so far. */
    public long batches() {
        return batches;
    }

    /** How many statements were signed so far. */
    public long statements() {
        return statements;
    }

    /** How many statements wait to be signed now. */
    public int queued() {
        return queue.size();
    }

    /**
     * Runs {@code task} once every proof of the batch being handed out has been handed out, when called from what a
     * proof's completion runs on the signing thread (e.g. to send the proofs of many statements in one message rather
     * than one each); at once anywhere else.
     */
    public static void afterBatch(Runnable task) {
        List<Runnable> deferred = AFTER_BATCH.get();
        if (deferred == null) {
            task.run();
        } else {
            deferred.add(task);
        }
    }

    /** How long the next batch waits for more statements after its first, in microseconds. */
    public long lingerMicros() {
        return nextLingerNanos / 1_000L;
    }

    private IllegalStateException closedError() {
        return new IllegalStateException("the audit signer of key " + key.id() + " is closed: the lease service is "
                + "stopping, so this statement was not signed");
    }

    private void run() {
        List<Pending> batch = new ArrayList<>();
        try {
            while (true) {
                Pending first = queue.take();
                if (first == STOP) {
                    return;
                }
                batch.add(first);
                // Sleep through the linger rather than wait on the queue: a submission does not wake this thread, a
                // hurry does.
                long lingerUntil = System.nanoTime() + nextLingerNanos;
                long left;
                while (!closed && queue.size() + 1 < maxBatch && (left = until(lingerUntil) - System.nanoTime()) > 0) {
                    LockSupport.parkNanos(this, left);
                    if (Thread.interrupted()) {
                        throw new InterruptedException();
                    }
                }
                if (hurried && System.nanoTime() - lingerUntil < 0) {
                    hurriedBatches++;
                }
                // A hurry from now on is for a statement of the next batch (or a spurious one: harmless); one made
                // before is kept if statements are left over for the next batch (the hurried one may be among them).
                boolean wasHurried = hurried;
                hurried = false;
                queue.drainTo(batch, maxBatch - batch.size());
                if (wasHurried && !queue.isEmpty()) {
                    hurried = true;
                }
                boolean stop = batch.remove(STOP);
                room.release(batch.size());
                long started = System.nanoTime();
                sign(batch);
                lastEndNanos = System.nanoTime();
                lastTookNanos = lastEndNanos - started;
                nextLingerNanos = nextLinger(lingerNanos, lastSignatureNanos);
                batch.clear();
                if (stop) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            drainClosed();
        }
    }

    /**
     * How long the next batch waits after its first statement: {@code lingerNanos} (the configured linger; 0 stays 0),
     * or {@value #SIGNATURE_FACTOR} times the last signature's time if that is longer, up to {@value #MAX_LINGER_MICROS}
     * µs (or the configured linger if it is longer still).
     */
    static long nextLinger(long lingerNanos, long signatureNanos) {
        if (lingerNanos <= 0) {
            return 0;
        }
        long stretched = Math.min(MAX_LINGER_MICROS * 1_000L, signatureNanos * SIGNATURE_FACTOR);
        return Math.max(lingerNanos, stretched);
    }

    /** When the batch being gathered is signed: at the end of its linger, or earlier if hurried (paced). */
    private long until(long lingerUntil) {
        if (!hurried) {
            return lingerUntil;
        }
        long paced = lastEndNanos + lastTookNanos * HURRY_FACTOR;
        return paced - lingerUntil < 0 ? paced : lingerUntil;
    }

    private void sign(List<Pending> batch) {
        if (batch.isEmpty()) {
            return;
        }
        List<Runnable> deferred = new ArrayList<>();
        AFTER_BATCH.set(deferred);
        try {
            BatchProof[] proofs;
            try {
                MessageDigest d = Merkle.sha256();
                byte[][] leaves = new byte[batch.size()][];
                for (int i = 0; i < leaves.length; i++) {
                    leaves[i] = Merkle.leafHash(d, batch.get(i).statement);
                }
                List<byte[][]> levels = Merkle.levels(d, leaves);
                byte[] root = levels.get(levels.size() - 1)[0];
                long signing = System.nanoTime();
                byte[] signature = key.sign(BatchProof.signedMessage(key.id(), leaves.length, root));
                lastSignatureNanos = System.nanoTime() - signing;
                proofs = new BatchProof[leaves.length];
                for (int i = 0; i < leaves.length; i++) {
                    proofs[i] = new BatchProof(key.id(), leaves.length, i, Merkle.path(levels, i), signature);
                }
                batches++;
                statements += leaves.length;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-8001 could not sign a batch of " + batch.size()
                        + " audit statements with key " + key.id() + ": they carry no proof", e);
                for (Pending p : batch) {
                    hand(p, null, e);
                }
                return;
            }
            for (int i = 0; i < proofs.length; i++) {
                hand(batch.get(i), proofs[i], null);
            }
        } finally {
            AFTER_BATCH.remove();
            for (Runnable task : deferred) {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-8002 a task run after the proofs of a batch of "
                            + batch.size() + " audit statements of key " + key.id() + " failed", e);
                }
            }
        }
    }

    /** Gives {@code p}'s sink its proof or its error; a sink that throws spoils neither the batch nor the thread. */
    private void hand(Pending p, BatchProof proof, Throwable error) {
        try {
            if (proof != null) {
                p.sink.proven(proof);
            } else {
                p.sink.failed(error);
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-8003 what was to receive the proof of an audit statement "
                    + "of key " + key.id() + " failed", e);
        }
    }

    private void drainClosed() {
        List<Pending> left = new ArrayList<>();
        queue.drainTo(left);
        for (Pending p : left) {
            if (p != STOP) {
                room.release();
                hand(p, null, closedError());
            }
        }
    }

    /** Signs what is queued, stops the thread and fails later submissions. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        queue.add(STOP);
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        drainClosed();
    }
}
