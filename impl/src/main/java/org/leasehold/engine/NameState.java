package org.leasehold.engine;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/** Everything the engine knows of one name. Guarded by its shard's lock. */
final class NameState {
    final String name;
    /** The last generation granted. */
    long generation;
    /** Highest watermark (or expired deadline) of the holders that ended, in micros. */
    long floor;
    /** No write before this after an unrelinquished expiry, in micros. */
    long writableFrom;
    /** What the next grant reports as its predecessor. */
    Predecessor predecessor;
    private Instant floorInstant;
    private Instant writableFromInstant;

    final List<Holding> holders = new ArrayList<>(2);
    final ArrayDeque<Waiter> waiters = new ArrayDeque<>(0);

    private MetadataEntry[] history;
    private int historyNext;
    private int historySize;

    long lastTouched;
    TimeSource.Timer wakeTimer;
    long wakeAt = Long.MAX_VALUE;

    NameState(String name, long generation, long floor, long now) {
        this.name = name;
        this.generation = generation;
        this.floor = floor;
        this.writableFrom = Long.MIN_VALUE;
        this.predecessor = new Predecessor(CorrelationId.NONE, Ending.UNKNOWN, Micros.toInstant(floor), null, null);
        this.lastTouched = now;
    }

    Instant floorInstant() {
        Instant f = floorInstant;
        if (f == null) {
            f = Micros.toInstant(floor);
            floorInstant = f;
        }
        return f;
    }

    /** When a new holder may write: {@code writableFrom}, or {@code grantedAt} if that is later. */
    Instant writableFromInstant(long grantedAt, Instant grantedAtInstant) {
        if (writableFrom <= grantedAt) {
            return grantedAtInstant;
        }
        Instant w = writableFromInstant;
        if (w == null) {
            w = Micros.toInstant(writableFrom);
            writableFromInstant = w;
        }
        return w;
    }

    void raiseFloor(long value) {
        if (value > floor) {
            floor = value;
            floorInstant = null;
        }
    }

    void raiseWritableFrom(long value) {
        if (value > writableFrom) {
            writableFrom = value;
            writableFromInstant = null;
        }
    }

    void record(MetadataEntry entry, int capacity) {
        if (history == null) {
            history = new MetadataEntry[Math.min(capacity, 4)];
        } else if (historySize == history.length && history.length < capacity) {
            MetadataEntry[] grown = new MetadataEntry[Math.min(capacity, history.length * 2)];
            for (int i = 0; i < historySize; i++) {
                grown[i] = history[(historyNext + i) % historySize];
            }
            history = grown;
            historyNext = historySize;
        }
        history[historyNext] = entry;
        historyNext = (historyNext + 1) % history.length;
        if (historySize < history.length) {
            historySize++;
        }
    }

    /** The history, oldest first. */
    List<MetadataEntry> history() {
        List<MetadataEntry> out = new ArrayList<>(historySize);
        int start = historySize < (history == null ? 0 : history.length) ? 0 : historyNext;
        for (int i = 0; i < historySize; i++) {
            out.add(history[(start + i) % history.length]);
        }
        return out;
    }

    /** The generation of a past grant if the history still remembers how it ended, else null. */
    MetadataEntry endingOf(long gen) {
        for (int i = 0; i < historySize; i++) {
            MetadataEntry e = history[i];
            if (e.generation() == gen && e.ending() != null) {
                return e;
            }
        }
        return null;
    }

    boolean idle() {
        return holders.isEmpty() && waiters.isEmpty();
    }
}
