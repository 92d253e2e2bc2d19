package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code log tail -f} on a real store: a message appended after the tail started is printed tentative at the next
 * look (time moved by the manual clock), printed again sealed once its bucket is sealed, and interrupting the tail
 * ends it with exit code 0.
 */
class LogTailFollowTest {
    private static final Instant T0 = TestStore.T0;

    private TestStore fx;

    @BeforeEach
    void write() throws Exception {
        fx = new TestStore(getClass().getSimpleName());
        for (int i = 0; i < 4; i++) {
            fx.clock.set(T0.plusMillis(1_000L * i + 1));
            fx.append("orders", List.of(TestStore.lease("account/1", 1)), "m" + i);
        }
        fx.clock.set(T0.plusSeconds(5));
        fx.store.sealThrough("orders", T0, T0.plusSeconds(3));
    }

    @AfterEach
    void close() {
        fx.close();
    }

    /** Waits until the tail waits for its next look (its timer is the clock's only one). */
    private void awaitTailWaiting() throws InterruptedException {
        long end = System.nanoTime() + 30_000_000_000L;
        while (fx.clock.pendingTimers() != 1) {
            assertTrue(System.nanoTime() < end, "the tail never waited for its next look");
            Thread.sleep(1);
        }
    }

    @Test
    void followPrintsNewMessagesTentativeThenSealedUntilInterrupted() throws Exception {
        CliRun.Awaitable out = new CliRun.Awaitable();
        StringWriter err = new StringWriter();
        AtomicInteger code = new AtomicInteger(-1);
        Thread tail = new Thread(() -> code.set(LeaseholdCli.execute(fx.clock, new PrintWriter(out), new PrintWriter(err),
                false, "log", "tail", "--store", fx.root.toString(), "--log", "orders", "-f", "-n", "2", "--json",
                "--interval", "1s")), "tail");
        tail.start();
        try {
            assertTrue(out.await("\"m3\"", 30_000), out::text);
            awaitTailWaiting();
            fx.append("orders", List.of(TestStore.lease("account/2", 4)), "after");
            fx.clock.advance(Duration.ofSeconds(1));
            assertTrue(out.await("\"after\"", 30_000), out::text);

            awaitTailWaiting();
            fx.clock.set(T0.plusSeconds(9));
            fx.store.sealThrough("orders", T0, T0.plusSeconds(7));
            awaitTailWaiting();
            fx.clock.advance(Duration.ofSeconds(1));
            // The sealed line of "after" (the only message under account/2) is the last of that look.
            assertTrue(out.await("\"sealed\":true,\"leases\":[{\"name\":\"account/2\"", 30_000), out::text);
        } finally {
            tail.interrupt();
            tail.join(30_000);
        }
        assertEquals(0, code.get(), () -> out.text() + err);
        assertEquals("", err.toString());
        List<String> got = new ArrayList<>();
        for (JsonNode n : lines(out)) {
            got.add(n.get("text").asText() + (n.get("sealed").asBoolean() ? " sealed" : " tentative"));
        }
        assertEquals(List.of("m2 sealed", "m3 tentative", "after tentative", "m3 sealed", "after sealed"), got);
    }

    private static List<JsonNode> lines(CliRun.Awaitable out) throws Exception {
        List<JsonNode> l = new ArrayList<>();
        for (String s : out.text().split("\n")) {
            if (!s.isEmpty()) {
                l.add(Json.MAPPER.readTree(s));
            }
        }
        return l;
    }
}
