package org.leasehold.cdi;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Initialized;
import jakarta.enterprise.event.Observes;

import org.eclipse.microprofile.health.HealthCheckResponse;
import org.leasehold.LeaseholdException;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * What the health checks report: one response, named {@code leasehold}, over the connection factories the
 * application uses: the MicroProfile Config property {@code leasehold.health.connection-factories} (JNDI names,
 * separated by commas), else the factory {@code @Leased} uses by default ({@code leasehold.connection-factory}, else
 * {@link LeaseConnectionFactory#DEFAULT_JNDI_NAME}). Its data name each factory's log, writer and lease service and
 * the result of each check (its problem, in the adapter's words, when it failed). When neither property is set and
 * nothing is defined at the default name, that is reported and not counted against the application: it may use
 * factories under other names, which the checks are not told.
 *
 * <p>The names are read and the factories looked up when the application starts, in its own naming context: servers
 * call health checks on threads of their own, where {@code java:app} names are not the application's.
 */
public class AdapterHealthChecks {
    static final String NAME = "leasehold";
    static final String FACTORIES = "leasehold.health.connection-factories";

    private volatile List<String> names = List.of();
    private volatile boolean defaultOnly;
    /** What the lookup at start found, by name: the factory, or why there is none. */
    private final Map<String, Object> found = new ConcurrentHashMap<>();

    void start(@Observes @Initialized(ApplicationScoped.class) Object started) {
        Optional<String> listed = FactoryLookup.configured(FACTORIES);
        List<String> out = new ArrayList<>();
        if (listed.isPresent()) {
            for (String n : listed.get().split(",")) {
                if (!n.isBlank()) {
                    out.add(n.trim());
                }
            }
        }
        defaultOnly = out.isEmpty() && FactoryLookup.configured(FactoryLookup.PROPERTY).isEmpty();
        if (out.isEmpty()) {
            out.add(FactoryLookup.jndiName(null));
        }
        for (String n : out) {
            try {
                found.put(n, FactoryLookup.lookup(n));
            } catch (LeaseholdException | RuntimeException e) {
                found.put(n, e);
            }
        }
        names = List.copyOf(out);
    }

    /** The readiness ({@code liveness} false) or liveness response. */
    public HealthCheckResponse response(boolean liveness) {
        return response(names, this::find, defaultOnly, liveness);
    }

    private LeaseConnectionFactory find(String name) throws LeaseholdException {
        Object f = found.get(name);
        if (f instanceof LeaseConnectionFactory factory) {
            return factory;
        }
        try {
            LeaseConnectionFactory factory = FactoryLookup.lookup(name);
            found.put(name, factory);
            return factory;
        } catch (LeaseholdException | RuntimeException e) {
            if (f instanceof LeaseholdException atStart) {
                throw atStart; // found in the application's own context: the better explanation
            }
            throw e;
        }
    }

    /**
     * The response for the factories at {@code names}, found by {@code lookup}; {@code defaultOnly} when the names are
     * the default one, not configured.
     */
    static HealthCheckResponse response(List<String> names, Lookup lookup, boolean defaultOnly, boolean liveness) {
        boolean up = true;
        Map<String, Object> data = new LinkedHashMap<>();
        for (String name : names) {
            String prefix = names.size() == 1 ? "" : name + " ";
            data.put(prefix + "factory", name);
            AdapterStatus s;
            try {
                s = lookup.find(name).status();
            } catch (LeaseholdException | RuntimeException e) {
                data.put(prefix + "problem", e.getMessage());
                up &= defaultOnly && FactoryLookup.adapterFailure(e) == null;
                continue;
            }
            put(data, prefix + "log", s.log());
            put(data, prefix + "writer", s.writer());
            put(data, prefix + "leaseService", s.leaseService());
            if (liveness) {
                data.put(prefix + "live", s.live() ? "yes" : s.notLive());
                up &= s.live();
            } else {
                for (AdapterStatus.Check c : s.checks()) {
                    data.put(prefix + c.name(), (c.up() ? "UP: " : "DOWN: ") + c.detail());
                }
                up &= s.ready();
            }
        }
        return new HealthCheckResponse(NAME, up ? HealthCheckResponse.Status.UP : HealthCheckResponse.Status.DOWN,
                Optional.of(data));
    }

    private static void put(Map<String, Object> data, String key, String value) {
        if (value != null) {
            data.put(key, value);
        }
    }

    /** Finds a connection factory by JNDI name. */
    interface Lookup {
        LeaseConnectionFactory find(String jndiName) throws LeaseholdException;
    }
}
