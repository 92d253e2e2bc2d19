package org.leasehold.server;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.LeaseServiceContract;

/**
 * The lease service contract through a client with three connections to the server (names spread over them, each
 * name's calls on one), against a real server process on a test clock: waiting, FIFO hand-over, breaking, fencing and
 * restarts behave as with one connection, also for requests whose names take different connections.
 */
class RemoteLeaseServiceContractOverConnectionsTest extends LeaseServiceContract {
    private static ServerProcess server;
    private static TestClockClient clock;

    @BeforeAll
    static void startServer() throws Exception {
        server = ServerProcess.start("contract-connections", "--test-clock=" + RemoteFixture.START);
        clock = new TestClockClient(server.address());
    }

    @AfterAll
    static void stopServer() throws Exception {
        clock.close();
        server.close();
    }

    @Override
    protected LeaseFixture start(LeaseFixture.Settings settings) {
        return new RemoteFixture(server, clock, settings, 3);
    }
}
