package org.leasehold.engine;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.leasehold.lease.LeaseKind;

/**
 * Wound-wait: an older requester breaks the younger tentative holdings in its way instead of waiting behind them, and
 * they end (with the holdings its own identity takes again) just before its grant. Only leases take no part: a
 * requester that holds nothing else waits (it cannot close a cycle of waits), and a holding that is its holder's only
 * lease is waited for (its holder waits for nobody) until the holder asks for another.
 *
 * <p>Its methods run under the locks of the request's shards; a holding of another name's shard is ended only through
 * its status, which that name notices when it next cleans.
 */
final class WoundWait {
    private final Fencing fencing;

    WoundWait(Fencing fencing) {
        this.fencing = fencing;
    }

    /**
     * True if {@code w} may break {@code h}: a tentative holding younger than the requester, neither of them an only
     * lease.
     */
    static boolean mayBreak(Holding h, Waiter w) {
        return h.kind == LeaseKind.TENTATIVE && !w.only && !h.only && h.youngerThan(w.age, w.holder);
    }

    /**
     * The {@code needed} permits of a semaphore freed for {@code w}: its youngest tentative holders younger than the
     * requester, or null if there are not that many.
     */
    static List<Holding> victims(List<Holding> semaphoreHolders, int needed, Waiter w) {
        semaphoreHolders.sort(Comparator.comparingLong((Holding h) -> h.age).reversed());
        List<Holding> victims = new ArrayList<>();
        for (Holding h : semaphoreHolders) {
            if (victims.size() < needed && mayBreak(h, w)) {
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
