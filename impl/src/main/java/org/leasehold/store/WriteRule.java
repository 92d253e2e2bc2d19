package org.leasehold.store;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import org.leasehold.bag.BagStore;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.BucketSealedException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.bag.TimestampOutOfRangeException.Reason;
import org.leasehold.lease.Ending;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The leases' half of the write rule (the committer's half, against sealing, is {@link LatenessCheck}): when a lease
 * may write to a log, and at which timestamp.
 * <ul>
 *   <li>A lease may write from its grant's {@code writableFrom}.
 *   <li>The successor of a lease that expired without releasing may write only from the end of the bucket holding the
 *       predecessor's deadline minus 1 µs, plus grace, plus the maximum clock error ({@link #successorWritableFrom}),
 *       and only once every bucket the predecessor can still have written to is sealed: from its deadline minus the
 *       maximum lease duration, grace and clock error, up to its deadline ({@link #successorSealFrom}).
 *   <li>A timestamp lies above every floor and below every deadline, at most the maximum clock error ahead of this
 *       clock, in a bucket whose grace has not run out ({@link Window#timestamp}).
 * </ul>
 *
 * <p>The store applies the rule to every append ({@link #window}). A lease holder that writes through a
 * {@link BagStore} (the resource adapter) asks it before reading and writing: {@link #readyForSuccessor} waits and
 * seals after an expired predecessor, {@link #awaitWritable} waits out a lease server's clock that runs slightly
 * ahead. Both wait on the holder's {@link TimeSource}, never by sleeping.
 */
public final class WriteRule {
    private WriteRule() {
    }

    // ---------------------------------------------------------------------------------------------------- the store's

    /**
     * When the successor of a lease that expired at {@code predecessorDeadline} (µs) may write to a log of geometry
     * {@code g}: the end of the bucket holding {@code predecessorDeadline - 1}, plus grace, plus the clock error.
     */
    static long successorWritableFrom(LogGeometry g, long predecessorDeadline) {
        return g.end(g.bucketOf(predecessorDeadline - 1)) + g.graceMicros() + g.errorMicros();
    }

    /**
     * The first instant (µs) a lease that expired at {@code predecessorDeadline} can still have written at, and so
     * where its successor's sealing starts: the deadline minus the longest lease, grace and clock error.
     */
    static long successorSealFrom(LogGeometry g, long predecessorDeadline, long maxLeaseMicros) {
        return predecessorDeadline - maxLeaseMicros - g.graceMicros() - g.errorMicros();
    }

    /**
     * What the leases of one append allow in a log of geometry {@code g}: their highest floor, earliest deadline,
     * latest writable instant (including the successor rule), and the deadlines of expired predecessors whose buckets
     * must be sealed before the append is written.
     */
    static Window window(LogGeometry g, List<LeaseStamp> leases) {
        long floor = Long.MIN_VALUE;
        long deadline = Long.MAX_VALUE;
        long writable = Long.MIN_VALUE;
        LeaseStamp floorLease = null;
        LeaseStamp deadlineLease = null;
        List<Long> expiredPredecessors = new ArrayList<>();
        for (LeaseStamp l : leases) {
            long f = LogGeometry.micros(l.floor());
            if (f > floor) {
                floor = f;
                floorLease = l;
            }
            long d = LogGeometry.micros(l.deadline());
            if (d < deadline) {
                deadline = d;
                deadlineLease = l;
            }
            writable = Math.max(writable, LogGeometry.micros(l.writableFrom()));
            if (l.predecessorExpiredAt() != null) {
                long pe = LogGeometry.micros(l.predecessorExpiredAt());
                expiredPredecessors.add(pe);
                writable = Math.max(writable, successorWritableFrom(g, pe));
            }
        }
        return new Window(g, floor, floorLease, deadline, deadlineLease, writable, List.copyOf(expiredPredecessors));
    }

    /**
     * The leases of one append, as {@link #window} summed them up. Instants are µs since the epoch.
     *
     * @param geometry            the log's bucket width, grace and clock error
     * @param floor               the highest floor ({@code Long.MIN_VALUE} without leases)
     * @param floorLease          the lease of that floor, or null without leases
     * @param deadline            the earliest deadline ({@code Long.MAX_VALUE} without leases)
     * @param deadlineLease       the lease of that deadline, or null without leases
     * @param writableFrom        the first instant the append may be written at
     * @param expiredPredecessors the deadlines of predecessors that expired without releasing
     */
    record Window(LogGeometry geometry, long floor, LeaseStamp floorLease, long deadline, LeaseStamp deadlineLease,
            long writableFrom, List<Long> expiredPredecessors) {

        /** Refuses an append to {@code log} that this clock ({@code now}) reads before {@link #writableFrom}. */
        void checkWritable(String log, long now) throws TimestampOutOfRangeException {
            if (now < writableFrom) {
                throw new TimestampOutOfRangeException(Reason.NOT_YET_WRITABLE, null, Micros.toInstant(writableFrom),
                        "the leases of this append to log '" + log + "' allow writing from "
                                + Micros.toInstant(writableFrom) + " (the grant's writableFrom, or after an expired "
                                + "predecessor the end of its last bucket plus grace and clock error); this clock reads "
                                + Micros.toInstant(now) + ": nothing was written. Retry at "
                                + Micros.toInstant(writableFrom));
            }
        }

        /**
         * The timestamp of an append to {@code log}: the caller's {@code requested} one if the rule allows it, or the
         * first one above every floor and not before {@code now}.
         *
         * @param maxClockError the configured bound, as messages name it
         * @throws TimestampOutOfRangeException no acceptable timestamp (the reason says why)
         * @throws BucketSealedException        the timestamp's bucket is past its grace by this clock
         */
        long timestamp(String log, Instant requested, long now, Duration maxClockError) throws BagStoreException {
            long e = geometry.errorMicros();
            if (floorLease != null && floor - now > e) {
                throw new TimestampOutOfRangeException(Reason.FLOOR_AHEAD_OF_CLOCK, null, Micros.toInstant(floor - e),
                        "the floor of lease '" + LeaseNames.printable(floorLease.name()) + "' (" + floorLease.floor()
                                + ") is " + Micros.toInstant(floor - now).toEpochMilli() + " ms ahead of this clock ("
                                + Micros.toInstant(now) + "), more than the maximum clock error " + maxClockError
                                + ": a previous holder's clock ran fast, or this one is slow. Nothing was written; "
                                + "check clock synchronisation, or retry at " + Micros.toInstant(floor - e));
            }
            boolean callerTime = requested != null;
            long t;
            if (callerTime) {
                t = LogGeometry.micros(requested);
                if (floorLease != null && t <= floor) {
                    throw new TimestampOutOfRangeException(Reason.NOT_ABOVE_FLOOR, requested, null, "the timestamp "
                            + requested + " of the append to log '" + log + "' is not above the floor "
                            + floorLease.floor() + " of lease '" + LeaseNames.printable(floorLease.name())
                            + "': nothing was written. Use a later timestamp, or let the store choose one");
                }
            } else {
                t = floorLease != null ? Math.max(floor + 1, now) : now;
            }
            if (deadlineLease != null && t >= deadline) {
                throw new TimestampOutOfRangeException(Reason.NOT_BELOW_DEADLINE, Micros.toInstant(t), null,
                        "the append to log '" + log + "' needs a timestamp below the deadline "
                                + deadlineLease.deadline() + " of lease '" + LeaseNames.printable(deadlineLease.name())
                                + "' (generation " + deadlineLease.generation() + "), but " + (callerTime
                                ? "the given one is " : "the earliest acceptable one is ") + Micros.toInstant(t)
                                + " (this clock reads " + Micros.toInstant(now) + "): the lease is over. Nothing was "
                                + "written; acquire the lease again");
            }
            if (callerTime && t > now + e) {
                throw new TimestampOutOfRangeException(Reason.IN_FUTURE, requested, Micros.toInstant(t - e),
                        "the timestamp " + requested + " of the append to log '" + log + "' is more than the maximum "
                                + "clock error (" + maxClockError + ") ahead of this clock (" + Micros.toInstant(now)
                                + "): nothing was written. Use a current timestamp, or let the store choose one");
            }
            if (t < LogGeometry.MIN_MICROS || t >= LogGeometry.MAX_MICROS) {
                throw new TimestampOutOfRangeException(Reason.UNREPRESENTABLE, Micros.toInstant(t), null,
                        "the timestamp " + Micros.toInstant(t) + " of the append to log '" + log + "' is outside the "
                                + "years 1970 to 9999 the store's layout covers: nothing was written");
            }
            long bucket = geometry.bucketOf(t);
            if (now >= geometry.dueAt(bucket)) {
                String path = LogGeometry.relativePath(bucket);
                throw new BucketSealedException(BucketSealedException.Reason.PAST_GRACE, log, path,
                        Micros.toInstant(bucket), "the timestamp " + Micros.toInstant(t) + " falls in bucket " + path
                                + " of log '" + log + "', whose grace ran out at "
                                + Micros.toInstant(geometry.dueAt(bucket)) + " (this clock reads "
                                + Micros.toInstant(now) + "): it may be sealed, so nothing was written. Use a current "
                                + "timestamp");
            }
            return t;
        }
    }

    // ---------------------------------------------------------------------------------------------------- a holder's

    /** Whether a name of {@code lease} follows a predecessor that expired without releasing. */
    public static boolean predecessorExpired(Lease lease) {
        for (LeaseGrant g : lease.grants()) {
            if (g.predecessor() != null && g.predecessor().ending() == Ending.EXPIRED) {
                return true;
            }
        }
        return false;
    }

    /**
     * Makes {@code lease} ready to read and write {@code log} after a predecessor expired without releasing: waits on
     * {@code time} until {@link BagStore#writableFrom(String, Lease)}, then seals the predecessors' buckets
     * ({@link BagStore#sealForSuccessor(String, Lease)}), so that each of their late writes is readable or refused.
     * Without an expired predecessor it does nothing.
     *
     * @return whether it sealed (a predecessor had expired)
     * @throws LeaseBusyException   the predecessors' writes settle only at or after this lease's deadline
     * @throws InterruptedException interrupted while waiting; nothing was sealed
     */
    public static boolean readyForSuccessor(BagStore store, String log, Lease lease, TimeSource time)
            throws BagStoreException, LeaseBusyException, InterruptedException {
        if (!predecessorExpired(lease)) {
            return false;
        }
        Instant ready = store.writableFrom(log, lease);
        if (!ready.isBefore(lease.deadline())) {
            throw new LeaseBusyException(lease.grants().get(0).name(), ready, "a previous holder of " + lease.names()
                    + " expired without releasing; its late writes are settled at " + ready + ", after this lease's "
                    + "deadline " + lease.deadline() + ": ask for a longer lease or retry then");
        }
        awaitTime(time, ready, "a predecessor's writes to settle");
        store.sealForSuccessor(log, lease);
        return true;
    }

    /**
     * Waits until {@code time} reaches the latest {@code writableFrom} of {@code leases}, when that is no more than
     * {@code maxClockError} ahead. A lease server whose clock runs slightly ahead of this process's grants leases
     * writable from an instant this clock has not reached yet; a holder that writes within that difference waits it
     * out instead of failing. Further ahead it returns at once, and the store refuses the write, saying why.
     *
     * @throws InterruptedException interrupted while waiting; the message says until when
     */
    public static void awaitWritable(Collection<Lease> leases, Duration maxClockError, TimeSource time)
            throws InterruptedException {
        Instant from = null;
        List<String> names = new ArrayList<>();
        for (Lease l : leases) {
            from = from == null || l.writableFrom().isAfter(from) ? l.writableFrom() : from;
            names.addAll(l.names());
        }
        Instant now = time.now();
        if (from != null && now.isBefore(from) && !now.plus(maxClockError).isBefore(from)) {
            awaitTime(time, from, "the leases on " + names + " to become writable (the lease server's clock runs "
                    + "ahead of this one)");
        }
    }

    /** Waits until {@code time} reaches {@code t}, on one of its timers. */
    private static void awaitTime(TimeSource time, Instant t, String what) throws InterruptedException {
        if (!time.now().isBefore(t)) {
            return;
        }
        CountDownLatch reached = new CountDownLatch(1);
        TimeSource.Timer timer = time.schedule(Micros.of(t), reached::countDown);
        try {
            reached.await();
        } catch (InterruptedException e) {
            timer.cancel();
            InterruptedException described = new InterruptedException("interrupted while waiting until " + t + " for "
                    + what);
            described.initCause(e);
            throw described;
        }
    }
}
