package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.TreeSet;

import jakarta.resource.spi.ConfigProperty;

import org.junit.jupiter.api.Test;

/**
 * The connection definition's config properties as a server sees them. Servers name a property annotated on a setter
 * after the JavaBean property ({@code setMaxLeaseMillis} gives {@code MaxLeaseMillis}, the name pools and the docs
 * use) but one annotated on a field after the field ({@code maxLeaseMillis}); Payara then kept the annotation's
 * default under the field's name beside a pool's {@code MaxLeaseMillis} and applied both in no fixed order.
 */
class ConfigPropertiesTest {
    private static final Set<String> DOCUMENTED = new TreeSet<>(Set.of("BagStoreRoot", "Log", "LeaseService",
            "MaxLeaseMillis", "GraceMillis", "MaxClockErrorMillis", "BucketMillis", "FlushPolicy", "WriterId",
            "ProcessId", "DefaultWaitMillis", "MaxNamesPerUnit", "MinTimeLeftAtPrepareMillis", "OwnerTtlMillis",
            "RemoteOptions", "InDoubtHoldMillis", "ViewBuildIntervalMillis", "SigningKeyFile",
            "SignedTimeBoundMillis", "CompactionIntervalMillis", "CompactionHorizonMillis", "RetentionDelayMillis",
            "ResourcePrincipal"));

    @Test
    void everyPropertyIsAnnotatedOnItsSetterWithTheDocumentedName() {
        for (Field f : LeaseholdManagedConnectionFactory.class.getDeclaredFields()) {
            assertNull(f.getAnnotation(ConfigProperty.class), "@ConfigProperty on field " + f.getName()
                    + " gives it a lower-case property name: annotate the setter");
        }
        Set<String> names = new TreeSet<>();
        for (Method m : LeaseholdManagedConnectionFactory.class.getDeclaredMethods()) {
            if (m.getAnnotation(ConfigProperty.class) == null) {
                continue;
            }
            assertTrue(Modifier.isPublic(m.getModifiers()) && m.getName().startsWith("set")
                    && m.getParameterCount() == 1, m + " is not a public setter");
            names.add(m.getName().substring(3));
        }
        assertEquals(DOCUMENTED, names);
    }

    /**
     * A server sets a property to its annotated default, and a value set so cannot be told from one an administrator
     * gave: with a default in the annotation, MicroProfile Config could never supply the property.
     */
    @Test
    void noPropertyHasAnAnnotatedDefaultAndAFreshFactoryHasNoneSet() throws Exception {
        LeaseholdManagedConnectionFactory fresh = new LeaseholdManagedConnectionFactory();
        for (Method m : LeaseholdManagedConnectionFactory.class.getDeclaredMethods()) {
            ConfigProperty p = m.getAnnotation(ConfigProperty.class);
            if (p == null) {
                continue;
            }
            String name = m.getName().substring(3);
            assertEquals("", p.defaultValue(), name);
            assertNull(LeaseholdManagedConnectionFactory.class.getMethod("get" + name).invoke(fresh), name);
        }
        assertEquals(DOCUMENTED, new TreeSet<>(LeaseholdManagedConnectionFactory.PROPERTIES));
    }
}
