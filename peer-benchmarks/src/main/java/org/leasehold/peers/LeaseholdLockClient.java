package org.leasehold.peers;

import java.util.Map;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig.Transport;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Leasehold's lease server through its own client, {@link RemoteLeaseService}: an exclusive full lease, waiting on
 * the server (FIFO, notified) when the name is held, released without a watermark. One client shared by every thread,
 * with one HTTP/2 connection by default; with several ({@code connections}), each name's calls take one of them (each
 * connection's calls are handled by one event-loop thread on each side, so more connections can use more cores).
 * Each thread is its own holder. On the socket transport ({@code leasehold-socket}) each calling thread writes its
 * request and, while no other thread reads the connection, reads its answer itself, waiting actively for it first for
 * up to {@code --leasehold-spin-wait} when no other thread waits beside it.
 */
final class LeaseholdLockClient implements LockClient<Lease> {
    private final String system;
    private final RemoteLeaseService client;
    private final ThreadLocal<HolderId> holder = ThreadLocal.withInitial(() -> HolderId.currentThread("peer-benchmark"));

    LeaseholdLockClient(String system, String address, int connections, Transport transport, String spinWait)
            throws InterruptedException {
        if (connections < 1) {
            throw new IllegalArgumentException("--leasehold-connections must be at least 1, not " + connections);
        }
        this.system = system;
        this.client = RemoteLeaseService.connect(Map.of("servers", address, "connections", Integer.toString(connections),
                "transport", transport.name(), "spinWait", spinWait));
        // A fresh server grants nothing during its quiet period: wait it out rather than count it as errors.
        long waitMillis = client.availableFrom().toEpochMilli() - client.now().toEpochMilli();
        if (waitMillis > 0) {
            Thread.sleep(waitMillis + 50);
        }
    }

    @Override
    public String system() {
        return system;
    }

    @Override
    public Lease acquire(String name) throws Exception {
        return client.acquire(LeaseRequest.builder(holder.get(), name).leaseFor(LEASE_TIME).waitFor(MAX_WAIT).build());
    }

    @Override
    public void release(Lease lease) throws Exception {
        client.release(lease, null, null);
    }

    @Override
    public void close() {
        client.close();
    }
}
