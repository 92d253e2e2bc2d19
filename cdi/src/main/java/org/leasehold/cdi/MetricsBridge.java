package org.leasehold.cdi;

import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.util.Locale;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Initialized;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.eclipse.microprofile.metrics.MetricRegistry;
import org.leasehold.connector.AdapterMetricsMBean;

/**
 * Registers one gauge per figure of {@link AdapterMetricsMBean} in the application's metric registry, named
 * {@code leasehold_<figure>} (for example {@code leasehold_commit_p99_micros}). Each gauge reads the adapter MBeans
 * when it is scraped (summing over logs; a latency figure takes the largest), so it works whether or not the adapter
 * has started its runtime yet. Added as a bean by {@link MetricsExtension} only where MicroProfile Metrics exists.
 */
public class MetricsBridge {
    private static final System.Logger LOG = System.getLogger(MetricsBridge.class.getName());

    @Inject
    MetricRegistry registry;

    void register(@Observes @Initialized(ApplicationScoped.class) Object started) {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        for (Method m : AdapterMetricsMBean.class.getMethods()) {
            if (!m.getName().startsWith("get") || m.getParameterCount() != 0 || m.getReturnType() != long.class) {
                continue;
            }
            String attribute = m.getName().substring(3);
            boolean latency = attribute.endsWith("Micros");
            try {
                registry.gauge("leasehold_" + snake(attribute), server, s -> read(s, attribute, latency));
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5001 the adapter figure {0} could not be published to "
                        + "MicroProfile Metrics: {1}; it stays available over JMX", attribute, e.toString());
            }
        }
    }

    private static long read(MBeanServer server, String attribute, boolean latency) {
        long result = 0;
        try {
            for (ObjectName n : server.queryNames(new ObjectName(AdapterMetricsMBean.OBJECT_NAME_PATTERN), null)) {
                long v = ((Number) server.getAttribute(n, attribute)).longValue();
                result = latency ? Math.max(result, v) : result + v;
            }
        } catch (JMException | RuntimeException e) {
            return -1;
        }
        return result;
    }

    static String snake(String camel) {
        return camel.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
    }
}
