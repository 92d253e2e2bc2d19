package org.leasehold.peers;

import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;

/**
 * ZooKeeper through Apache Curator's {@link InterProcessMutex}: an ephemeral sequential node under the name's
 * path, a watch on the predecessor while waiting, a delete to release. One Curator client (one ZooKeeper session,
 * 10 s timeout: the locks' lease) shared by every thread, a mutex object per acquisition.
 */
final class CuratorLockClient implements LockClient<InterProcessMutex> {
    private final CuratorFramework client;

    CuratorLockClient(String connectString) throws InterruptedException {
        this.client = CuratorFrameworkFactory.newClient(connectString, (int) LEASE_TIME.toMillis(), 5_000,
                new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            client.close();
            throw new IllegalStateException("ZooKeeper at " + connectString + " did not accept a session within 30 s");
        }
    }

    @Override
    public String system() {
        return "zookeeper";
    }

    @Override
    public InterProcessMutex acquire(String name) throws Exception {
        InterProcessMutex mutex = new InterProcessMutex(client, "/locks/" + name);
        if (!mutex.acquire(MAX_WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new Backoff.LockWaitTimeoutException("'" + name + "' stayed busy for " + MAX_WAIT);
        }
        return mutex;
    }

    @Override
    public void release(InterProcessMutex mutex) throws Exception {
        mutex.release();
    }

    @Override
    public void close() {
        client.close();
    }
}
