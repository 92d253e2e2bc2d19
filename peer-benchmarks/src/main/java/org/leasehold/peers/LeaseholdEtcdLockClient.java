package org.leasehold.peers;

import java.net.URI;
import java.util.List;

import org.leasehold.etcd.EtcdConfig;
import org.leasehold.etcd.EtcdLeaseService;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.SystemTimeSource;

/**
 * Leasehold's etcd backend in the harness's process, as an application (or a lease server in front of etcd) uses it:
 * one {@link EtcdLeaseService} shared by every thread, each thread its own holder, an exclusive full lease of 10 s
 * waiting up to 30 s (FIFO in etcd, woken by its watch), released without a watermark. Its keys live under a prefix
 * of their own for each harness invocation, so a run's records carry the history of the earlier runs' grants, as a
 * name in use does.
 */
final class LeaseholdEtcdLockClient implements LockClient<Lease> {
    private final SystemTimeSource time = new SystemTimeSource("peer-benchmark-etcd-clock");
    private final EtcdLeaseService service;
    private final ThreadLocal<HolderId> holder = ThreadLocal.withInitial(() -> HolderId.currentThread("peer-benchmark"));

    LeaseholdEtcdLockClient(String endpoint, String prefix) {
        EtcdConfig config = EtcdConfig.defaults(List.of(URI.create(endpoint))).withPrefix(prefix).validate();
        this.service = new EtcdLeaseService(config, time);
    }

    @Override
    public String system() {
        return "leasehold-etcd";
    }

    @Override
    public Lease acquire(String name) throws Exception {
        return service.acquire(LeaseRequest.builder(holder.get(), name).leaseFor(LEASE_TIME).waitFor(MAX_WAIT).build());
    }

    @Override
    public void release(Lease lease) throws Exception {
        service.release(lease, null, null);
    }

    @Override
    public void close() {
        service.close();
        time.close();
    }
}
