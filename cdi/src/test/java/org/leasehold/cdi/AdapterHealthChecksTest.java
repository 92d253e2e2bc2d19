package org.leasehold.cdi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Instant;
import java.util.List;
import java.util.Map;

import javax.naming.NameNotFoundException;
import javax.naming.Reference;

import jakarta.resource.spi.ResourceAdapterInternalException;

import org.eclipse.microprofile.health.HealthCheckResponse;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.SessionListener;

/** The health responses built from the adapter's status, and from factories that could not be found. */
class AdapterHealthChecksTest {
    private static final String NAME = LeaseConnectionFactory.DEFAULT_JNDI_NAME;

    private static LeaseConnectionFactory reporting(AdapterStatus status) {
        return new LeaseConnectionFactory() {
            @Override
            public LeaseConnection getConnection() {
                throw new UnsupportedOperationException();
            }

            @Override
            public void addSessionListener(SessionListener listener) {
                throw new UnsupportedOperationException();
            }

            @Override
            public boolean removeSessionListener(SessionListener listener) {
                return false;
            }

            @Override
            public AdapterStatus status() {
                return status;
            }

            @Override
            public void registerView(ViewDefinition<?> definition) {
                throw new UnsupportedOperationException();
            }

            @Override
            public boolean unregisterView(ViewDefinition<?> definition) {
                return false;
            }

            @Override
            public Instant buildView(String name) {
                throw new UnsupportedOperationException();
            }

            @Override
            public void setReference(Reference reference) {
            }

            @Override
            public Reference getReference() {
                return null;
            }
        };
    }

    private static AdapterStatus status(boolean storeUp, String notLive) {
        return new AdapterStatus("orders", "node-a", "embedded", List.of(
                new AdapterStatus.Check(AdapterStatus.STORE, storeUp, storeUp ? "writable: /bags/.leasehold/health/node-a"
                        : "the bag store at /bags does not accept writes"),
                new AdapterStatus.Check(AdapterStatus.LEASES, true, "embedded: this server owns log 'orders'"),
                new AdapterStatus.Check(AdapterStatus.CLOCKS, true, "one clock")), notLive);
    }

    @Test
    void aReadyAdapterIsUpWithEachCheckInTheData() {
        HealthCheckResponse r = AdapterHealthChecks.response(List.of(NAME), n -> reporting(status(true, null)), true,
                false);
        assertEquals("leasehold", r.getName());
        assertEquals(HealthCheckResponse.Status.UP, r.getStatus());
        assertEquals(Map.of("factory", NAME, "log", "orders", "writer", "node-a", "leaseService", "embedded",
                "store", "UP: writable: /bags/.leasehold/health/node-a",
                "leases", "UP: embedded: this server owns log 'orders'", "clocks", "UP: one clock"), r.getData().get());
    }

    @Test
    void aFailedCheckMakesItDownWithTheProblemButLeavesItLive() {
        HealthCheckResponse ready = AdapterHealthChecks.response(List.of(NAME), n -> reporting(status(false, null)),
                true, false);
        assertEquals(HealthCheckResponse.Status.DOWN, ready.getStatus());
        assertEquals("DOWN: the bag store at /bags does not accept writes", ready.getData().get().get("store"));
        HealthCheckResponse live = AdapterHealthChecks.response(List.of(NAME), n -> reporting(status(false, null)),
                true, true);
        assertEquals(HealthCheckResponse.Status.UP, live.getStatus());
        assertEquals("yes", live.getData().get().get("live"));
    }

    @Test
    void anAdapterThatCannotServeAgainIsNotLive() {
        HealthCheckResponse live = AdapterHealthChecks.response(List.of(NAME),
                n -> reporting(status(true, "another server took log 'orders' over")), true, true);
        assertEquals(HealthCheckResponse.Status.DOWN, live.getStatus());
        assertEquals("another server took log 'orders' over", live.getData().get().get("live"));
    }

    @Test
    void anUndefinedDefaultFactoryIsReportedButNotCounted() {
        ConnectorException missing = new ConnectorException("no Leasehold connection factory at JNDI name '" + NAME
                + "'", new NameNotFoundException(NAME));
        HealthCheckResponse r = AdapterHealthChecks.response(List.of(NAME), n -> {
            throw missing;
        }, true, false);
        assertEquals(HealthCheckResponse.Status.UP, r.getStatus());
        assertEquals(missing.getMessage(), r.getData().get().get("problem"));
        HealthCheckResponse named = AdapterHealthChecks.response(List.of("java:/eis/orders"), n -> {
            throw missing;
        }, false, false);
        assertEquals(HealthCheckResponse.Status.DOWN, named.getStatus(), "a factory the application names must exist");
    }

    @Test
    void aDefaultFactoryTheAdapterCouldNotCreateIsDown() {
        ConnectorException refused = new ConnectorException("the Leasehold connection factory could not be created",
                new ResourceAdapterInternalException("the log 'orders' in /bags is served by writer 'node-b'"));
        HealthCheckResponse r = AdapterHealthChecks.response(List.of(NAME), n -> {
            throw refused;
        }, true, false);
        assertEquals(HealthCheckResponse.Status.DOWN, r.getStatus());
    }

    @Test
    void severalFactoriesArePrefixedByName() {
        HealthCheckResponse r = AdapterHealthChecks.response(List.of("java:/eis/a", "java:/eis/b"),
                n -> reporting(status(n.endsWith("a"), null)), false, false);
        assertEquals(HealthCheckResponse.Status.DOWN, r.getStatus());
        assertEquals("UP: writable: /bags/.leasehold/health/node-a", r.getData().get().get("java:/eis/a store"));
        assertEquals("DOWN: the bag store at /bags does not accept writes", r.getData().get().get("java:/eis/b store"));
    }
}
