package org.leasehold.peers;

import java.nio.charset.StandardCharsets;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.support.CloseableClient;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.grpc.stub.StreamObserver;

/**
 * etcd through jetcd, the way etcd's own {@code concurrency} package locks: each thread keeps one session lease
 * (granted once, kept alive by jetcd's keep-alive stream) and takes locks with the lock service under it, so a cycle is
 * two calls ({@code Lock}, which waits on the server while the name is held, and {@code Unlock}). A lease per
 * acquisition would add a grant and a revoke to every cycle. A lock dies with its holder's lease (TTL 10 s).
 */
final class EtcdLockClient implements LockClient<ByteSequence> {
    private final Client client;
    private final Queue<Long> leases = new ConcurrentLinkedQueue<>();
    private final Queue<CloseableClient> keepAlives = new ConcurrentLinkedQueue<>();
    private final ThreadLocal<Long> sessionLease = new ThreadLocal<>();

    EtcdLockClient(String endpoint) {
        this.client = Client.builder().endpoints(endpoint).build();
    }

    @Override
    public String system() {
        return "etcd";
    }

    private long session() throws Exception {
        Long id = sessionLease.get();
        if (id == null) {
            id = client.getLeaseClient().grant(LEASE_TIME.toSeconds()).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS).getID();
            leases.add(id);
            keepAlives.add(client.getLeaseClient().keepAlive(id, new StreamObserver<LeaseKeepAliveResponse>() {
                @Override
                public void onNext(LeaseKeepAliveResponse value) {
                    // kept alive
                }

                @Override
                public void onError(Throwable t) {
                    System.err.println("etcd keep-alive failed: " + t);
                }

                @Override
                public void onCompleted() {
                    // closed at the end of the trial
                }
            }));
            sessionLease.set(id);
        }
        return id;
    }

    @Override
    public ByteSequence acquire(String name) throws Exception {
        long lease = session();
        return client.getLockClient().lock(ByteSequence.from("lock/" + name, StandardCharsets.UTF_8), lease)
                .get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS).getKey();
    }

    @Override
    public void release(ByteSequence key) throws Exception {
        client.getLockClient().unlock(key).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        for (CloseableClient k : keepAlives) {
            k.close();
        }
        for (Long id : leases) {
            try {
                client.getLeaseClient().revoke(id).get(5, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.err.println("etcd: could not revoke lease " + id + ": " + e);
            }
        }
        client.close();
    }
}
