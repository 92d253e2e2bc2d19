package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;

/** Wound-wait's order between holdings, and a holding's one-way status. */
class HoldingTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");

    private static Holding holding(HolderId holder, long age, String... names) {
        return new Holding(holder, LeaseMode.EXCLUSIVE, LeaseKind.FULL, age, 0, 100, 0, names, null);
    }

    @Test
    void theLaterStartIsYoungerAndATieIsBrokenByIdentityOneWayOnly() {
        assertTrue(holding(A, 11).youngerThan(10, B), "a later start is younger, whatever the identities");
        assertFalse(holding(B, 10).youngerThan(11, A), "an earlier start is older, whatever the identities");
        assertTrue(holding(B, 10).youngerThan(10, A), "same age: the greater identity is the younger");
        assertFalse(holding(A, 10).youngerThan(10, B), "same age: the smaller identity is the older");
        assertFalse(holding(A, 10).youngerThan(10, new HolderId("p", "a")), "no one is younger than itself");
    }

    @Test
    void aHoldingEndsOnceAndIsLiveOnlyBeforeItsDeadline() {
        Holding h = holding(A, 1, "x");
        assertTrue(h.isLive(99));
        assertFalse(h.isLive(100), "the deadline itself is past");
        assertTrue(h.end(Holding.BROKEN, 50));
        assertEquals(Holding.BROKEN, h.status());
        assertEquals(50, h.endedAt);
        assertFalse(h.isLive(60), "an ended holding is not live before its deadline");
        assertFalse(h.end(Holding.RELEASED, 70), "the first ending stays");
        assertEquals(Holding.BROKEN, h.status());
        assertEquals(50, h.endedAt, "a late ending does not move the time");
    }

    @Test
    void indexOfFindsEachNameAndRefusesOthers() {
        Holding h = holding(A, 1, "x", "y", "z");
        assertEquals(0, h.indexOf("x"));
        assertEquals(2, h.indexOf("z"));
        assertEquals("holding does not cover w",
                assertThrows(IllegalStateException.class, () -> h.indexOf("w")).getMessage());
        assertEquals(0, holding(A, 1, "only").indexOf("only"));
    }
}
