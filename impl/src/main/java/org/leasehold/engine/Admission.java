package org.leasehold.engine;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.leasehold.audit.Witness;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.Micros;

/**
 * Decides whether a request may hold its names now: its modes against the holders' (exclusive, shared, semaphore
 * permits), its place in the names' queues, and which holdings wound-wait would break for it.
 *
 * <p>{@link #request} runs without a lock; {@link #evaluate} under the locks of all the request's shards.
 */
final class Admission {
    private final Fencing fencing;
    private final WoundWait woundWait;
    private final int maxNamesPerRequest;
    private final long maxLease;
    private final Duration maxLeaseDuration;

    Admission(Fencing fencing, WoundWait woundWait, int maxNamesPerRequest, long maxLease, Duration maxLeaseDuration) {
        this.fencing = fencing;
        this.woundWait = woundWait;
        this.maxNamesPerRequest = maxNamesPerRequest;
        this.maxLease = maxLease;
        this.maxLeaseDuration = maxLeaseDuration;
    }

    /** The decision for one request: grantable (after breaking and re-taking some holdings) or blocked, and why. */
    static final class Verdict {
        boolean grantable = true;
        LeaseException error;
        NameState blockedOn;
        boolean blockedByQueue;
        long heldUntil = Long.MIN_VALUE;
        long wakeAt = Long.MAX_VALUE;
        List<Holding> wound;
        List<Holding> retake;

        void block(NameState st, boolean byQueue) {
            grantable = false;
            blockedOn = st;
            blockedByQueue = byQueue;
        }
    }

    /** Checks a request and makes its waiter (times not yet set: see {@link #stamp}). */
    Waiter request(LeaseRequest request, Stripes stripes) throws LeaseException {
        if (request == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease request is null");
        }
        String[] names = LeaseNames.canonical(request.names(), maxNamesPerRequest);
        checkIdentity(request.holder().process(), "the holder's process");
        checkIdentity(request.holder().owner(), "the holder's owner");
        checkIdentity(request.principal(), "the principal");
        LeaseMode mode = request.mode();
        if (mode.type() == LeaseMode.Type.SEMAPHORE && mode.permits() < 1) {
            throw new InvalidLeaseRequestException(Reason.INVALID_PERMITS, "a semaphore needs at least 1 permit; "
                    + "the request for '" + LeaseNames.printable(names[0]) + "' says " + mode.permits());
        }
        if (request.maxWait().isNegative()) {
            throw new InvalidLeaseRequestException(Reason.INVALID_WAIT, "the wait is negative (" + request.maxWait()
                    + "): use Duration.ZERO to try once, or a positive duration to wait");
        }
        long requestedDeadline = Long.MIN_VALUE;
        long leaseTime = maxLease;
        if (request.deadline() != null) {
            requestedDeadline = Micros.of(request.deadline());
        } else if (request.leaseTime() != null) {
            if (request.leaseTime().isNegative() || request.leaseTime().isZero()) {
                throw new InvalidLeaseRequestException(Reason.INVALID_LEASE_TIME, "the lease time " + request.leaseTime()
                        + " is not positive: ask for a positive duration (at most " + maxLeaseDuration + ")");
            }
            leaseTime = Math.min(maxLease, Micros.of(request.leaseTime()));
        }
        return new Waiter(request.holder(), names, stripes.of(names), mode, request.kind(), request.startedAt(),
                requestedDeadline, leaseTime, Micros.of(request.maxWait()), request.principal());
    }

    /**
     * True if {@code s} (null: none) fits a text field of a lease's witness: at most {@link Witness#MAX_TEXT} bytes of
     * UTF-8. Checked for every request, signing or not, so that what a service accepts does not depend on its keys.
     */
    static boolean fitsWitness(String s) {
        return s == null || s.length() <= Witness.MAX_TEXT / 3
                || s.getBytes(StandardCharsets.UTF_8).length <= Witness.MAX_TEXT;
    }

    private static void checkIdentity(String s, String what) throws InvalidLeaseRequestException {
        if (!fitsWitness(s)) {
            throw new InvalidLeaseRequestException(Reason.IDENTITY_TOO_LONG, what + " is "
                    + s.getBytes(StandardCharsets.UTF_8).length + " bytes of UTF-8; a lease's witness holds at most "
                    + Witness.MAX_TEXT + ": use a shorter one (nothing was granted)");
        }
    }

    /** Sets the request's times from the service time {@code now}, read under its shards' locks. */
    void stamp(Waiter w, long now) throws InvalidLeaseRequestException {
        if (w.requestedDeadline != Long.MIN_VALUE && w.requestedDeadline <= now) {
            throw new InvalidLeaseRequestException(Reason.DEADLINE_IN_PAST, "the requested deadline "
                    + Micros.toInstant(w.requestedDeadline) + " is not after the service's time " + Micros.toInstant(now)
                    + ": ask for a deadline in the future (at most " + maxLeaseDuration + " ahead)");
        }
        w.since = now;
        w.age = w.startedAt != null ? Micros.of(w.startedAt) : now;
        long waitUntil = Micros.plus(now, w.maxWait);
        if (w.requestedDeadline != Long.MIN_VALUE) {
            waitUntil = Math.min(waitUntil, w.requestedDeadline);
        }
        w.waitUntil = waitUntil;
    }

    /**
     * Decides {@code w} on {@code states} (cleaning them first). A new request ({@code queued} false) is blocked by
     * anyone waiting, unless it re-takes a name its identity holds; a queued one must be first on every name.
     */
    Verdict evaluate(Waiter w, NameState[] states, long now, boolean queued) {
        Verdict v = new Verdict();
        for (NameState st : states) {
            fencing.clean(st, now);
            boolean retakes = false;
            for (Holding h : st.holders) {
                if (h.holder.equals(w.holder)) {
                    retakes = true;
                    break;
                }
            }
            if (queued ? !WaitQueues.isFirst(st, w) : (!retakes && WaitQueues.firstLive(st) != null)) {
                v.block(st, true);
                return v;
            }
            if (!admit(w, st, v)) {
                return v;
            }
        }
        return v;
    }

    /** Decides one name; false (with {@code v} saying why) if it blocks or fails the request. */
    private boolean admit(Waiter w, NameState st, Verdict v) {
        int sameModeHolders = 0;
        List<Holding> blockers = null;
        List<Holding> semaphoreHolders = null;
        for (Holding h : st.holders) {
            if (h.holder.equals(w.holder)) {
                if (v.retake == null) {
                    v.retake = new ArrayList<>(2);
                }
                if (!v.retake.contains(h)) {
                    v.retake.add(h);
                }
                continue;
            }
            if (w.mode.type() == LeaseMode.Type.SEMAPHORE && h.mode.type() == LeaseMode.Type.SEMAPHORE) {
                if (h.mode.permits() != w.mode.permits()) {
                    v.grantable = false;
                    v.error = new InvalidLeaseRequestException(Reason.PERMITS_MISMATCH, "'" + LeaseNames.printable(st.name)
                            + "' is held as a semaphore of " + h.mode.permits() + " permits; this request says "
                            + w.mode.permits() + ": every holder of a semaphore must agree on its permits");
                    return false;
                }
                sameModeHolders++;
                if (semaphoreHolders == null) {
                    semaphoreHolders = new ArrayList<>();
                }
                semaphoreHolders.add(h);
            } else if (conflicts(h, w.mode)) {
                if (blockers == null) {
                    blockers = new ArrayList<>(2);
                }
                blockers.add(h);
            }
        }
        if (semaphoreHolders != null && sameModeHolders >= w.mode.permits()) {
            // Free enough permits by wounding the youngest tentative holders younger than the requester, if any.
            List<Holding> victims = woundWait.victims(semaphoreHolders, sameModeHolders - w.mode.permits() + 1, w,
                    st.name);
            if (victims == null) {
                blockBy(v, st, semaphoreHolders);
                return false;
            }
            if (blockers == null) {
                blockers = new ArrayList<>();
            }
            blockers.addAll(victims);
        }
        if (blockers == null) {
            return true;
        }
        for (Holding h : blockers) {
            if (!woundWait.mayBreak(h, w, st.name)) {
                blockBy(v, st, blockers);
                return false;
            }
        }
        if (v.wound == null) {
            v.wound = new ArrayList<>(blockers.size());
        }
        for (Holding h : blockers) {
            if (!v.wound.contains(h)) {
                v.wound.add(h);
            }
        }
        return true;
    }

    private static void blockBy(Verdict v, NameState st, List<Holding> blockers) {
        v.block(st, false);
        for (Holding h : blockers) {
            v.heldUntil = Math.max(v.heldUntil, h.deadline);
            v.wakeAt = Math.min(v.wakeAt, h.deadline);
        }
    }

    /** True if holding {@code h} and a request in mode {@code requested} cannot hold a name together. */
    static boolean conflicts(Holding h, LeaseMode requested) {
        LeaseMode.Type a = h.mode.type();
        LeaseMode.Type b = requested.type();
        if (a != b || a == LeaseMode.Type.EXCLUSIVE) {
            return true;
        }
        return false;
    }

    /** Why {@code w} is not granted: who holds or is promised the name that blocked it. */
    static LeaseBusyException busy(Waiter w, Verdict v, long now, boolean waited) {
        NameState st = v.blockedOn;
        String name = st == null ? w.names[0] : st.name;
        StringBuilder sb = new StringBuilder();
        sb.append('\'').append(LeaseNames.printable(name)).append("' is ");
        if (v.blockedByQueue || st == null) {
            sb.append("promised to ").append(st == null ? 0 : st.waiters.size()).append(" earlier waiting request(s)");
        } else {
            sb.append("held (");
            int shown = 0;
            for (Holding h : st.holders) {
                if (shown++ == 3) {
                    sb.append(", ...");
                    break;
                }
                if (shown > 1) {
                    sb.append(", ");
                }
                sb.append(h.kind.name().toLowerCase(Locale.ROOT)).append(' ').append(h.mode).append(" by ")
                        .append(h.holder).append(" until ").append(Micros.toInstant(h.deadline));
            }
            sb.append(')');
        }
        if (waited) {
            sb.append("; waited ").append(Duration.ofNanos((now - w.since) * 1_000L).toMillis()).append(" ms");
        } else {
            sb.append("; not waiting (zero wait)");
        }
        sb.append(": retry later, or wait longer");
        return new LeaseBusyException(name, v.heldUntil == Long.MIN_VALUE ? null : Micros.toInstant(v.heldUntil),
                sb.toString());
    }
}
