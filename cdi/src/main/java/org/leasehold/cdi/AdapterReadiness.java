package org.leasehold.cdi;

import jakarta.inject.Inject;

import org.eclipse.microprofile.health.HealthCheck;
import org.eclipse.microprofile.health.HealthCheckResponse;
import org.eclipse.microprofile.health.Readiness;

/**
 * The MicroProfile Health readiness check of the resource adapter behind the application's connection factories:
 * DOWN, with the reason, while the bag store does not accept writes, the lease service does not answer (or, in
 * embedded mode, this server cannot confirm it owns the log), a lease server's clock is beyond
 * {@code MaxClockErrorMillis}, or the adapter cannot start for the factory. Added as a bean by
 * {@link HealthExtension} only where MicroProfile Health exists.
 */
@Readiness
public class AdapterReadiness implements HealthCheck {

    @Inject
    AdapterHealthChecks checks;

    @Override
    public HealthCheckResponse call() {
        return checks.response(false);
    }
}
