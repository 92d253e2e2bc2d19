package org.leasehold.peers;

import java.util.Map;

import org.leasehold.remote.RemoteClientConfig.Transport;
import org.leasehold.remote.RemoteLeaseService;

/**
 * The transport's ceiling: an echo on Leasehold's session stream ({@link RemoteLeaseService#ping}) as "acquire" and
 * again as "release", through the same client, connection and stream as the lease calls of {@code leasehold}, and
 * answered by the server without touching a lease. It takes no lock; it is the most any lock call on this stack could
 * do. {@code leasehold-socket-echo} is the same on the socket transport, the ceiling of {@code leasehold-socket}.
 */
final class LeaseholdEchoClient implements LockClient<String> {
    private final String system;
    private final RemoteLeaseService client;

    LeaseholdEchoClient(String system, String address, Transport transport, String spinWait) {
        this.system = system;
        this.client = RemoteLeaseService.connect(Map.of("servers", address, "transport", transport.name(), "spinWait",
                spinWait));
    }

    @Override
    public String system() {
        return system;
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
