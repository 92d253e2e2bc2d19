package org.leasehold.peers;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;

/**
 * jetcd's {@code Lock} with an etcd lease of its own for each lock, the recipe as issue 23 states it ("a lease grant,
 * a put and a watch"): acquire grants a lease (TTL 10 s, never kept alive) and locks under it; release revokes the
 * lease, which deletes the lock's key. Three calls a cycle. What it buys over {@link EtcdLockClient}'s session lease is
 * what a Leasehold lease has: each lock ends by a deadline of its own (10 s after its grant at most, whatever its
 * process does), where a lock under a session lease kept alive by a background stream lasts as long as the process
 * does, a stuck holder thread included. A lock held beyond its lease's TTL is lost, as a Leasehold lease expires; the
 * harness's cycles are far shorter.
 */
final class EtcdLeaseLockClient implements LockClient<EtcdLeaseLockClient.Held> {
    private final Client client;

    /** A lock held: its key, and the lease it dies with. */
    record Held(ByteSequence key, long lease) {
    }

    EtcdLeaseLockClient(String endpoint) {
        this.client = Client.builder().endpoints(endpoint).build();
    }

    @Override
    public String system() {
        return "etcd-lease-lock";
    }

    @Override
    public Held acquire(String name) throws Exception {
        long lease = client.getLeaseClient().grant(LEASE_TIME.toSeconds()).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS)
                .getID();
        try {
            ByteSequence key = client.getLockClient().lock(ByteSequence.from("lease-lock/" + name, StandardCharsets.UTF_8),
                    lease).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS).getKey();
            return new Held(key, lease);
        } catch (Exception e) {
            client.getLeaseClient().revoke(lease);
            throw e;
        }
    }

    @Override
    public void release(Held held) throws Exception {
        client.getLeaseClient().revoke(held.lease()).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        client.close();
    }
}
