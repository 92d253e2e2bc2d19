package org.leasehold.etcd;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.RandomizedHistoryContract;

/**
 * The randomized history against a real one-member etcd, on a manual clock that a driver thread moves at about real
 * speed (a call to etcd takes real time).
 */
class EtcdRandomizedHistoryTest extends RandomizedHistoryContract {
    private volatile boolean moving;
    private Thread driver;

    @Override
    protected LeaseFixture startMoving(long seed) {
        EtcdFixture fixture = EtcdFixture.onSingleMember(new LeaseFixture.Settings(Duration.ofSeconds(1),
                Duration.ofMillis(200), Duration.ZERO, 4, 1_000));
        moving = true;
        driver = new Thread(() -> {
            while (moving) {
                fixture.advance(Duration.ofMillis(1));
                LockSupport.parkNanos(1_000_000);
            }
        }, "clock-driver");
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
