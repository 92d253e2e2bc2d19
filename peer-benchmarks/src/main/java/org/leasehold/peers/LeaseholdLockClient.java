package org.leasehold.peers;

import java.util.Map;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Leasehold's lease server through its own client, {@link RemoteLeaseService}: an exclusive full lease, waiting on
 * the server (FIFO, notified) when the name is held, released without a watermark. One client (one HTTP/2 connection)
 * shared by every thread, each thread its own holder identity.
 */
final class LeaseholdLockClient implements LockClient<Lease> {
    private final RemoteLeaseService leases;
    private final ThreadLocal<HolderId> holder = ThreadLocal.withInitial(() -> HolderId.currentThread("peer-benchmark"));

    LeaseholdLockClient(String address) throws InterruptedException {
        this.leases = RemoteLeaseService.connect(Map.of("servers", address));
        // A fresh server grants nothing during its quiet period: wait it out rather than count it as errors.
        long waitMillis = leases.availableFrom().toEpochMilli() - leases.now().toEpochMilli();
        if (waitMillis > 0) {
            Thread.sleep(waitMillis + 50);
        }
    }

    @Override
    public String system() {
        return "leasehold";
    }

    @Override
    public Lease acquire(String name) throws Exception {
        return leases.acquire(LeaseRequest.builder(holder.get(), name).leaseFor(LEASE_TIME).waitFor(MAX_WAIT).build());
    }

    @Override
    public void release(Lease lease) throws Exception {
        leases.release(lease, null, null);
    }

    @Override
    public void close() {
        leases.close();
    }
}
