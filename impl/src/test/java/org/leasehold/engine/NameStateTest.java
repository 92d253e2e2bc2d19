package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;

/**
 * A name's predecessor and bounded history, kept in primitive arrays, against a plain list of {@link MetadataEntry}
 * records that keeps the last {@code capacity} of everything recorded.
 */
class NameStateTest {
    private static final long T0 = 1_790_000_000_000_000L;

    @Test
    void historyKeepsTheLastEntriesOldestFirstAtEveryCapacityAndLength() {
        Random random = new Random(7);
        for (int capacity : new int[] {1, 2, 3, 4, 5, 7, 8, 16, 33}) {
            NameState st = new NameState("n", 0, T0, T0);
            List<MetadataEntry> model = new ArrayList<>();
            for (int i = 0; i < 3 * capacity + 5; i++) {
                MetadataEntry e = randomEntry(random, i);
                if (e.ending() == null) {
                    st.record(e.correlationId(), e.generation(), e.holder(), null, Micros.of(e.at()), Long.MIN_VALUE,
                            e.metadata(), capacity);
                } else {
                    st.ended(e.correlationId(), e.generation(), e.holder(), e.ending(), Micros.of(e.at()),
                            e.watermark() == null ? Long.MIN_VALUE : Micros.of(e.watermark()), e.metadata(), capacity);
                }
                model.add(e);
                List<MetadataEntry> expected = model.subList(Math.max(0, model.size() - capacity), model.size());
                assertEquals(expected, st.history(), "capacity " + capacity + " after " + (i + 1) + " entries");
            }
        }
    }

    @Test
    void predecessorIsTheLastHolderThatEndedNotARenewal() {
        NameState st = new NameState("n", 0, T0, T0);
        Predecessor first = st.predecessor();
        assertSame(CorrelationId.NONE, first.correlationId());
        assertEquals(Ending.UNKNOWN, first.ending());
        assertEquals(Micros.toInstant(T0), first.endedAt());
        assertNull(first.watermark());

        HolderId a = new HolderId("p", "a");
        CorrelationId id = new CorrelationId(5, 9);
        st.ended(id, 1, a, Ending.RELINQUISHED, T0 + 10, T0 + 7, "where=x", 16);
        st.record(new CorrelationId(5, 10), 2, a, null, T0 + 20, Long.MIN_VALUE, "progress", 16);
        Predecessor p = st.predecessor();
        assertEquals(new Predecessor(id, Ending.RELINQUISHED, Micros.toInstant(T0 + 10), Micros.toInstant(T0 + 7),
                "where=x"), p);

        st.ended(new CorrelationId(5, 10), 2, a, Ending.EXPIRED, T0 + 30, Long.MIN_VALUE, null, 16);
        assertEquals(new Predecessor(new CorrelationId(5, 10), Ending.EXPIRED, Micros.toInstant(T0 + 30), null, null),
                st.predecessor());
    }

    @Test
    void endingOfFindsOnlyEndedEntriesStillRemembered() {
        NameState st = new NameState("n", 0, T0, T0);
        HolderId a = new HolderId("p", "a");
        st.record(new CorrelationId(1, 1), 1, a, null, T0, Long.MIN_VALUE, "renewed", 2);
        assertNull(st.endingOf(1), "a renewal entry says nothing of how the grant ended");
        st.ended(new CorrelationId(1, 1), 1, a, Ending.BROKEN, T0 + 1, Long.MIN_VALUE, null, 2);
        assertEquals(Ending.BROKEN, st.endingOf(1).ending());
        st.ended(new CorrelationId(1, 2), 2, a, Ending.RELINQUISHED, T0 + 2, Long.MIN_VALUE, null, 2);
        st.ended(new CorrelationId(1, 3), 3, a, Ending.RELINQUISHED, T0 + 3, Long.MIN_VALUE, null, 2);
        assertNull(st.endingOf(1), "dropped with the oldest entries");
        assertEquals(new CorrelationId(1, 3), st.endingOf(3).correlationId());
    }

    @Test
    void theSameHolderAgainIsKeptOnce() {
        NameState st = new NameState("n", 0, T0, T0);
        st.ended(new CorrelationId(1, 1), 1, new HolderId("p", "a"), Ending.RELINQUISHED, T0, Long.MIN_VALUE, null, 4);
        st.ended(new CorrelationId(1, 2), 2, new HolderId("p", "a"), Ending.RELINQUISHED, T0, Long.MIN_VALUE, null, 4);
        List<MetadataEntry> h = st.history();
        assertSame(h.get(0).holder(), h.get(1).holder());
    }

    @Test
    void theFloorAndWritableFromOnlyRiseAndTheirInstantsFollow() {
        NameState st = new NameState("n", 0, T0, T0);
        assertEquals(Micros.toInstant(T0), st.floorInstant());
        st.raiseFloor(T0 + 5);
        assertEquals(Micros.toInstant(T0 + 5), st.floorInstant(), "a raised floor is not read from the old instant");
        st.raiseFloor(T0 + 3);
        assertEquals(T0 + 5, st.floor, "a floor never goes down");
        assertEquals(Micros.toInstant(T0 + 5), st.floorInstant());

        Instant granted = Micros.toInstant(T0 + 10);
        assertSame(granted, st.writableFromInstant(T0 + 10, granted), "no expiry: writable at once");
        st.raiseWritableFrom(T0 + 20);
        assertEquals(Micros.toInstant(T0 + 20), st.writableFromInstant(T0 + 10, granted), "after the grace");
        st.raiseWritableFrom(T0 + 30);
        assertEquals(Micros.toInstant(T0 + 30), st.writableFromInstant(T0 + 10, granted),
                "a raised writableFrom is not read from the old instant");
        st.raiseWritableFrom(T0 + 25);
        assertEquals(T0 + 30, st.writableFrom, "writableFrom never goes down");
        Instant late = Micros.toInstant(T0 + 31);
        assertSame(late, st.writableFromInstant(T0 + 31, late), "a grant after writableFrom writes at once");
        assertEquals(Micros.toInstant(T0 + 30), st.writableFromInstant(T0 + 29, Micros.toInstant(T0 + 29)));
    }

    private static MetadataEntry randomEntry(Random random, int i) {
        Ending ending = random.nextInt(4) == 0 ? null : Ending.values()[random.nextInt(Ending.values().length)];
        HolderId holder = new HolderId("p" + random.nextInt(3), "o" + random.nextInt(3));
        long at = T0 + i * 1000L + random.nextInt(1000);
        boolean watermark = ending != null && random.nextBoolean();
        return new MetadataEntry(new CorrelationId(random.nextLong(), random.nextLong()), i + 1L, holder, ending,
                Micros.toInstant(at), watermark ? Micros.toInstant(at - 5) : null, random.nextBoolean() ? "m" + i : null);
    }
}
