package org.leasehold.cdi;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.eclipse.microprofile.health.HealthCheckResponse;
import org.leasehold.LeaseholdException;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * What the health checks report: one response, named {@code leasehold}, over the connection factories the
 * application uses: the MicroProfile Config property {@code leasehold.health.connection-factories} (JNDI names,
 * separated by commas), else the factory {@code @Leased} uses by default ({@code leasehold.connection-factory}, else
 * {@link LeaseConnectionFactory#DEFAULT_JNDI_NAME}). Its data name each factory's log, writer and lease service and
 * the result of each check (its problem, in the adapter's words, when it failed). A default factory that is not defined
 * at all is reported, and not counted against the application: it may use others, under names the checks are not told.
 */
final class AdapterHealthChecks {
    static final String NAME = "leasehold";
    static final String FACTORIES = "leasehold.health.connection-factories";

    private AdapterHealthChecks() {
    }

    /** The factories to check, by JNDI name. */
    static List<String> factories() {
        Optional<String> listed = FactoryLookup.configured(FACTORIES);
        List<String> out = new ArrayList<>();
        if (listed.isPresent()) {
            for (String n : listed.get().split(",")) {
                if (!n.isBlank()) {
                    out.add(n.trim());
                }
            }
        }
        if (out.isEmpty()) {
            out.add(FactoryLookup.jndiName(null));
        }
        return out;
    }

    /**
     * The readiness ({@code liveness} false) or liveness response for the factories at {@code names}, found by
     * {@code lookup}.
     */
    static HealthCheckResponse response(List<String> names, Lookup lookup, boolean liveness) {
        boolean up = true;
        Map<String, Object> data = new LinkedHashMap<>();
        for (String name : names) {
            String prefix = names.size() == 1 ? "" : name + " ";
            data.put(prefix + "factory", name);
            AdapterStatus s;
            try {
                s = lookup.find(name).status();
            } catch (LeaseholdException | RuntimeException e) {
                boolean undefined = names.size() == 1 && !FactoryLookup.configured(FACTORIES).isPresent()
                        && !FactoryLookup.configured(FactoryLookup.PROPERTY).isPresent()
                        && FactoryLookup.adapterFailure(e) == null;
                data.put(prefix + "problem", e.getMessage());
                up &= undefined;
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
