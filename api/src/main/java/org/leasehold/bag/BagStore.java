package org.leasehold.bag;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

import org.leasehold.lease.Ending;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;

/**
 * A bag of single-writer logs on a shared file system, cut into time buckets that anyone can seal.
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li>An acknowledged append ({@link Appended}) is readable forever; a refused one never is. The only exception is
 *       {@link WriteOutcomeUnknownException}, which says so.
 *   <li>A message's timestamp lies strictly between the floor and the deadline of every lease it is written under,
 *       and in a bucket that was not sealed when the message was written.
 *   <li>A write that lands after sealing of its bucket began is refused, however long the writer was paused.
 *   <li>Sealed buckets never change: every reader sees the same messages in the same
 *       {@code (timestamp, writer, file, offset, index)} order.
 *   <li>All messages of one append are one frame with one checksum: readable together or not at all.
 * </ul>
 *
 * <p>Appends and reads are thread-safe; concurrent appends to one log share one write and one flush (group commit).
 */
public interface BagStore extends AutoCloseable {

    /** This store's writer identity (host and instance), the owner of the data files it writes. */
    String writerId();

    /**
     * Appends the request's messages as one frame and returns once the outcome is definitive.
     *
     * @throws InvalidLogNameException       the log name is not acceptable
     * @throws InvalidAppendException        the request is malformed
     * @throws PayloadTooLargeException      a payload or the frame is over the limit
     * @throws TimestampOutOfRangeException  no acceptable timestamp under the leases (the reason says why)
     * @throws BucketSealedException         the timestamp's bucket is sealed or past grace, or the write was late
     * @throws StoreUnavailableException     the store cannot write (closed, disk full, permissions, I/O)
     * @throws WriteOutcomeUnknownException  written but not flushed: outcome in doubt
     */
    Appended append(AppendRequest request) throws BagStoreException;

    /**
     * Like {@link #append} without waiting: validation errors fail the returned future at once; the future completes
     * when the outcome is definitive.
     */
    CompletableFuture<Appended> appendAsync(AppendRequest request);

    /**
     * Reads a log in order. Sealed buckets are read exactly to their lock file; unsealed ones (unless excluded) are
     * read to their current size with every message marked tentative.
     *
     * @throws UnknownLogException     the log does not exist
     * @throws InvalidLogNameException the log name is not acceptable
     */
    MessageStream read(ReadRequest request) throws BagStoreException;

    /**
     * Seals every bucket of {@code log} that intersects {@code [from, through)}, creating empty sealed buckets where
     * none exist so that nothing can be written there later. Idempotent and wait-free: it never waits for another
     * process, and losing a race to another sealer is fine. An implementation may bound the buckets one call seals
     * (the file store: a million) and refuse a longer range with an {@link IllegalArgumentException}; seal it in
     * several calls.
     *
     * @throws BucketNotDueException    the last bucket's end plus grace has not passed yet; nothing was sealed
     * @throws IllegalArgumentException the range is longer than one call may seal; nothing was sealed
     */
    SealReport sealThrough(String log, Instant from, Instant through) throws BagStoreException;

    /**
     * When a successor of a lease that expired at {@code predecessorDeadline} may seal the predecessor's buckets and
     * then read and write: the end of the bucket holding {@code predecessorDeadline - 1 µs}, plus grace, plus the
     * maximum clock error. Use the later of this and the grant's {@code writableFrom}.
     */
    Instant successorWritableFrom(String log, Instant predecessorDeadline) throws BagStoreException;

    /**
     * Seals, in {@code log}, every bucket the holder of a lease that expired at {@code predecessorDeadline} can still
     * have written to (from its deadline minus the maximum lease duration, grace and clock error, up to its deadline).
     * After it returns, every write of that holder is readable or will be refused. Call it before reading the state a
     * lease protects, when the grant's predecessor expired.
     *
     * @throws BucketNotDueException called before {@link #successorWritableFrom}'s instant minus the clock error
     */
    SealReport sealForSuccessor(String log, Instant predecessorDeadline) throws BagStoreException;

    /**
     * {@link #sealForSuccessor(String, Instant)} for every name of {@code lease} whose predecessor expired; a lease
     * with no expired predecessor needs nothing and gets an empty report.
     */
    default SealReport sealForSuccessor(String log, Lease lease) throws BagStoreException {
        List<SealReport.BucketSeal> all = new ArrayList<>();
        TreeSet<Instant> deadlines = new TreeSet<>();
        for (LeaseGrant g : lease.grants()) {
            if (g.predecessor() != null && g.predecessor().ending() == Ending.EXPIRED) {
                deadlines.add(g.predecessor().endedAt());
            }
        }
        for (Instant d : deadlines) {
            all.addAll(sealForSuccessor(log, d).buckets());
        }
        return new SealReport(log, all);
    }

    /**
     * When the holder of {@code lease} may read the state it protects in {@code log} and write to it: the later of
     * {@link Lease#writableFrom()} and, for every name whose predecessor expired unrelinquished,
     * {@link #successorWritableFrom}. At that instant, call {@link #sealForSuccessor(String, Lease)}, then read, then
     * write.
     */
    default Instant writableFrom(String log, Lease lease) throws BagStoreException {
        Instant ready = lease.writableFrom();
        for (LeaseGrant g : lease.grants()) {
            if (g.predecessor() != null && g.predecessor().ending() == Ending.EXPIRED) {
                Instant r = successorWritableFrom(log, g.predecessor().endedAt());
                if (r.isAfter(ready)) {
                    ready = r;
                }
            }
        }
        return ready;
    }

    /** Stops the store: pending appends complete, background sealing stops, the writer identity is released. */
    @Override
    void close();
}
