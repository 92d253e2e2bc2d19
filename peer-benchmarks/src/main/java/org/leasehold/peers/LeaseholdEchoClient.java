package org.leasehold.peers;

import java.util.Map;

import org.leasehold.remote.RemoteLeaseService;

/**
 * The transport's ceiling: an echo on Leasehold's session stream ({@link RemoteLeaseService#ping}) as "acquire" and
 * again as "release", through the same client, connection and stream as the lease calls of {@code leasehold}, and
 * answered by the server without touching a lease. It takes no lock; it is the most any lock call on this stack could
 * do.
 */
final class LeaseholdEchoClient implements LockClient<String> {
    private final RemoteLeaseService client;

    LeaseholdEchoClient(String address) {
        this.client = RemoteLeaseService.connect(Map.of("servers", address));
    }

    @Override
    public String system() {
        return "leasehold-echo";
    }

    @Override
    public String acquire(String name) throws Exception {
        client.ping(name);
        return name;
    }

    @Override
    public void release(String name) throws Exception {
        client.ping(name);
    }

    @Override
    public void close() {
        client.close();
    }
}
