package org.leasehold.remote;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.leasehold.lease.LeaseException;
import org.leasehold.time.TimeSource;
import org.leasehold.wire.proto.InfoReply;

/**
 * The window of a migration between server sets, in which every name is leased on both: from its start until the old
 * set's longest lease is over (its maximum lease plus grace plus the clock error bound).
 */
final class Migration {
    private static final System.Logger LOG = System.getLogger(Migration.class.getName());

    private final TimeSource local;
    private final List<Endpoint> previous;
    private final List<String> previousAddresses;
    private final List<String> currentAddresses;
    private final long start;
    private final Runnable onOver;
    private volatile long end = Long.MAX_VALUE;
    private volatile boolean migrating;
    /** Set once, by the call that found the window over. */
    private final AtomicBoolean over = new AtomicBoolean();

    /**
     * @param start  when the migration began (local micros)
     * @param onOver run once, by the call that finds the window over
     */
    Migration(TimeSource local, List<Endpoint> previous, List<String> previousAddresses, List<String> currentAddresses,
            long start, Runnable onOver) {
        this.local = local;
        this.previous = previous;
        this.previousAddresses = previousAddresses;
        this.currentAddresses = currentAddresses;
        this.start = start;
        this.onOver = onOver;
        this.migrating = !previous.isEmpty();
    }

    /** False once the window is known to be over (or there never was one); cheap, for the single-server fast paths. */
    boolean mayBeOpen() {
        return migrating;
    }

    /** True while names are leased on both sets; the first call that finds the window over ends it. */
    boolean open() {
        if (!migrating) {
            return false;
        }
        long e = end;
        if (e == Long.MAX_VALUE) {
            e = computeEnd();
        }
        if (local.nowMicros() >= e) {
            migrating = false;
            if (over.compareAndSet(false, true)) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-3003 migration over: every lease of the old servers {0} has "
                        + "ended; using only {1}", previousAddresses, currentAddresses);
                onOver.run();
            }
            return false;
        }
        return true;
    }

    /** True once a call has found the window over. */
    boolean over() {
        return over.get();
    }

    /** The old set's longest lease plus grace plus clock error, from the migration's start; MAX while unknown. */
    private synchronized long computeEnd() {
        if (end != Long.MAX_VALUE) {
            return end;
        }
        long longest = 0;
        for (Endpoint e : previous) {
            try {
                InfoReply r = e.info();
                long error = Math.min(e.clockOffset().errorBound().toNanos() / 1_000L, 60_000_000L);
                longest = Math.max(longest, r.getMaxLeaseMicros() + r.getGraceMicros() + Math.max(error, 500_000L));
            } catch (LeaseException ex) {
                // Unknown: stay in migration (the safe side) and ask again next time.
                return Long.MAX_VALUE;
            }
        }
        end = start + longest;
        return end;
    }
}
