package org.leasehold.engine;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.RejectedExecutionException;

import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeMark;
import org.leasehold.time.TimeSource;

/**
 * Whether the engine serves and grants now: open, past its quiet period, before its fence and before the horizon of
 * its last durable time mark (which it records), with the refusal that says which of these stopped a request.
 *
 * <p>Its state is volatile and read without a lock. The time mark is recorded first on the constructing thread
 * ({@link #start}), then only on the mark's executor, one record at a time; {@code recordedBound} is touched only
 * there.
 */
final class Gate {
    private static final System.Logger LOG = System.getLogger(EmbeddedLeaseService.class.getName());
    private static final long MARK_INTERVAL = EmbeddedLeaseService.MARK_INTERVAL_SECONDS * 1_000_000L;
    private static final long MARK_AHEAD = EmbeddedLeaseService.MARK_AHEAD_SECONDS * 1_000_000L;

    private final TimeSource time;
    private final String serviceId;
    private final long maxLease;
    private final long startedAt;
    /** The time base B: the start, or the horizon an earlier incarnation recorded if that is later. */
    private final long timeBase;
    private final long availableFrom;
    private final Instant availableFromInstant;
    private final TimeMark mark;
    private final TimeMark.Recorded previousMark;
    /** No grant, renewal or upgrade at or after this (micros): the horizon of the last durable time mark. */
    private volatile long horizon;
    private long recordedBound = Long.MIN_VALUE;
    private volatile String markFailure;
    private volatile TimeSource.Timer markTimer;
    private volatile boolean closed;
    /** No grant, renewal or upgrade at or after this instant (micros) unless it is moved; see {@link #fenceAt}. */
    private volatile long fence = Long.MAX_VALUE;
    private volatile String fenceReason = "";

    /** Reads the start time and the previous mark; records nothing before {@link #start}. */
    Gate(TimeSource time, String serviceId, long maxLease, long quiet, TimeMark mark) {
        this.time = time;
        this.serviceId = serviceId;
        this.maxLease = maxLease;
        this.mark = mark;
        this.startedAt = time.nowMicros();
        this.previousMark = mark == null ? null : mark.previous();
        this.timeBase = previousMark == null ? startedAt : Math.max(startedAt, previousMark.horizon());
        this.availableFrom = Micros.plus(timeBase, quiet);
        this.availableFromInstant = Micros.toInstant(availableFrom);
        this.horizon = mark == null ? Long.MAX_VALUE : Long.MIN_VALUE;
    }

    /** Warns if the clock is behind the previous mark, and records the first mark (if there is a mark). */
    void start() {
        if (previousMark != null && previousMark.writtenAt() > startedAt) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-1010 lease service {0}: the clock ({1}) is {2} behind the "
                    + "time mark its last incarnation recorded at {3} (horizon {4}): it grants nothing until {5}, and "
                    + "its generations and floors start above the mark. Check the clock (NTP) of this machine",
                    serviceId, Micros.toInstant(startedAt), Duration.ofNanos((previousMark.writtenAt() - startedAt) * 1_000L),
                    Micros.toInstant(previousMark.writtenAt()), Micros.toInstant(previousMark.horizon()),
                    availableFromInstant);
        }
        if (mark != null) {
            recordMark();
        }
    }

    /**
     * Records the time mark (on the mark's executor) and schedules the next record; a failed record keeps the horizon
     * of the last durable one, so the engine stops granting when the clock reaches it.
     */
    private void recordMark() {
        if (closed) {
            return;
        }
        long now = time.nowMicros();
        long h = Micros.plus(Math.max(now, timeBase), MARK_AHEAD);
        long last = horizon;
        if (last != Long.MIN_VALUE && last > h) {
            h = last;
        }
        long bound = Math.max(Micros.plus(h, maxLease), recordedBound);
        if (previousMark != null) {
            bound = Math.max(bound, previousMark.bound());
        }
        try {
            mark.record(new TimeMark.Recorded(h, bound, now));
            recordedBound = bound;
            horizon = h;
            if (markFailure != null) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-1013 lease service {0} records its time mark again "
                        + "(horizon {1})", serviceId, Micros.toInstant(h));
            }
            markFailure = null;
        } catch (IOException | RuntimeException e) {
            markFailure = e.toString();
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-1011 lease service {0} could not record its time mark: {1}; "
                    + "it grants, renews and upgrades nothing from {2} until a record succeeds (retried every {3} s)",
                    serviceId, e.toString(), last == Long.MIN_VALUE ? "now" : Micros.toInstant(last),
                    EmbeddedLeaseService.MARK_INTERVAL_SECONDS);
        }
        if (!closed) {
            markTimer = time.schedule(Micros.plus(now, MARK_INTERVAL), () -> {
                try {
                    mark.executor().execute(this::recordMark);
                } catch (RejectedExecutionException e) {
                    // The mark was closed with the engine.
                }
            });
        }
    }

    long startedAt() {
        return startedAt;
    }

    long timeBase() {
        return timeBase;
    }

    /** The mark the last incarnation recorded, or null. */
    TimeMark.Recorded previousMark() {
        return previousMark;
    }

    long availableFrom() {
        return availableFrom;
    }

    Instant availableFromInstant() {
        return availableFromInstant;
    }

    /** See {@link EmbeddedLeaseService#clockBehind()}. */
    Duration clockBehind() {
        if (previousMark == null) {
            return Duration.ZERO;
        }
        long behind = previousMark.writtenAt() - time.nowMicros();
        return behind <= 0 ? Duration.ZERO : Duration.ofNanos(behind * 1_000L);
    }

    /** See {@link EmbeddedLeaseService#markHorizon()}. */
    Instant markHorizon() {
        long h = horizon;
        return mark == null ? null : h == Long.MIN_VALUE ? Instant.MIN : Micros.toInstant(h);
    }

    String markFailure() {
        return markFailure;
    }

    /** True if the engine would grant now. */
    boolean granting() {
        long now = time.nowMicros();
        return !closed && now >= availableFrom && now < fence && now < horizon;
    }

    /** True if a grant at {@code now} is allowed: open, past the quiet period, unfenced. */
    boolean grantsAt(long now) {
        return !closed && now >= availableFrom && now < fence && now < horizon;
    }

    /** True if {@code now} is at or after the fence or the time mark's horizon. */
    boolean fencedAt(long now) {
        return now >= fence || now >= horizon;
    }

    /** True before the end of the quiet period. */
    boolean quietAt(long now) {
        return now < availableFrom;
    }

    void fenceAt(Instant until, String reason) {
        fenceReason = reason;
        fence = Micros.of(until);
    }

    boolean closed() {
        return closed;
    }

    /** Closes the gate; false if it was closed already. */
    boolean close() {
        if (closed) {
            return false;
        }
        closed = true;
        return true;
    }

    /** Stops recording the time mark. */
    void stopMarks() {
        TimeSource.Timer m = markTimer;
        if (m != null) {
            m.cancel();
        }
    }

    void ensureOpen() throws LeaseServiceUnavailableException {
        if (closed) {
            throw new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " is closed");
        }
    }

    void ensureUnfenced(long now) throws LeaseServiceUnavailableException {
        if (fencedAt(now)) {
            throw fenced(now);
        }
    }

    /** Why nothing is granted at {@code now}, which is at or after the fence or the horizon. */
    LeaseServiceUnavailableException fenced(long now) {
        if (now < fence) {
            long h = horizon;
            return new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " grants, renews and "
                    + "upgrades nothing " + (h == Long.MIN_VALUE ? "yet" : "since " + Micros.toInstant(h))
                    + ": it could not record its time mark, which must stay ahead of everything it grants ("
                    + (markFailure == null ? "the record is late" : markFailure) + "); retry shortly, and see the log "
                    + "of the service");
        }
        return new LeaseServiceUnavailableException(null, "the lease service " + serviceId + " grants, renews and "
                + "upgrades nothing since " + Micros.toInstant(fence) + ": " + fenceReason);
    }

    /** Why nothing is granted at {@code now}, which is in the quiet period. */
    LeaseServiceUnavailableException unavailable(long now) {
        String behind = timeBase > startedAt ? " (counted from " + Micros.toInstant(timeBase) + ", the time mark its "
                + "last incarnation recorded, which is ahead of its clock)" : "";
        return new LeaseServiceUnavailableException(availableFromInstant, "the lease service " + serviceId
                + " started at " + Micros.toInstant(startedAt) + " and grants nothing until " + availableFromInstant
                + " (its quiet period" + behind + ", so that every lease an earlier incarnation granted is over); it is "
                + "now " + Micros.toInstant(now) + ": retry then, or wait longer");
    }
}
