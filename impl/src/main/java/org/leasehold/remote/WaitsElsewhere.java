package org.leasehold.remote;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.WaitsElsewhereRequest;

/**
 * Tells each lease server where a holder holds a lease when that holder waits at another one, for wound-wait across
 * servers. A server breaks a younger tentative holding for an older request only while its holder waits for a lease
 * (a holder that waits for nothing cannot be in a cycle of waits), and a server sees only the waits made at it: a
 * transaction holding on server 1 and waiting on server 2 looks to server 1 as if it waited for nothing, so an older
 * request there would wait for it, and a cycle through the two servers would last until a wait ran out. So when a
 * holder's acquisition that may wait goes to one server, every other server where this client holds a lease of that
 * holder is told so ({@code WaitsElsewhereRequest}, one-way, naming the lease), and told again when the acquisition is
 * answered; a server counts the holder as waiting meanwhile (and the session's end ends it there).
 *
 * <p>Only a client of several servers keeps anything here. The leases are those this client was granted and has not
 * released through it; one that ended otherwise (expired, broken) stays until its deadline has passed by a minute,
 * and a server that no longer holds it ignores the message. The notice goes out with the acquisition, before its
 * answer, so a holder whose acquisition is granted at once may be broken where an older request waited for it then:
 * only when such a request waits, and only a tentative holding.
 */
final class WaitsElsewhere {
    private static final long KEEP_AFTER_DEADLINE_MICROS = 60_000_000L;
    /** Holders kept before every entry is first swept for ended leases. */
    private static final int SWEEP_ABOVE = 4_096;

    /** One lease part held on one server. */
    private record Held(Endpoint endpoint, Lease lease) {
    }

    private final Map<HolderId, List<Held>> held = new ConcurrentHashMap<>();
    private final TimeSource local;
    /**
     * How many holders trigger the next sweep of every entry: twice what the last sweep left (at least
     * {@link #SWEEP_ABOVE}), so that a client holding many leases at once sweeps now and then, not at every grant.
     */
    private volatile int sweepAbove = SWEEP_ABOVE;

    WaitsElsewhere(TimeSource local) {
        this.local = local;
    }

    /** {@code lease} (a part, as {@code e} granted it) is held now. */
    void granted(Endpoint e, Lease lease) {
        long now = local.nowMicros();
        if (held.size() > sweepAbove) {
            for (HolderId h : held.keySet()) {
                held.computeIfPresent(h, (k, list) -> {
                    synchronized (list) {
                        list.removeIf(x -> ended(x.lease, now));
                        return list.isEmpty() ? null : list;
                    }
                });
            }
            sweepAbove = Math.max(SWEEP_ABOVE, 2 * held.size());
        }
        held.compute(lease.holder(), (h, list) -> {
            List<Held> out = list == null ? new ArrayList<>(2) : list;
            synchronized (out) {
                out.removeIf(x -> ended(x.lease, now));
                out.add(new Held(e, lease));
            }
            return out;
        });
    }

    /** {@code lease} (a part held on {@code e}) was released through this client. */
    void released(Endpoint e, Lease lease) {
        held.computeIfPresent(lease.holder(), (h, list) -> {
            synchronized (list) {
                for (Iterator<Held> it = list.iterator(); it.hasNext();) {
                    Held x = it.next();
                    if (x.endpoint == e && sameGrants(x.lease, lease)) {
                        it.remove();
                        break;
                    }
                }
                return list.isEmpty() ? null : list;
            }
        });
    }

    /**
     * {@code holder} asks {@code at} for a lease and may wait for it until {@code answer} completes: every other server
     * holding one of its leases is told through {@code sessions} now, and again when the answer comes.
     */
    void waiting(HolderId holder, Endpoint at, CompletableFuture<?> answer, Sessions sessions) {
        List<Held> list = held.get(holder);
        if (list == null) {
            return;
        }
        List<Held> elsewhere = new ArrayList<>(1);
        long now = local.nowMicros();
        synchronized (list) {
            for (Held x : list) {
                if (x.endpoint != at && !ended(x.lease, now)
                        && elsewhere.stream().noneMatch(y -> y.endpoint == x.endpoint)) {
                    elsewhere.add(x);
                }
            }
        }
        if (elsewhere.isEmpty()) {
            return;
        }
        for (Held x : elsewhere) {
            tell(x, true, sessions);
        }
        answer.whenComplete((v, f) -> {
            for (Held x : elsewhere) {
                tell(x, false, sessions);
            }
        });
    }

    private static void tell(Held x, boolean waiting, Sessions sessions) {
        SessionChannel s = sessions.of(x.endpoint, x.lease.grants().get(0).name());
        if (s != null) {
            s.oneWay(SessionRequest.newBuilder().setWaitsElsewhere(WaitsElsewhereRequest.newBuilder()
                    .setHeld(ProtoCodec.ref(x.lease)).setWaiting(waiting)));
        }
    }

    /** The same names and generations (witnesses and deadlines change with renewals and upgrades). */
    private static boolean sameGrants(Lease a, Lease b) {
        if (a.grants().size() != b.grants().size()) {
            return false;
        }
        for (int i = 0; i < a.grants().size(); i++) {
            if (!a.grants().get(i).name().equals(b.grants().get(i).name())
                    || a.grants().get(i).generation() != b.grants().get(i).generation()) {
                return false;
            }
        }
        return true;
    }

    private static boolean ended(Lease lease, long now) {
        return Micros.of(lease.deadline()) + KEEP_AFTER_DEADLINE_MICROS < now;
    }

    /** How many holders have a lease kept here (tests). */
    int holders() {
        return held.size();
    }

    /** The session of a server's connection for a name, or null if there is none now. */
    interface Sessions {
        SessionChannel of(Endpoint e, String name);
    }
}
