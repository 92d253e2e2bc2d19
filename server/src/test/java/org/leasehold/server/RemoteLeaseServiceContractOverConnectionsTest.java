package org.leasehold.server;

/**
 * The lease service contract through a client with three connections to the server (names spread over them, each
 * name's calls on one), against a real server process on a test clock: waiting, FIFO hand-over, breaking, fencing and
 * restarts behave as with one connection, also for requests whose names take different connections.
 */
class RemoteLeaseServiceContractOverConnectionsTest extends RemoteLeaseServiceContractTest {

    @Override
    protected int connections() {
        return 3;
    }
}
