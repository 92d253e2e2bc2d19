package org.leasehold.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.LeaseServiceContract;
import org.leasehold.remote.RemoteClientConfig;

/**
 * The lease service contract, run through the remote client against a real server process (on a test clock, on a
 * loopback port chosen by the OS). One process serves the whole class; each test resets its engine.
 */
class RemoteLeaseServiceContractTest extends LeaseServiceContract {
    protected static ServerProcess server;
    private static TestClockClient clock;

    @BeforeAll
    static void startServer() throws Exception {
        server = ServerProcess.start("contract", "--test-clock=" + RemoteFixture.START, "--socket-listen=127.0.0.1:0");
        clock = new TestClockClient(server.address());
    }

    @AfterAll
    static void stopServer() throws Exception {
        clock.close();
        server.close();
    }

    /** Connections from the client to the server. */
    protected int connections() {
        return 1;
    }

    /** How the client's lease calls travel. */
    protected RemoteClientConfig.Transport transport() {
        return RemoteClientConfig.Transport.GRPC;
    }

    @Override
    protected LeaseFixture start(LeaseFixture.Settings settings) {
        return new RemoteFixture(server, clock, settings, RemoteClientConfig.builder(server.address())
                .connections(connections()).transport(transport()));
    }
}
