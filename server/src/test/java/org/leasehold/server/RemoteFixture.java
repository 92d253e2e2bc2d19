package org.leasehold.server;

import java.time.Duration;
import java.time.Instant;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.lease.LeaseService;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

/**
 * The remote client against a real server process on a test clock. Starting a fixture resets the server's engine
 * with the fixture's settings and its clock to {@link #START}; a restart replaces the engine on the same clock (time
 * keeps going), like a restarted server process that kept its clock.
 *
 * <p>The tests here test the client and the server together, so they need a real lease server and live in this
 * module; the client's tests that need none (against a scripted gRPC server, the wire code alone) live beside the
 * client in {@code impl}.
 */
final class RemoteFixture implements LeaseFixture {
    static final Instant START = Instant.parse("2026-03-01T10:00:00Z");

    private final TestClockClient clock;
    private final Settings settings;
    private final RemoteLeaseService client;

    RemoteFixture(ServerProcess server, TestClockClient clock, Settings settings) {
        this(server, clock, settings, 1);
    }

    /** With {@code connections} connections from the client to the server. */
    RemoteFixture(ServerProcess server, TestClockClient clock, Settings settings, int connections) {
        this(server, clock, settings, RemoteClientConfig.builder(server.address()).connections(connections));
    }

    /** With a client configured by {@code client}. */
    RemoteFixture(ServerProcess server, TestClockClient clock, Settings settings, RemoteClientConfig.Builder client) {
        this.clock = clock;
        this.settings = settings;
        clock.reset(settings, START);
        this.client = new RemoteLeaseService(client.build());
    }

    @Override
    public LeaseService service() {
        return client;
    }

    RemoteLeaseService client() {
        return client;
    }

    @Override
    public void advance(Duration d) {
        clock.advance(d);
    }

    @Override
    public void awaitTime(Instant t) {
        clock.awaitTime(t);
    }

    @Override
    public void restart() {
        clock.reset(settings, null);
    }

    @Override
    public void close() {
        client.close();
    }
}
