package org.leasehold.cdi;

import java.lang.reflect.Method;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Optional;
import java.util.Set;

import javax.naming.InitialContext;
import javax.naming.NamingException;

import jakarta.resource.ResourceException;

import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * Finds the connection factory by JNDI name: the one given on {@code @Leased}, else the MicroProfile Config property
 * {@code leasehold.connection-factory} when MicroProfile Config is present, else
 * {@link LeaseConnectionFactory#DEFAULT_JNDI_NAME}.
 */
final class FactoryLookup {
    static final String PROPERTY = "leasehold.connection-factory";

    private FactoryLookup() {
    }

    static String jndiName(String given) {
        if (given != null && !given.isBlank()) {
            return given;
        }
        return configured(PROPERTY).orElse(LeaseConnectionFactory.DEFAULT_JNDI_NAME);
    }

    /** The MicroProfile Config value of {@code key}, read reflectively so that servers without it work too. */
    @SuppressWarnings("unchecked")
    static Optional<String> configured(String key) {
        try {
            Class<?> provider = Class.forName("org.eclipse.microprofile.config.ConfigProvider", true,
                    Thread.currentThread().getContextClassLoader());
            Object config = provider.getMethod("getConfig").invoke(null);
            Method get = config.getClass().getMethod("getOptionalValue", String.class, Class.class);
            return (Optional<String>) get.invoke(config, key, String.class);
        } catch (ClassNotFoundException e) {
            return Optional.empty();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Optional.empty();
        }
    }

    /**
     * The resource adapter's own explanation inside a failed lookup (a {@code ResourceException} it threw while the
     * server created the factory, such as a second embedded server refused a log it does not own), or null when the
     * lookup failed for want of a definition.
     */
    static String adapterFailure(Throwable failure) {
        String found = null;
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = failure; t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof ResourceException && t.getMessage() != null) {
                found = t.getMessage(); // the innermost one is the most precise
            }
        }
        return found;
    }

    static LeaseConnectionFactory lookup(String given) throws ConnectorException {
        String name = jndiName(given);
        try {
            Object found = new InitialContext().lookup(name);
            if (found instanceof LeaseConnectionFactory f) {
                return f;
            }
            throw new ConnectorException("JNDI name '" + name + "' holds " + found + ", not a Leasehold "
                    + "LeaseConnectionFactory: point @Leased(factory=...) or " + PROPERTY + " at the connection factory");
        } catch (NamingException e) {
            String failed = adapterFailure(e);
            if (failed != null) {
                // The name is defined, but the resource adapter could not create the factory: say why, not where.
                throw new ConnectorException("the Leasehold connection factory at JNDI name '" + name + "' could not "
                        + "be created: " + failed, e);
            }
            throw new ConnectorException("no Leasehold connection factory at JNDI name '" + name + "': define one (for "
                    + "example @ConnectionFactoryDefinition(name=\"" + LeaseConnectionFactory.DEFAULT_JNDI_NAME
                    + "\", resourceAdapter=...)) or set @Leased(factory=...) or the MicroProfile Config property "
                    + PROPERTY, e);
        }
    }
}
