package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.RandomizedHistoryContract;

/** The randomized history, against the embedded engine on a manual clock that a driver thread keeps moving. */
class EmbeddedRandomizedHistoryTest extends RandomizedHistoryContract {
    private volatile boolean moving;
    private Thread driver;
    private EmbeddedFixture fixture;

    @Override
    protected LeaseFixture startMoving(long seed) {
        fixture = new EmbeddedFixture(new LeaseFixture.Settings(Duration.ofSeconds(1),
                Duration.ofMillis(200), Duration.ZERO, 4, 1_000));
        moving = true;
        driver = new Thread(() -> {
            while (moving) {
                fixture.advance(Duration.ofMillis(1));
                LockSupport.parkNanos(20_000);
            }
        }, "clock-driver");
        driver.setDaemon(true);
        driver.start();
        return fixture;
    }

    /**
     * Once every lease is over and every name looked at (which cleans it), wound-wait keeps nothing of any holder:
     * no holder counted as waiting, no name spared for one.
     */
    @Override
    protected void afterHistory(long seed) throws Exception {
        fixture.advance(Duration.ofSeconds(5));
        EmbeddedLeaseService engine = (EmbeddedLeaseService) fixture.service();
        engine.inspect("", 1_000);
        assertEquals(0, engine.woundWaitEntries(), "seed " + seed + ": wound-wait keeps entries of holders");
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
