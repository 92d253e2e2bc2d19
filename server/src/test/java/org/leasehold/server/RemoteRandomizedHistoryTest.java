package org.leasehold.server;

import java.time.Duration;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.RandomizedHistoryContract;

/**
 * The randomized history through the remote client against a real server process, whose test clock a driver thread
 * keeps moving over the wire (1 ms per call), so that leases expire, waits time out and paused holders come back late.
 */
class RemoteRandomizedHistoryTest extends RandomizedHistoryContract {
    private static ServerProcess server;
    private static TestClockClient clock;
    private volatile boolean moving;
    private Thread driver;

    @BeforeAll
    static void startServer() throws Exception {
        server = ServerProcess.start("randomized", "--test-clock=" + RemoteFixture.START);
        clock = new TestClockClient(server.address());
    }

    @AfterAll
    static void stopServer() throws Exception {
        clock.close();
        server.close();
    }

    @Override
    protected LeaseFixture startMoving(long seed) {
        RemoteFixture fixture = new RemoteFixture(server, clock, new LeaseFixture.Settings(Duration.ofSeconds(1),
                Duration.ofMillis(200), Duration.ZERO, 4, 1_000));
        moving = true;
        driver = new Thread(() -> {
            while (moving) {
                clock.advance(Duration.ofMillis(1));
            }
        }, "test-clock-driver");
        driver.setDaemon(true);
        driver.start();
        return fixture;
    }

    @Override
    protected void stopMoving() {
        moving = false;
        try {
            if (driver != null) {
                driver.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
