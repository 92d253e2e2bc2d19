package org.leasehold.adapter;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The connection definition's properties from MicroProfile Config, where the server has it: the key
 * {@code leasehold.<Property>} (for example {@code leasehold.BagStoreRoot}; as an environment variable
 * {@code LEASEHOLD_BAGSTOREROOT}) supplies a property that the definition leaves unset or empty. The precedence is
 * config-property, then MicroProfile Config, then the default: a value an administrator gave one definition is never
 * replaced by a key that every definition on the server reads, and a definition that leaves a property open takes it
 * from the environment it runs in.
 *
 * <p>MicroProfile Config is found by name at run time, through the thread's context class loader and then the
 * adapter's own: where the server has none (or does not give it to the adapter), no key supplies anything and the
 * adapter works as before. A value from MicroProfile Config is checked exactly as a config-property is, and an error
 * about it names the key it came from.
 */
final class MicroProfileSettings {
    static final String PREFIX = "leasehold.";
    private static final String PROVIDER = "org.eclipse.microprofile.config.ConfigProvider";

    private final Map<String, String> values;
    private final Set<String> supplied = new TreeSet<>();

    /** Settings from {@code values}: property name (without the prefix) to its MicroProfile Config value. */
    MicroProfileSettings(Map<String, String> values) {
        this.values = values;
    }

    /**
     * The MicroProfile Config values of {@code properties} present in the server's configuration, by property name; empty
     * where MicroProfile Config is absent.
     *
     * @throws IllegalArgumentException MicroProfile Config failed to read a key (an expression it cannot expand, say)
     */
    static Map<String, String> fromServer(Collection<String> properties) {
        Map<String, String> out = new LinkedHashMap<>();
        Object config = serverConfig();
        if (config == null) {
            return out;
        }
        Method get;
        try {
            get = config.getClass().getMethod("getOptionalValue", String.class, Class.class);
        } catch (NoSuchMethodException e) {
            return out;
        }
        for (String p : properties) {
            try {
                Optional<?> v = (Optional<?>) get.invoke(config, PREFIX + p, String.class);
                if (v.isPresent() && !v.get().toString().isBlank()) {
                    out.put(p, v.get().toString().trim());
                }
            } catch (InvocationTargetException e) {
                throw new IllegalArgumentException("MicroProfile Config key " + PREFIX + p + " could not be read: "
                        + e.getCause() + ". Correct the value in the server's configuration (or remove it)");
            } catch (IllegalAccessException e) {
                return out;
            }
        }
        return out;
    }

    /** The server's MicroProfile Config for the current application or adapter, or null where there is none. */
    private static Object serverConfig() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        for (ClassLoader loader : new ClassLoader[] {context, MicroProfileSettings.class.getClassLoader()}) {
            if (loader == null) {
                continue;
            }
            try {
                Class<?> provider = Class.forName(PROVIDER, true, loader);
                return provider.getMethod("getConfig").invoke(null);
            } catch (ClassNotFoundException | LinkageError e) {
                // Not visible through this loader: try the next.
            } catch (ReflectiveOperationException | RuntimeException e) {
                // MicroProfile Config is there but has no configuration for this class loader (no implementation).
            }
        }
        return null;
    }

    /** {@code explicit} unless it is unset or empty, else the MicroProfile Config value, else null (the default). */
    String text(String property, String explicit) {
        if (explicit != null && !explicit.isBlank()) {
            return explicit;
        }
        String v = values.get(property);
        if (v != null) {
            supplied.add(property);
        }
        return v;
    }

    /**
     * Like {@link #text} for a number of milliseconds.
     *
     * @throws IllegalArgumentException the MicroProfile Config value is not a whole number
     */
    Long millis(String property, Long explicit) {
        return explicit != null ? explicit : parse(property, " of milliseconds");
    }

    /**
     * Like {@link #text} for a count.
     *
     * @throws IllegalArgumentException the MicroProfile Config value is not a whole number in int's range
     */
    Integer count(String property, Integer explicit) {
        if (explicit != null) {
            return explicit;
        }
        Long v = parse(property, "");
        if (v != null && (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE)) {
            throw new IllegalArgumentException(property + " is '" + v + "' (from MicroProfile Config key " + PREFIX
                    + property + "): use a whole number of at most " + Integer.MAX_VALUE);
        }
        return v == null ? null : v.intValue();
    }

    private Long parse(String property, String unit) {
        String v = text(property, null);
        if (v == null) {
            return null;
        }
        try {
            return Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(property + " is '" + v + "' (from MicroProfile Config key " + PREFIX
                    + property + "): not a whole number" + unit + "; correct the key or remove it");
        }
    }

    /** The properties that MicroProfile Config supplied so far. */
    Set<String> supplied() {
        return supplied;
    }

    /**
     * {@code message}, an error about the settings, with where its property's value came from when MicroProfile
     * Config supplied it.
     */
    String explain(String message) {
        for (String p : supplied) {
            if (message.startsWith(p + " ") && !message.contains("MicroProfile Config key")) {
                return message + " (the value comes from MicroProfile Config key " + PREFIX + p
                        + "; a config-property of the connection definition would take precedence)";
            }
        }
        return message;
    }
}
