package org.leasehold.cdi;

import jakarta.inject.Inject;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Liveness;

/**
 * The MicroProfile Health liveness check of the resource adapter behind the application's connection factories:
 * DOWN only while the adapter cannot serve again without a restart of the server (another server took the log over
 * from its embedded lease service, or its ownership heartbeats stopped running). A store or lease server that is
 * unreachable for a while makes the adapter not ready, not dead. Added as a bean by {@link HealthExtension} only where
 * MicroProfile Health exists.
 */
@Liveness
public class AdapterLiveness implements HealthCheck {

    @Inject
    AdapterHealthChecks checks;

    @Override
    public HealthCheckResponse call() {
        return checks.response(true);
    }
}
