package org.leasehold.cdi;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.spi.BeforeBeanDiscovery;
import jakarta.enterprise.inject.spi.Extension;

/**
 * Adds the adapter's health checks ({@link AdapterReadiness}, {@link AdapterLiveness}) as beans when the server has
 * MicroProfile Health, so that applications on servers without it deploy unchanged.
 */
public class HealthExtension implements Extension {

    void addChecks(@Observes BeforeBeanDiscovery bbd) {
        try {
            Class.forName("org.eclipse.microprofile.health.HealthCheck", false, HealthExtension.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return;
        }
        bbd.addAnnotatedType(AdapterHealthChecks.class, AdapterHealthChecks.class.getName())
                .add(ApplicationScoped.Literal.INSTANCE);
        bbd.addAnnotatedType(AdapterReadiness.class, AdapterReadiness.class.getName())
                .add(ApplicationScoped.Literal.INSTANCE);
        bbd.addAnnotatedType(AdapterLiveness.class, AdapterLiveness.class.getName())
                .add(ApplicationScoped.Literal.INSTANCE);
    }
}
