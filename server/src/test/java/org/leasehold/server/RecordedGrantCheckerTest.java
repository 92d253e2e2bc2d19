package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

/** The record checker finds each kind of violation in a hand-written history, and none in a correct one. */
class RecordedGrantCheckerTest {
    private final ObjectMapper json = new ObjectMapper();

    private RecordedGrantChecker checker(String... lines) throws Exception {
        RecordedGrantChecker c = new RecordedGrantChecker();
        int i = 0;
        for (String l : lines) {
            c.add(json.readTree(l.replace('\'', '"')), "test:" + ++i);
        }
        return c;
    }

    private static String grant(long gen, String holder, String mode, String kind, String at, String deadline, String floor,
            String writableFrom) {
        return "{'ev':'grant','name':'n','generation':" + gen + ",'holder':'" + holder + "','mode':'" + mode + "','kind':'"
                + kind + "','grantedAt':'2026-01-01T00:00:" + at + "Z','deadline':'2026-01-01T00:00:" + deadline
                + "Z','floor':'2026-01-01T00:00:" + floor + "Z','writableFrom':'2026-01-01T00:00:" + writableFrom + "Z'}";
    }

    private static String release(long gen, String holder, String at, String watermark) {
        return "{'ev':'release','name':'n','generation':" + gen + ",'holder':'" + holder + "','endedAt':'2026-01-01T00:00:"
                + at + "Z'" + (watermark == null ? "" : ",'watermark':'2026-01-01T00:00:" + watermark + "Z'") + "}";
    }

    private static String event(String ev, long gen, String holder, String deadline) {
        return "{'ev':'" + ev + "','name':'n','generation':" + gen + ",'holder':'" + holder
                + "','deadline':'2026-01-01T00:00:" + deadline + "Z'}";
    }

    @Test
    void aCorrectHistoryPasses() throws Exception {
        RecordedGrantChecker c = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "05", "00", "01"),
                release(1, "a", "02", "01.5"),
                grant(2, "b", "SHARED", "FULL", "02", "06", "01.5", "02"),
                grant(3, "c", "SHARED", "FULL", "03", "06", "01.5", "03"),
                grant(4, "d", "EXCLUSIVE", "TENTATIVE", "03", "04", "01.5", "03"),
                event("broken", 4, "d", "04"),
                event("expired", 2, "b", "06"),
                event("expired", 3, "c", "06"),
                grant(5, "e", "EXCLUSIVE", "TENTATIVE", "06", "07", "06", "06.2"),
                event("upgrade", 5, "e", "08"));
        assertEquals(List.of(), c.check());
    }

    @Test
    void overlappingExclusiveLeasesAreFound() throws Exception {
        List<String> v = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "05", "00", "01"),
                grant(2, "b", "SHARED", "TENTATIVE", "03", "06", "00", "03"),
                event("upgrade", 2, "b", "06")).check();
        assertEquals(1, v.size(), v.toString());
        assertTrue(v.get(0).startsWith("invariant 1"), v.toString());
    }

    @Test
    void aRenewalThatOutlastsTheNextGrantIsAnOverlap() throws Exception {
        List<String> v = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "02", "00", "01"),
                event("renew", 1, "a", "04"),
                grant(2, "b", "EXCLUSIVE", "FULL", "03", "06", "02", "03")).check();
        assertTrue(v.stream().anyMatch(s -> s.startsWith("invariant 1")), v.toString());
    }

    @Test
    void repeatedOrBackwardGenerationsAreFound() throws Exception {
        List<String> v = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "02", "00", "01"),
                grant(1, "b", "EXCLUSIVE", "FULL", "03", "04", "00", "03"),
                grant(3, "c", "EXCLUSIVE", "FULL", "05", "06", "02", "05"),
                grant(4, "d", "EXCLUSIVE", "FULL", "04.5", "04.9", "02", "04.5")).check();
        assertTrue(v.stream().anyMatch(s -> s.contains("granted twice")), v.toString());
        assertTrue(v.stream().anyMatch(s -> s.contains("lower generation")), v.toString());
    }

    /**
     * A lease taken on two servers reports its later part's grant time; with the request time recorded, a higher
     * generation granted between the request and that report is no violation, one granted before the request is.
     */
    @Test
    void aPartwiseGrantIsBoundedByItsRequestTime() throws Exception {
        String partwise = grant(1, "a", "EXCLUSIVE", "TENTATIVE", "02", "03", "00", "02")
                .replace("}", ",'requestedAt':'2026-01-01T00:00:01Z'}");
        assertTrue(checker(partwise, grant(2, "b", "EXCLUSIVE", "FULL", "01.5", "01.9", "00", "01.5")).check(false)
                .stream().noneMatch(s -> s.contains("lower generation")), "granted after the request: possible");
        List<String> v = checker(partwise, grant(2, "b", "EXCLUSIVE", "FULL", "00.5", "00.9", "00", "00.5")).check(false);
        assertTrue(v.stream().anyMatch(s -> s.contains("lower generation")), "granted before the request: " + v);
    }

    @Test
    void floorsBelowAWatermarkOrAnExpiredDeadlineAreFound() throws Exception {
        List<String> v = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "05", "00", "01"),
                release(1, "a", "02", "01.9"),
                grant(2, "b", "EXCLUSIVE", "FULL", "03", "04", "01", "03"),
                grant(3, "c", "EXCLUSIVE", "FULL", "05", "06", "03", "03.5")).check();
        assertTrue(v.stream().anyMatch(s -> s.startsWith("floor: n#2") && s.contains("watermark")), v.toString());
        assertTrue(v.stream().anyMatch(s -> s.startsWith("floor: n#3") && s.contains("expired")), v.toString());
        assertTrue(v.stream().anyMatch(s -> s.startsWith("writableFrom: n#3")), v.toString());
    }

    @Test
    void aLateReleaseAndEventsForUnknownGrantsAreFound() throws Exception {
        List<String> v = checker(
                grant(1, "a", "EXCLUSIVE", "FULL", "01", "02", "00", "01"),
                release(1, "a", "03", null),
                release(7, "x", "03", null)).check();
        assertTrue(v.stream().anyMatch(s -> s.startsWith("release after the deadline")), v.toString());
        assertTrue(v.stream().anyMatch(s -> s.contains("never granted")), v.toString());
    }
}
