package org.leasehold.engine;

import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.function.Consumer;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Deadlines and the timers that act on them: the deadline a grant or a renewal gets, and the wake of a name's queue
 * when the deadline of a holder blocking its first waiter (or the quiet period) ends, so that nothing polls.
 *
 * <p>A name's wake timer ({@link NameState#wakeTimer}, {@link NameState#wakeAt}) is guarded by its shard's lock; a
 * wake takes that lock, then dispatches the name's queue with no lock held.
 */
final class Timers {
    private final TimeSource time;
    private final Stripes stripes;
    private final Gate gate;
    private final long maxLease;
    private final Consumer<Collection<String>> dispatch;

    /** {@code dispatch} grants what became grantable on the names it is given (called with no lock held). */
    Timers(TimeSource time, Stripes stripes, Gate gate, long maxLease, Consumer<Collection<String>> dispatch) {
        this.time = time;
        this.stripes = stripes;
        this.gate = gate;
        this.maxLease = maxLease;
        this.dispatch = dispatch;
    }

    /** The deadline {@code w} gets if granted at {@code now}: as asked, at most the maximum lease ahead. */
    long deadlineFor(Waiter w, long now) {
        long max = Micros.plus(now, maxLease);
        if (w.requestedDeadline != Long.MIN_VALUE) {
            return Math.min(w.requestedDeadline, max);
        }
        return Math.min(Micros.plus(now, w.leaseTime), max);
    }

    /** The deadline a renewal or upgrade of {@code h} to {@code deadline} gets: never earlier than the current one. */
    long newDeadline(Holding h, Instant deadline, long now) throws InvalidLeaseRequestException {
        long requested = Micros.of(deadline);
        if (requested <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the new deadline " + deadline
                    + " is not after the service's time " + Micros.toInstant(now) + ": ask for a later one");
        }
        return Math.max(h.deadline, Math.min(requested, Micros.plus(now, maxLease)));
    }

    /** Wakes the queue of each name where {@code w} is first when a blocker's deadline (or the quiet period) ends. */
    void scheduleWakes(Waiter w, NameState[] states, long now) {
        for (NameState st : states) {
            if (WaitQueues.firstLive(st) != w) {
                continue;
            }
            long at = Long.MAX_VALUE;
            if (gate.quietAt(now)) {
                at = gate.availableFrom();
            } else {
                for (Holding h : st.holders) {
                    if (Admission.conflicts(h, w.mode) && h.deadline < at) {
                        at = h.deadline;
                    }
                }
            }
            if (at != Long.MAX_VALUE) {
                scheduleWake(st, at);
            }
        }
    }

    /** Wakes the queue of {@code st} at {@code at}, unless a wake is due no later. */
    void scheduleWake(NameState st, long at) {
        if (st.wakeTimer != null && st.wakeAt <= at) {
            return;
        }
        if (st.wakeTimer != null) {
            st.wakeTimer.cancel();
        }
        st.wakeAt = at;
        String name = st.name;
        st.wakeTimer = time.schedule(at, () -> onWake(name, at));
    }

    private void onWake(String name, long at) {
        Stripes.Shard s = stripes.shardOf(name);
        s.lock.lock();
        try {
            NameState st = s.names.get(name);
            if (st == null || st.wakeAt != at) {
                return;
            }
            st.wakeTimer = null;
            st.wakeAt = Long.MAX_VALUE;
        } finally {
            s.lock.unlock();
        }
        dispatch.accept(List.of(name));
    }
}
