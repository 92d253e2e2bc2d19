package org.leasehold.cdi;

import java.lang.reflect.Method;
import java.util.Optional;

import javax.naming.InitialContext;
import javax.naming.NamingException;

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
        return configured().orElse(LeaseConnectionFactory.DEFAULT_JNDI_NAME);
    }

    /** The MicroProfile Config value, read reflectively so that servers without MicroProfile Config work too. */
    @SuppressWarnings("unchecked")
    private static Optional<String> configured() {
        try {
            Class<?> provider = Class.forName("org.eclipse.microprofile.config.ConfigProvider", true,
                    Thread.currentThread().getContextClassLoader());
            Object config = provider.getMethod("getConfig").invoke(null);
            Method get = config.getClass().getMethod("getOptionalValue", String.class, Class.class);
            return (Optional<String>) get.invoke(config, PROPERTY, String.class);
        } catch (ClassNotFoundException e) {
            return Optional.empty();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return Optional.empty();
        }
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
            throw new ConnectorException("no Leasehold connection factory at JNDI name '" + name + "': define one (for "
                    + "example @ConnectionFactoryDefinition(name=\"" + LeaseConnectionFactory.DEFAULT_JNDI_NAME
                    + "\", resourceAdapter=...)) or set @Leased(factory=...) or the MicroProfile Config property "
                    + PROPERTY, e);
        }
    }
}
