package org.leasehold.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.leasehold.lease.LeaseKind;

/**
 * Wound-wait, breaking only what could close a cycle: an older requester breaks a younger tentative holding in its way
 * when the holding's holder is itself waiting for a lease (a cycle of waits needs every member waiting, and at least
 * one older member waiting for a younger one), and they end (with the holdings its own identity takes again) just
 * before its grant. A younger holder that waits for nothing is waited for; if it starts waiting later, the names
 * where older requests wait for it are dispatched again ({@link Waits}) and it is broken then.
 *
 * <p>Its methods run under the locks of the request's shards; a holding of another name's shard is ended only through
 * its status, which that name notices when it next cleans.
 */
final class WoundWait {
    private final Fencing fencing;
    private final Waits waits;

    WoundWait(Fencing fencing, Waits waits) {
        this.fencing = fencing;
        this.waits = waits;
    }

    /**
     * True if {@code w} may break {@code h} (held on {@code name}): a tentative holding younger than the requester,
     * whose holder waits for a lease now. When only the holder's waiting is missing, the name is kept for the moment
     * it starts ({@link Waits#waitingElseSpare}).
     */
    boolean mayBreak(Holding h, Waiter w, String name) {
        return h.kind == LeaseKind.TENTATIVE && h.youngerThan(w.age, w.holder) && waits.waitingElseSpare(h.holder, name);
    }

    /**
     * The {@code needed} permits of a semaphore freed for {@code w}: its youngest tentative holders younger than the
     * requester that {@link #mayBreak} allows, or null if there are not that many.
     */
    List<Holding> victims(List<Holding> semaphoreHolders, int needed, Waiter w, String name) {
        semaphoreHolders.sort(Comparator.comparingLong((Holding h) -> h.age).reversed());
        List<Holding> victims = new ArrayList<>();
        for (Holding h : semaphoreHolders) {
            if (victims.size() < needed && mayBreak(h, w, name)) {
                victims.add(h);
            }
        }
        return victims.size() < needed ? null : victims;
    }

    /** Breaks wounded tentative holdings and ends re-taken ones; returns their other names, to dispatch. */
    List<String> applyEndings(Admission.Verdict v, NameState[] states, long now) {
        List<String> others = null;
        if (v.wound != null) {
            for (Holding h : v.wound) {
                if (h.end(Holding.BROKEN, now)) {
                    others = otherNames(h, states, others);
                }
            }
        }
        if (v.retake != null) {
            for (Holding h : v.retake) {
                if (h.kind == LeaseKind.FULL) {
                    h.impliedWatermark = fencing.impliedWatermark(h, now);
                }
                if (h.end(Holding.RETAKEN, now)) {
                    others = otherNames(h, states, others);
                }
            }
        }
        if (v.wound != null || v.retake != null) {
            for (NameState st : states) {
                fencing.clean(st, now);
            }
        }
        return others;
    }

    private static List<String> otherNames(Holding h, NameState[] states, List<String> acc) {
        outer:
        for (String n : h.names) {
            for (NameState st : states) {
                if (st.name.equals(n)) {
                    continue outer;
                }
            }
            if (acc == null) {
                acc = new ArrayList<>();
            }
            acc.add(n);
        }
        return acc;
    }
}
