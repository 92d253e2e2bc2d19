package org.leasehold.cdi;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.spi.BeforeBeanDiscovery;
import jakarta.enterprise.inject.spi.Extension;

/**
 * Publishes the adapter's figures as MicroProfile Metrics when the server has MicroProfile Metrics: it adds
 * {@link MetricsBridge} as a bean only then, so that applications on servers without it (where the figures stay on
 * JMX) deploy unchanged.
 */
public class MetricsExtension implements Extension {

    void addBridge(@Observes BeforeBeanDiscovery bbd) {
        try {
            Class.forName("org.eclipse.microprofile.metrics.MetricRegistry", false,
                    MetricsExtension.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return;
        }
        bbd.addAnnotatedType(MetricsBridge.class, MetricsBridge.class.getName()).add(ApplicationScoped.Literal.INSTANCE);
    }
}
