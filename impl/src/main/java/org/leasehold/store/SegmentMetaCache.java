package org.leasehold.store;

import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

import org.leasehold.store.format.SegmentFile;

/**
 * The verified metadata (index, table and trailer) of the segments a store read recently, so that a read does not
 * load and checksum them again. A published segment never changes (it is written under a prepared name, forced, then
 * linked), so an entry is found by the segment's path, its size and its trailer's bytes (which hold the checksum of
 * the whole metadata); a file replaced under the same name with other contents misses and is verified again. What a
 * read takes from the cache is what it would have parsed from bytes it had just checked; every entry a read returns
 * is still checked (entry header, frame header and checksum, timestamp) as it is read.
 *
 * <p>Bounded by the bytes of metadata it holds ({@link #BUDGET}), least recently used first out; a segment whose
 * metadata alone is larger than the budget is not kept. Thread-safe.
 */
final class SegmentMetaCache {
    /** The most metadata bytes kept: the index and table of about a day of hourly segments of a busy log. */
    static final long BUDGET = 64L << 20;

    /** The verified metadata of one segment. */
    record Meta(SegmentFile.Trailer trailer, byte[] meta, SegmentFile.Table table) {
    }

    private record Key(String path, long size, byte[] trailer) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.size == size && k.path.equals(path) && Arrays.equals(k.trailer, trailer);
        }

        @Override
        public int hashCode() {
            return path.hashCode() * 31 + Long.hashCode(size) * 17 + Arrays.hashCode(trailer);
        }
    }

    private final long budget;
    private final LinkedHashMap<Key, Meta> entries = new LinkedHashMap<>(16, 0.75f, true);
    private long bytes;
    private long hits;
    private long misses;

    SegmentMetaCache() {
        this(BUDGET);
    }

    SegmentMetaCache(long budget) {
        this.budget = budget;
    }

    /** The cached metadata of the segment at {@code path} of {@code size} bytes ending in {@code trailer}, or null. */
    synchronized Meta get(String path, long size, byte[] trailer) {
        Meta m = entries.get(new Key(path, size, trailer));
        if (m == null) {
            misses++;
        } else {
            hits++;
        }
        return m;
    }

    /** Keeps {@code m}, verified, for the segment at {@code path} of {@code size} bytes ending in {@code trailer}. */
    synchronized void put(String path, long size, byte[] trailer, Meta m) {
        long cost = m.meta().length;
        if (cost > budget) {
            return;
        }
        Meta old = entries.put(new Key(path, size, trailer.clone()), m);
        bytes += cost - (old == null ? 0 : old.meta().length);
        Iterator<Map.Entry<Key, Meta>> it = entries.entrySet().iterator();
        while (bytes > budget && it.hasNext()) {
            Map.Entry<Key, Meta> e = it.next();
            bytes -= e.getValue().meta().length;
            it.remove();
        }
    }

    /** Bytes of metadata held. */
    synchronized long bytes() {
        return bytes;
    }

    /** {@code {hits, misses}} so far. */
    synchronized long[] counts() {
        return new long[] {hits, misses};
    }
}
