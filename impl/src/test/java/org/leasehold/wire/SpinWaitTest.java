package org.leasehold.wire;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.wire.SpinWait.Outcome;

/**
 * The socket transport's active wait, on a real loopback connection; its budget runs on a test clock that moves a
 * microsecond at every reading, so that no test depends on how fast the machine is.
 */
class SpinWaitTest {
    private static final Duration BUDGET = Duration.ofNanos(50_000);

    private ServerSocket listener;
    private Socket client;
    private Socket server;
    private InputStream in;
    private final AtomicLong nanos = new AtomicLong();

    @BeforeEach
    void connect() throws IOException {
        listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        client = new Socket(InetAddress.getLoopbackAddress(), listener.getLocalPort());
        server = listener.accept();
        in = client.getInputStream();
    }

    @AfterEach
    void close() throws IOException {
        client.close();
        server.close();
        listener.close();
    }

    private SpinWait spinWait() {
        return new SpinWait(BUDGET, () -> nanos.addAndGet(1_000));
    }

    @Test
    void bytesAlreadyThereOrArrivingAreAHitAndStayUnread() throws IOException {
        SpinWait spin = new SpinWait(Duration.ofSeconds(30));
        server.getOutputStream().write(new byte[] {1, 2, 3});
        // On the real clock with a long budget: returns as soon as the bytes are readable, whenever that is.
        assertEquals(Outcome.HIT, spin.await(in));
        assertEquals(Outcome.HIT, spin.await(in), "the wait reads nothing: the bytes are still there");
        assertEquals(3, in.readNBytes(3).length);
    }

    @Test
    void noBytesWithinTheBudgetIsAMissAfterTheBudgetHasPassed() throws IOException {
        SpinWait spin = spinWait();
        long before = nanos.get();
        assertEquals(Outcome.MISS, spin.await(in));
        long spent = nanos.get() - before;
        assertTrue(spent >= BUDGET.toNanos() && spent <= BUDGET.toNanos() + 2_000,
                "the wait lasted its budget on the wait's clock: " + spent + " ns");
        assertEquals(0, in.available(), "and read nothing");
    }

    @Test
    void afterMissesInARowItWaitsOnlyOnceInAWhileUntilAWaitSucceedsAgain() throws IOException {
        SpinWait spin = spinWait();
        for (int i = 0; i < SpinWait.MISSES_TO_PAUSE; i++) {
            assertEquals(Outcome.MISS, spin.await(in), "miss " + (i + 1));
        }
        // Paused: a wait returns at once (the clock is not even read), except one in PROBE_EVERY.
        for (int round = 0; round < 2; round++) {
            for (int i = 1; i < SpinWait.PROBE_EVERY; i++) {
                long before = nanos.get();
                assertEquals(Outcome.SKIPPED, spin.await(in), "paused, call " + i);
                assertEquals(before, nanos.get(), "a skipped wait does not wait");
            }
            assertEquals(Outcome.MISS, spin.await(in), "the probe of round " + round + " waits, and misses");
        }
        // Answers become fast again: the next probe hits, and waiting is back for every call.
        server.getOutputStream().write(1);
        Outcome probe = Outcome.SKIPPED;
        int calls = 0;
        while (probe == Outcome.SKIPPED) {
            probe = spin.await(in);
            calls++;
        }
        assertEquals(Outcome.HIT, probe);
        assertEquals(SpinWait.PROBE_EVERY, calls, "the probe came after the same number of skipped calls");
        assertEquals(1, in.read());
        assertEquals(Outcome.MISS, spin.await(in), "after a hit every call waits again");
    }

    @Test
    void aPeerThatClosedIsAMissAndTheReadThenSeesTheEnd() throws IOException {
        SpinWait spin = spinWait();
        server.close();
        assertEquals(Outcome.MISS, spin.await(in));
        assertEquals(-1, in.read());
    }

    @Test
    void aZeroBudgetIsOffAndANegativeOneIsRefused() throws IOException {
        SpinWait off = new SpinWait(Duration.ZERO);
        assertFalse(off.enabled());
        server.getOutputStream().write(1);
        assertEquals(Outcome.SKIPPED, off.await(in));
        assertTrue(spinWait().enabled());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new SpinWait(Duration.ofNanos(-1)));
        assertTrue(e.getMessage().contains("zero (off) or more"), e.getMessage());
    }

    @Test
    void theClientsSpinWaitPropertyDefaultsTo50MicrosecondsTakesZeroForOffAndRefusesWhatIsOutOfRange() {
        Map<String, String> base = Map.of("servers", "127.0.0.1:7420", "transport", "socket");
        assertEquals(Duration.ofNanos(50_000), RemoteClientConfig.fromProperties(base).spinWait());
        assertEquals(SpinWait.DEFAULT, RemoteClientConfig.builder("127.0.0.1:7420").build().spinWait());
        assertEquals(Duration.ZERO, RemoteClientConfig.fromProperties(with(base, "0")).spinWait());
        assertEquals(Duration.ofNanos(200_000), RemoteClientConfig.fromProperties(with(base, " 200us ")).spinWait());
        assertEquals(Duration.ofMillis(10), RemoteClientConfig.fromProperties(with(base, "10ms")).spinWait());
        for (String bad : new String[] {"11ms", "-1ms", "1s"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> RemoteClientConfig.fromProperties(with(base, bad)), bad);
            assertTrue(e.getMessage().contains("spinWait is") && e.getMessage().contains("use 0 (off) to 10ms"),
                    e.getMessage());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RemoteClientConfig.fromProperties(with(base, "fast")));
        assertTrue(e.getMessage().contains("spinWait 'fast' is not a duration"), e.getMessage());
    }

    private static Map<String, String> with(Map<String, String> base, String spinWait) {
        java.util.HashMap<String, String> m = new java.util.HashMap<>(base);
        m.put("spinWait", spinWait);
        return m;
    }
}
