package org.leasehold.engine;

import java.util.Iterator;

import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Forgets names idle for longer than the retention, keeping the highest floor and generation each shard forgot as the
 * start of names it sees again, every half retention (at least every second).
 *
 * <p>It visits the shards one at a time, each under its lock.
 */
final class Sweep {
    private static final System.Logger LOG = System.getLogger(EmbeddedLeaseService.class.getName());

    private final TimeSource time;
    private final Stripes stripes;
    private final Fencing fencing;
    private final Gate gate;
    private final long idleRetention;
    private volatile TimeSource.Timer first;

    Sweep(TimeSource time, Stripes stripes, Fencing fencing, Gate gate, long idleRetention) {
        this.time = time;
        this.stripes = stripes;
        this.fencing = fencing;
        this.gate = gate;
        this.idleRetention = idleRetention;
    }

    /** Schedules the first sweep one retention after {@code startedAt}. */
    void start(long startedAt) {
        first = time.schedule(Micros.plus(startedAt, idleRetention), this::sweep);
    }

    /** Cancels the first sweep if it is still to come; later ones stop by themselves once the engine is closed. */
    void cancel() {
        first.cancel();
    }

    /** Forgets idle names, keeping their floor and generation as a per-shard bound; reschedules itself. */
    private void sweep() {
        if (gate.closed()) {
            return;
        }
        int forgotten = 0;
        for (Stripes.Shard s : stripes.all()) {
            s.lock.lock();
            try {
                long now = time.nowMicros();
                Iterator<NameState> it = s.names.values().iterator();
                while (it.hasNext()) {
                    NameState st = it.next();
                    fencing.clean(st, now);
                    if (st.idle() && st.wakeTimer == null && st.lastTouched + idleRetention <= now
                            && st.writableFrom <= now && st.floor < now) {
                        s.forgottenFloor = Math.max(s.forgottenFloor, st.floor);
                        s.forgottenGeneration = Math.max(s.forgottenGeneration, st.generation);
                        it.remove();
                        forgotten++;
                    }
                }
            } finally {
                s.lock.unlock();
            }
        }
        if (forgotten > 0) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-1003 forgot {0} idle names", forgotten);
        }
        if (!gate.closed()) {
            time.schedule(Micros.plus(time.nowMicros(), Math.max(1_000_000L, idleRetention / 2)), this::sweep);
        }
    }

    /** The number of names remembered, counted shard by shard under each lock. */
    int remembered() {
        int n = 0;
        for (Stripes.Shard s : stripes.all()) {
            s.lock.lock();
            try {
                n += s.names.size();
            } finally {
                s.lock.unlock();
            }
        }
        return n;
    }
}
