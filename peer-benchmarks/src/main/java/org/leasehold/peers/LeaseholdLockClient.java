package org.leasehold.peers;

import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteLeaseService;

/**
 * Leasehold's lease server through its own client, {@link RemoteLeaseService}: an exclusive full lease, waiting on
 * the server (FIFO, notified) when the name is held, released without a watermark. By default one client (one HTTP/2
 * connection) shared by every thread; with several, threads are spread over them round-robin (each client's calls are
 * handled by one event-loop thread on each side, so more connections can use more cores). Each thread is its own
 * holder.
 */
final class LeaseholdLockClient implements LockClient<Lease> {
    private final String system;
    private final RemoteLeaseService[] clients;
    private final AtomicInteger nextClient = new AtomicInteger();
    private final ThreadLocal<RemoteLeaseService> mine = ThreadLocal.withInitial(this::assign);
    private final ThreadLocal<HolderId> holder = ThreadLocal.withInitial(() -> HolderId.currentThread("peer-benchmark"));

    LeaseholdLockClient(String system, String address, int connections) throws InterruptedException {
        if (connections < 1) {
            throw new IllegalArgumentException("--leasehold-connections must be at least 1, not " + connections);
        }
        this.system = system;
        this.clients = new RemoteLeaseService[connections];
        for (int i = 0; i < connections; i++) {
            clients[i] = RemoteLeaseService.connect(Map.of("servers", address));
        }
        // A fresh server grants nothing during its quiet period: wait it out rather than count it as errors.
        long waitMillis = clients[0].availableFrom().toEpochMilli() - clients[0].now().toEpochMilli();
        if (waitMillis > 0) {
            Thread.sleep(waitMillis + 50);
        }
    }

    private RemoteLeaseService assign() {
        return clients[Math.floorMod(nextClient.getAndIncrement(), clients.length)];
    }

    @Override
    public String system() {
        return system;
    }

    @Override
    public Lease acquire(String name) throws Exception {
        return mine.get().acquire(LeaseRequest.builder(holder.get(), name).leaseFor(LEASE_TIME).waitFor(MAX_WAIT).build());
    }

    @Override
    public void release(Lease lease) throws Exception {
        mine.get().release(lease, null, null);
    }

    @Override
    public void close() {
        for (RemoteLeaseService c : clients) {
            c.close();
        }
    }
}
