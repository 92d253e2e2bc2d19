package org.leasehold.peers;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.support.CloseableClient;
import io.grpc.stub.StreamObserver;

/**
 * A lock written directly as etcd transactions, the way a naive etcd lock is: one etcd lease (TTL 10 s, kept alive)
 * shared by every thread; acquire is {@code If(createRevision(key) == 0) Then(put key token, lease)}, retried with
 * backoff while the key exists (no server-side wait, as for Redis); release is {@code If(modRevision(key) == the put's
 * revision) Then(delete key)}, so only the holder's own lock is deleted. One round trip and one etcd write each way:
 * the floor of any lock kept in etcd. It keeps no fencing generation beyond the revision, no floor or watermark, no
 * FIFO order, and its locks end with the shared etcd lease, not at a deadline of their own.
 */
final class EtcdTxnLockClient implements LockClient<EtcdTxnLockClient.Held> {
    private final Client client;
    private final KV kv;
    private final long lease;
    private final CloseableClient keepAlive;
    private final AtomicLong tokens = new AtomicLong();

    /** A lock held: its key and the revision of the put that took it. */
    record Held(ByteSequence key, long revision) {
    }

    EtcdTxnLockClient(String endpoint) throws Exception {
        this.client = Client.builder().endpoints(endpoint).build();
        this.kv = client.getKVClient();
        this.lease = client.getLeaseClient().grant(LEASE_TIME.toSeconds()).get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS)
                .getID();
        this.keepAlive = client.getLeaseClient().keepAlive(lease, new StreamObserver<LeaseKeepAliveResponse>() {
            @Override
            public void onNext(LeaseKeepAliveResponse value) {
                // kept alive
            }

            @Override
            public void onError(Throwable t) {
                System.err.println("etcd-txn keep-alive failed: " + t);
            }

            @Override
            public void onCompleted() {
                // closed at the end of the trial
            }
        });
    }

    @Override
    public String system() {
        return "etcd-txn";
    }

    @Override
    public Held acquire(String name) throws Exception {
        ByteSequence key = ByteSequence.from("txn/" + name, StandardCharsets.UTF_8);
        ByteSequence token = ByteSequence.from(Long.toString(tokens.incrementAndGet()), StandardCharsets.UTF_8);
        Backoff backoff = null;
        while (true) {
            TxnResponse r = kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                    .Then(Op.put(key, token, PutOption.builder().withLeaseId(lease).build())).commit()
                    .get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            if (r.isSucceeded()) {
                return new Held(key, r.getHeader().getRevision());
            }
            if (backoff == null) {
                backoff = new Backoff(name);
            }
            backoff.pause();
        }
    }

    @Override
    public void release(Held held) throws Exception {
        TxnResponse r = kv.txn().If(new Cmp(held.key(), Cmp.Op.EQUAL, CmpTarget.modRevision(held.revision())))
                .Then(Op.delete(held.key(), DeleteOption.DEFAULT)).commit().get(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        if (!r.isSucceeded()) {
            throw new IllegalStateException("the lock " + held.key() + " was no longer ours at release");
        }
    }

    @Override
    public void close() {
        keepAlive.close();
        try {
            client.getLeaseClient().revoke(lease).get(5, TimeUnit.SECONDS);
        } catch (Exception e) {
            System.err.println("etcd-txn: could not revoke lease " + lease + ": " + e);
        }
        client.close();
    }
}
