package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.ClockOffset;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.SteppedClock;
import org.leasehold.time.SystemTimeSource;

/**
 * A client whose clock is stepped back an hour while it runs (an operator, a bad NTP source): what it waits for in
 * elapsed time still comes on time. Its periodic measurement of the server's clock, which is what sees the step, runs
 * after its interval and not an hour later; an acquisition the server does not answer (the proxy between them stalled)
 * fails after its call timeout, not an hour later. Before, both timers ran on the client's clock and waited for it to
 * read their time again.
 */
class ClientClockStepTest {
    private static final HolderId ME = new HolderId("clock-step-test", "t1");

    private final Closing closing = new Closing();
    private final SystemTimeSource wall = closing.later(new SystemTimeSource("clock-step-wall"));

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private LeaseServer server() throws Exception {
        return closing.later(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withSocket(ServerConfig.SocketSettings.loopback())));
    }

    private RemoteLeaseService client(String address, RemoteClientConfig.Transport transport, SteppedClock clock) {
        SystemTimeSource time = closing.later(new SystemTimeSource(clock, "clock-step-client"));
        return closing.later(new RemoteLeaseService(RemoteClientConfig.builder(address).transport(transport)
                .callTimeout(Duration.ofSeconds(1)).clockSyncInterval(Duration.ofMillis(200)).build(), time));
    }

    @Test
    void theClockMeasurementSeesAStepBackWithinItsIntervalNotAnHourLater() throws Exception {
        LeaseServer server = server();
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            SteppedClock clock = new SteppedClock(wall.clock());
            RemoteLeaseService client = client(server.address(), transport, clock);
            client.release(client.acquire(LeaseRequest.builder(ME, "step/" + transport).build()), null, null);
            assertTrue(client.clockOffset().offset().abs().compareTo(Duration.ofSeconds(5)) < 0,
                    transport + ": the same clock at first: " + client.clockOffset());
            clock.step(Duration.ofHours(-1));
            ClockOffset seen = null;
            for (int i = 0; i < 200; i++) {
                seen = client.clockOffset();
                if (seen.offset().compareTo(Duration.ofMinutes(59)) > 0) {
                    break;
                }
                Thread.sleep(50);
            }
            assertTrue(seen.offset().compareTo(Duration.ofMinutes(59)) > 0
                    && seen.offset().compareTo(Duration.ofMinutes(61)) < 0, transport + ": the step back of an hour "
                    + "measured within 10 s (the interval is 200 ms): " + seen);
        }
    }

    @Test
    void anUnansweredAcquisitionFailsAfterItsCallTimeoutThoughTheClockSteppedBack() throws Exception {
        // On gRPC: the proxy stands between the client and the server's gRPC port (a socket-transport client learns
        // the server's socket port from it and connects there directly). The timer is the same on both transports.
        LeaseServer server = server();
        RemoteClientConfig.Transport transport = RemoteClientConfig.Transport.GRPC;
        try (TcpProxy proxy = new TcpProxy(server.port())) {
            SteppedClock clock = new SteppedClock(wall.clock());
            RemoteLeaseService client = client(proxy.address(), transport, clock);
            client.release(client.acquire(LeaseRequest.builder(ME, "warm").build()), null, null);
            proxy.stall(true);
            // The proxy's read in flight when it stalled still passes what it reads: an answer of its own.
            CompletableFuture<Lease> absorbed = client.acquireAsync(LeaseRequest.builder(ME, "absorbed").build());
            try {
                absorbed.get(5, TimeUnit.SECONDS);
            } catch (ExecutionException | java.util.concurrent.TimeoutException passedOrNot) {
                // Either way, nothing passes from now on.
            }
            long start = System.nanoTime();
            CompletableFuture<Lease> unanswered = client.acquireAsync(LeaseRequest.builder(ME, "stalled").build());
            clock.step(Duration.ofHours(-1));
            ExecutionException e = assertThrows(ExecutionException.class, () -> unanswered.get(20, TimeUnit.SECONDS),
                    "no answer through the stalled proxy: the call fails after its timeout of 1 s");
            long tookMillis = (System.nanoTime() - start) / 1_000_000;
            assertTrue(e.getCause() instanceof LeaseServiceUnavailableException, e.getCause().toString());
            assertTrue(e.getCause().getMessage().contains("did not answer the acquisition within 1000 ms"),
                    e.getCause().getMessage());
            assertTrue(tookMillis < 10_000, "failed after " + tookMillis + " ms");
        }
    }
}
