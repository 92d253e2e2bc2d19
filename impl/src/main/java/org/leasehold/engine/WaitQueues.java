package org.leasehold.engine;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseNames;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * The FIFO queues of waiting requests, one per name: a request waits on every one of its names, and is granted when
 * it is first on all of them and admitted, or leaves the queues when its wait ends or it is cancelled.
 *
 * <p>The queues are guarded by their names' shards' locks. A queued request is decided once: whoever wins
 * {@link Waiter#finish} (the dispatcher, its timeout, its cancellation or the close) completes its future, always
 * after releasing every lock.
 */
final class WaitQueues {
    private final TimeSource time;
    private final Stripes stripes;
    private final Gate gate;
    private final Admission admission;
    private final WoundWait woundWait;
    private final Fencing fencing;
    private final Waits waits;
    private final Timers timers;
    private final int maxWaitersPerName;
    private final Consumer<Lease> discard;
    /** Gives a granted lease its witnesses (naming the request's principal) before a waiter gets it. */
    private final BiFunction<Lease, String, Lease> stamp;

    /** {@code discard} releases a grant nobody will take (its request was cancelled meanwhile). */
    WaitQueues(TimeSource time, Stripes stripes, Gate gate, Admission admission, WoundWait woundWait, Fencing fencing,
            Waits waits, Timers timers, int maxWaitersPerName, Consumer<Lease> discard,
            BiFunction<Lease, String, Lease> stamp) {
        this.time = time;
        this.stripes = stripes;
        this.gate = gate;
        this.admission = admission;
        this.woundWait = woundWait;
        this.fencing = fencing;
        this.waits = waits;
        this.timers = timers;
        this.maxWaitersPerName = maxWaitersPerName;
        this.discard = discard;
        this.stamp = stamp;
    }

    /**
     * Queues {@code w} on {@code states}, under the locks of its shards; refuses it if a queue is full. Its holder
     * counts as waiting until it is decided: returns the names where older requests wait for that holder (to be
     * dispatched once the locks are released, so that they may break its holdings now), or null.
     */
    List<String> enqueue(Waiter w, NameState[] states, long now) throws LeaseException {
        for (NameState st : states) {
            if (st.waiters.size() >= maxWaitersPerName) {
                throw new LeaseBusyException(st.name, null, "the queue for '" + LeaseNames.printable(st.name)
                        + "' is full (" + st.waiters.size() + " waiting requests, the configured maximum): "
                        + "retry later, or raise maxWaitersPerName");
            }
        }
        w.future = new CompletableFuture<>();
        for (NameState st : states) {
            insertByAge(st.waiters, w);
            st.lastTouched = now;
        }
        timers.scheduleWakes(w, states, now);
        w.waits = waits;
        List<String> spared = waits.started(w.holder);
        w.future.whenComplete((lease, failure) -> {
            if (failure instanceof CancellationException) {
                withdraw(w, null);
            }
        });
        w.timeout = time.schedule(w.waitUntil, () -> withdraw(w, "timeout"));
        return spared;
    }

    /**
     * Puts {@code w} after every waiter of its age or older, before the younger ones: a queue is ordered by age (a
     * request's transaction start, {@code startedAt}, else its arrival), first come first served among equals. For
     * requests that give no start this is arrival order. An older transaction is thus never queued behind a younger
     * one: every wait is of a younger request for an older one, or for a holder that wound-wait may not break (full,
     * or older), which waits for no one younger, or that waits for nothing yet (and is broken once it waits), so no
     * cycle of waits forms through a queue position.
     * Every queue of two requests orders them alike (the same age order, ties by arrival under the same locks).
     */
    static void insertByAge(ArrayDeque<Waiter> queue, Waiter w) {
        Waiter last = queue.peekLast();
        if (last == null || last.age <= w.age) {
            queue.addLast(w);
            return;
        }
        ArrayDeque<Waiter> younger = new ArrayDeque<>();
        while ((last = queue.peekLast()) != null && last.age > w.age) {
            younger.addFirst(queue.pollLast());
        }
        queue.addLast(w);
        queue.addAll(younger);
    }

    /**
     * Takes a queued request out: on timeout (with a reason) or on cancellation (reason null). A request that is
     * grantable at the moment its wait ends is granted rather than refused.
     */
    private void withdraw(Waiter w, String reason) {
        if (!w.finish()) {
            return;
        }
        TimeSource.Timer t = w.timeout;
        if (t != null && reason == null) {
            t.cancel();
        }
        LeaseException failure = null;
        Lease granted = null;
        List<String> others = null;
        stripes.lockAll(w.shards);
        try {
            long now = time.nowMicros();
            if (reason != null && !gate.closed()) {
                if (gate.fencedAt(now)) {
                    failure = gate.fenced(now);
                } else if (gate.quietAt(now)) {
                    failure = gate.unavailable(now);
                } else {
                    NameState[] states = stripes.states(w, now);
                    Admission.Verdict v = admission.evaluate(w, states, now, true);
                    long deadline = timers.deadlineFor(w, now);
                    if (v.grantable && deadline > now) {
                        removeFromQueues(w, states);
                        others = woundWait.applyEndings(v, states, now);
                        granted = fencing.grant(w, states, now, deadline);
                    } else {
                        failure = v.error != null ? v.error
                                : v.grantable ? deadlinePassed(w, now) : Admission.busy(w, v, now, true);
                    }
                }
            }
            for (String name : w.names) {
                NameState st = stripes.existing(name);
                if (st != null) {
                    st.waiters.remove(w);
                }
            }
        } finally {
            stripes.unlockAll(w.shards);
        }
        if (granted != null) {
            if (!w.future.complete(stamp.apply(granted, w.principal))) {
                discard.accept(granted);
            }
        } else if (failure != null) {
            w.future.completeExceptionally(failure);
        }
        List<String> names = new ArrayList<>(Arrays.asList(w.names));
        if (others != null) {
            names.addAll(others);
        }
        dispatch(names);
    }

    /** Grants queued requests that became grantable on {@code names}, in FIFO order per name. Holds no lock. */
    void dispatch(Collection<String> names) {
        ArrayDeque<String> work = new ArrayDeque<>(names);
        while (!work.isEmpty()) {
            dispatchName(work.poll(), work);
        }
    }

    private void dispatchName(String name, ArrayDeque<String> work) {
        while (!gate.closed()) {
            Stripes.Shard s = stripes.shardOf(name);
            Waiter head;
            s.lock.lock();
            try {
                NameState st = s.names.get(name);
                if (st == null) {
                    return;
                }
                head = firstLive(st);
                if (head == null) {
                    return;
                }
            } finally {
                s.lock.unlock();
            }
            Outcome o = tryQueued(head);
            if (o == null) {
                return;
            }
            if (o.lease != null) {
                if (!head.future.complete(stamp.apply(o.lease, head.principal))) {
                    discard.accept(o.lease);
                }
            } else if (o.error != null) {
                head.future.completeExceptionally(o.error);
            }
            for (String n : head.names) {
                if (!n.equals(name)) {
                    work.add(n);
                }
            }
            if (o.others != null) {
                work.addAll(o.others);
            }
        }
    }

    /** Outcome of a queued request's turn: granted, failed, or (null) still blocked. */
    private record Outcome(Lease lease, LeaseException error, List<String> others) {
    }

    private Outcome tryQueued(Waiter w) {
        stripes.lockAll(w.shards);
        try {
            if (w.isDone()) {
                return new Outcome(null, null, null);
            }
            long now = time.nowMicros();
            if (!gate.grantsAt(now)) {
                return null;
            }
            NameState[] states = stripes.states(w, now);
            Admission.Verdict v = admission.evaluate(w, states, now, true);
            if (v.error != null) {
                if (!w.finish()) {
                    return new Outcome(null, null, null);
                }
                removeFromQueues(w, states);
                return new Outcome(null, v.error, null);
            }
            if (!v.grantable) {
                if (v.wakeAt != Long.MAX_VALUE) {
                    timers.scheduleWake(v.blockedOn, v.wakeAt);
                }
                return null;
            }
            if (!w.finish()) {
                return new Outcome(null, null, null);
            }
            TimeSource.Timer t = w.timeout;
            if (t != null) {
                t.cancel();
            }
            removeFromQueues(w, states);
            List<String> others = woundWait.applyEndings(v, states, now);
            long deadline = timers.deadlineFor(w, now);
            if (deadline <= now) {
                return new Outcome(null, deadlinePassed(w, now), others);
            }
            return new Outcome(fencing.grant(w, states, now, deadline), null, others);
        } finally {
            stripes.unlockAll(w.shards);
        }
    }

    /** The refusal of a request whose names became free at {@code now}, when its requested deadline had passed. */
    private static LeaseBusyException deadlinePassed(Waiter w, long now) {
        return new LeaseBusyException(w.names[0], null, "the names became free only at " + Micros.toInstant(now)
                + ", when the requested deadline had passed: ask again");
    }

    /**
     * Empties every queue when the engine closes, cancelling the names' wake timers under their shards' locks, and
     * returns the requests that were waiting (to be failed with no lock held).
     */
    List<Waiter> drain() {
        List<Waiter> waiting = new ArrayList<>();
        for (Stripes.Shard s : stripes.all()) {
            s.lock.lock();
            try {
                for (NameState st : s.names.values()) {
                    waiting.addAll(st.waiters);
                    st.waiters.clear();
                    if (st.wakeTimer != null) {
                        st.wakeTimer.cancel();
                        st.wakeTimer = null;
                    }
                }
            } finally {
                s.lock.unlock();
            }
        }
        return waiting;
    }

    private static void removeFromQueues(Waiter w, NameState[] states) {
        for (NameState st : states) {
            st.waiters.remove(w);
        }
    }

    /**
     * True if {@code w} is first in {@code st}'s queue, ahead of every live waiter, whether or not it is itself done:
     * a request whose wait just ended ({@link #withdraw}) is judged at its place in the queue. Drops decided waiters
     * ahead of it. Under its shard's lock.
     */
    static boolean isFirst(NameState st, Waiter w) {
        Waiter x;
        while ((x = st.waiters.peekFirst()) != null && x != w && x.isDone()) {
            st.waiters.pollFirst();
        }
        return x == w;
    }

    /** The first waiter of {@code st} still undecided, dropping decided ones from the front. Under its shard's lock. */
    static Waiter firstLive(NameState st) {
        Waiter w;
        while ((w = st.waiters.peekFirst()) != null && w.isDone()) {
            st.waiters.pollFirst();
        }
        return w;
    }
}
