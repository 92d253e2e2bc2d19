package org.leasehold.engine;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.leasehold.lease.HolderId;

/**
 * Which holders are waiting for a lease of this engine now, for wound-wait: a younger tentative holding is broken for
 * an older request only while its holder waits (a holder that waits for nothing cannot close a cycle of waits, so the
 * older request waits for it instead). An older request that waits for a holder that does not wait leaves the name
 * here (spared), and when that holder starts waiting, the names are handed back to be dispatched again, so the older
 * request is decided again and breaks the holding then.
 *
 * <p>Each holder's entry is changed atomically ({@link ConcurrentHashMap#compute}): "does it wait, else remember the
 * name" and "it waits now, hand back the names" cannot miss each other. Entries exist only while a holder waits or is
 * spared; the uncontended path never touches this.
 */
final class Waits {

    /** One holder: how many of its requests are queued, and the names where an older request waits for it. */
    private static final class Entry {
        int waiting;
        Set<String> spared;

        boolean empty() {
            return waiting == 0 && (spared == null || spared.isEmpty());
        }
    }

    private final ConcurrentHashMap<HolderId, Entry> holders = new ConcurrentHashMap<>();

    /**
     * True if {@code holder} waits for a lease now, so its younger tentative holdings may be broken; else false, and
     * {@code name} (where an older request waits for it) is kept until it starts waiting.
     */
    boolean waitingElseSpare(HolderId holder, String name) {
        boolean[] waits = new boolean[1];
        holders.compute(holder, (k, e) -> {
            if (e == null) {
                e = new Entry();
            }
            if (e.waiting > 0) {
                waits[0] = true;
            } else {
                if (e.spared == null) {
                    e.spared = new LinkedHashSet<>(2);
                }
                e.spared.add(name);
            }
            return e;
        });
        return waits[0];
    }

    /** {@code holder} queued a request: returns the names where older requests wait for it (to dispatch), or null. */
    List<String> started(HolderId holder) {
        Object[] handedBack = new Object[1];
        holders.compute(holder, (k, e) -> {
            if (e == null) {
                e = new Entry();
            }
            e.waiting++;
            if (e.spared != null && !e.spared.isEmpty()) {
                handedBack[0] = List.copyOf(e.spared);
                e.spared.clear();
            }
            return e;
        });
        @SuppressWarnings("unchecked")
        List<String> names = (List<String>) handedBack[0];
        return names;
    }

    /** A queued request of {@code holder} was decided (granted, refused, timed out, cancelled). */
    void finished(HolderId holder) {
        holders.computeIfPresent(holder, (k, e) -> {
            e.waiting--;
            return e.empty() ? null : e;
        });
    }

    /** {@code holder} no longer holds {@code name}: nobody waits for it there. */
    void forget(HolderId holder, String name) {
        if (holders.isEmpty()) {
            return;
        }
        holders.computeIfPresent(holder, (k, e) -> {
            if (e.spared != null) {
                e.spared.remove(name);
            }
            return e.empty() ? null : e;
        });
    }

    /** How many holders have an entry (waiting or spared); for tests. */
    int size() {
        return holders.size();
    }
}
