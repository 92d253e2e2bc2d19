package org.leasehold.engine;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Everything the engine knows of one name. Guarded by its shard's lock.
 *
 * <p>What outlives a grant (the predecessor the next grant reports, the metadata history) is kept in primitive
 * fields and arrays, not in objects made per grant: a state lives as long as its name is in use (in the old
 * generation of the collector), and objects made per cycle and stored into it would each survive a young collection
 * and be copied, then promoted. The objects the API hands out ({@link Predecessor}, {@link MetadataEntry}) are made
 * when asked for.
 */
final class NameState {
    /** Longs per history entry: correlation id (high, low), generation, at, watermark. */
    private static final int STRIDE = 5;
    /** {@link #historyEnding} of an entry published on renewal (no ending). */
    private static final byte NO_ENDING = -1;
    private static final Ending[] ENDINGS = Ending.values();

    final String name;
    /** The last generation granted. */
    long generation;
    /** Highest watermark (or expired deadline) of the holders that ended, in micros. */
    long floor;
    /** No write before this after an unrelinquished expiry, in micros. */
    long writableFrom;
    private Instant floorInstant;
    private Instant writableFromInstant;

    // What the next grant reports as its predecessor (see predecessor()).
    private long predHigh;
    private long predLow;
    private Ending predEnding;
    private long predAt;
    /** In micros, or {@link Long#MIN_VALUE} for none. */
    private long predWatermark;
    private String predMetadata;

    final List<Holding> holders = new ArrayList<>(2);
    final ArrayDeque<Waiter> waiters = new ArrayDeque<>(0);

    // The metadata history: a ring of entries, STRIDE longs, an ending and two references each (holder, metadata).
    private long[] historyLongs;
    private byte[] historyEnding;
    private Object[] historyRefs;
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
        this.predEnding = Ending.UNKNOWN;
        this.predAt = floor;
        this.predWatermark = Long.MIN_VALUE;
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

    /** What the next grant reports as its predecessor: the holder that ended last, or the floor's bound if none. */
    Predecessor predecessor() {
        CorrelationId id = predEnding == Ending.UNKNOWN && predHigh == 0 && predLow == 0 ? CorrelationId.NONE
                : new CorrelationId(predHigh, predLow);
        return new Predecessor(id, predEnding, Micros.toInstant(predAt),
                predWatermark == Long.MIN_VALUE ? null : Micros.toInstant(predWatermark), predMetadata);
    }

    /**
     * Records that a holder ended ({@code ending} not null): it becomes the predecessor of the next grant and an entry
     * of the history. {@code at} and {@code watermark} are in micros ({@link Long#MIN_VALUE}: no watermark).
     */
    void ended(CorrelationId id, long gen, HolderId holder, Ending ending, long at, long watermark, String metadata,
            int capacity) {
        predHigh = id.high();
        predLow = id.low();
        predEnding = ending;
        predAt = at;
        predWatermark = watermark;
        predMetadata = metadata;
        record(id, gen, holder, ending, at, watermark, metadata, capacity);
    }

    /** Adds an entry to the history, dropping the oldest beyond {@code capacity}; {@code ending} null on renewal. */
    void record(CorrelationId id, long gen, HolderId holder, Ending ending, long at, long watermark, String metadata,
            int capacity) {
        if (historyLongs == null) {
            allocate(Math.min(capacity, 4));
        } else if (historySize == historyEnding.length && historyEnding.length < capacity) {
            grow(Math.min(capacity, historyEnding.length * 2));
        }
        int i = historyNext;
        if (historySize > 0) {
            // The same holder again (a process re-taking its own name): share the one already kept.
            HolderId last = (HolderId) historyRefs[2 * ((i + historyEnding.length - 1) % historyEnding.length)];
            if (holder.equals(last)) {
                holder = last;
            }
        }
        int l = STRIDE * i;
        historyLongs[l] = id.high();
        historyLongs[l + 1] = id.low();
        historyLongs[l + 2] = gen;
        historyLongs[l + 3] = at;
        historyLongs[l + 4] = watermark;
        historyEnding[i] = ending == null ? NO_ENDING : (byte) ending.ordinal();
        // Stored only when they differ from the entry overwritten: each store of a reference into this long-lived
        // array marks its card for the collector, and a name is mostly re-taken by the same holder without metadata.
        if (historyRefs[2 * i] != holder) {
            historyRefs[2 * i] = holder;
        }
        if (historyRefs[2 * i + 1] != metadata) {
            historyRefs[2 * i + 1] = metadata;
        }
        historyNext = (i + 1) % historyEnding.length;
        if (historySize < historyEnding.length) {
            historySize++;
        }
    }

    private void allocate(int n) {
        historyLongs = new long[STRIDE * n];
        historyEnding = new byte[n];
        historyRefs = new Object[2 * n];
    }

    /** Makes room for {@code n} entries, the existing ones moved to the front, oldest first. */
    private void grow(int n) {
        long[] longs = historyLongs;
        byte[] endings = historyEnding;
        Object[] refs = historyRefs;
        int start = oldest();
        allocate(n);
        for (int k = 0; k < historySize; k++) {
            int from = (start + k) % endings.length;
            System.arraycopy(longs, STRIDE * from, historyLongs, STRIDE * k, STRIDE);
            historyEnding[k] = endings[from];
            historyRefs[2 * k] = refs[2 * from];
            historyRefs[2 * k + 1] = refs[2 * from + 1];
        }
        historyNext = historySize;
    }

    /** The slot of the oldest entry. */
    private int oldest() {
        return historySize < historyEnding.length ? 0 : historyNext;
    }

    private MetadataEntry entry(int i) {
        int l = STRIDE * i;
        byte e = historyEnding[i];
        long wm = historyLongs[l + 4];
        return new MetadataEntry(new CorrelationId(historyLongs[l], historyLongs[l + 1]), historyLongs[l + 2],
                (HolderId) historyRefs[2 * i], e == NO_ENDING ? null : ENDINGS[e], Micros.toInstant(historyLongs[l + 3]),
                wm == Long.MIN_VALUE ? null : Micros.toInstant(wm), (String) historyRefs[2 * i + 1]);
    }

    /** The history, oldest first. */
    List<MetadataEntry> history() {
        List<MetadataEntry> out = new ArrayList<>(historySize);
        if (historySize == 0) {
            return out;
        }
        int start = oldest();
        for (int k = 0; k < historySize; k++) {
            out.add(entry((start + k) % historyEnding.length));
        }
        return out;
    }

    /** How the grant of generation {@code gen} ended, if the history still remembers it, else null. */
    MetadataEntry endingOf(long gen) {
        for (int i = 0; i < historySize; i++) {
            if (historyLongs[STRIDE * i + 2] == gen && historyEnding[i] != NO_ENDING) {
                return entry(i);
            }
        }
        return null;
    }

    boolean idle() {
        return holders.isEmpty() && waiters.isEmpty();
    }
}
