package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import jakarta.resource.spi.InvalidPropertyException;

import org.junit.jupiter.api.Test;

/**
 * Connection definition properties from MicroProfile Config ({@code leasehold.<Property>}): a config-property the
 * definition sets wins, MicroProfile Config supplies what it leaves unset or empty, the default comes last; a bad value
 * from MicroProfile Config fails as a bad config-property does, naming the key it came from.
 */
class MicroProfileSettingsTest {

    private static LeaseholdManagedConnectionFactory definition(Path root, Map<String, String> microProfile) {
        LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
        if (root != null) {
            mcf.setBagStoreRoot(root.toString());
        }
        mcf.useMicroProfile(microProfile);
        return mcf;
    }

    @Test
    void aConfigPropertyWinsOverMicroProfileConfigWhichWinsOverTheDefault() throws Exception {
        Path root = AdapterFixture.freshRoot("mp-precedence");
        LeaseholdManagedConnectionFactory mcf = definition(root, Map.of("Log", "from-mp", "MaxLeaseMillis", "20000",
                "FlushPolicy", "interval:50", "MaxNamesPerUnit", "7"));
        mcf.setLog("explicit");
        AdapterConfig c = mcf.config();
        assertEquals("explicit", c.log(), "the definition's own value");
        assertEquals(Duration.ofMillis(20_000), c.maxLease(), "MicroProfile Config supplies an unset property");
        assertEquals(7, c.maxNamesPerUnit());
        assertEquals(Duration.ofMillis(2_000), c.grace(), "neither: the default");
        assertEquals(Duration.ofMillis(5_000), c.defaultWait(), "neither: the default");
    }

    @Test
    void anEmptyConfigPropertyIsUnsetAndMicroProfileConfigSuppliesIt() throws Exception {
        LeaseholdManagedConnectionFactory mcf = definition(null, Map.of("BagStoreRoot",
                AdapterFixture.freshRoot("mp-root").toString(), "WriterId", "node-7"));
        mcf.setWriterId("");
        mcf.setBagStoreRoot(" ");
        AdapterConfig c = mcf.config();
        assertEquals("node-7", c.writerId());
        assertTrue(c.bagStoreRoot().toString().contains("mp-root"), c.bagStoreRoot().toString());
    }

    @Test
    void withoutMicroProfileConfigEveryUnsetPropertyHasItsDefault() throws Exception {
        // This module's tests have no MicroProfile Config on their class path: the server lookup finds nothing.
        assertEquals(Map.of(), MicroProfileSettings.fromServer(LeaseholdManagedConnectionFactory.PROPERTIES));
        LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
        mcf.setBagStoreRoot(AdapterFixture.freshRoot("mp-none").toString());
        AdapterConfig c = mcf.config();
        assertEquals("default", c.log());
        assertEquals(AdapterConfig.EMBEDDED, c.leaseService());
        assertEquals(Duration.ofMillis(10_000), c.maxLease());
        assertEquals(Duration.ofMillis(300_000), c.inDoubtHold());
    }

    @Test
    void aValueThatIsNotANumberNamesItsKey() throws Exception {
        LeaseholdManagedConnectionFactory mcf = definition(AdapterFixture.freshRoot("mp-nan"),
                Map.of("GraceMillis", "2s"));
        InvalidPropertyException e = assertThrows(InvalidPropertyException.class, mcf::config);
        assertEquals("Leasehold connection definition: GraceMillis is '2s' (from MicroProfile Config key "
                + "leasehold.GraceMillis): not a whole number of milliseconds; correct the key or remove it",
                e.getMessage());
    }

    @Test
    void aValueOutOfRangeFailsWithTheConfigPropertysMessageAndItsKey() throws Exception {
        LeaseholdManagedConnectionFactory mcf = definition(AdapterFixture.freshRoot("mp-range"),
                Map.of("MaxLeaseMillis", "0"));
        InvalidPropertyException e = assertThrows(InvalidPropertyException.class, mcf::config);
        assertEquals("Leasehold connection definition: MaxLeaseMillis is 0; use a positive duration of at most one "
                + "day (86400000); the default is 10000 (the value comes from MicroProfile Config key "
                + "leasehold.MaxLeaseMillis; a config-property of the connection definition would take precedence)",
                e.getMessage());
    }

    @Test
    void aBadValueSetOnTheDefinitionIsNotBlamedOnMicroProfileConfig() throws Exception {
        LeaseholdManagedConnectionFactory mcf = definition(AdapterFixture.freshRoot("mp-explicit"),
                Map.of("MaxLeaseMillis", "20000", "FlushPolicy", "always"));
        mcf.setFlushPolicy("sometimes");
        InvalidPropertyException e = assertThrows(InvalidPropertyException.class, mcf::config);
        assertTrue(e.getMessage().startsWith("Leasehold connection definition: FlushPolicy 'sometimes' is not "
                + "understood"), e.getMessage());
        assertTrue(!e.getMessage().contains("MicroProfile"), e.getMessage());
    }

    @Test
    void aStoreRootFromMicroProfileConfigThatDoesNotExistNamesTheKey() {
        LeaseholdManagedConnectionFactory mcf = definition(null, Map.of("BagStoreRoot", "/nonexistent/leasehold-mp"));
        InvalidPropertyException e = assertThrows(InvalidPropertyException.class, mcf::config);
        assertTrue(e.getMessage().contains("BagStoreRoot /nonexistent/leasehold-mp does not exist")
                && e.getMessage().contains("MicroProfile Config key leasehold.BagStoreRoot"), e.getMessage());
    }

    @Test
    void aCountBeyondAnIntNamesItsKey() {
        MicroProfileSettings mp = new MicroProfileSettings(Map.of("MaxNamesPerUnit", "3000000000"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> mp.count("MaxNamesPerUnit", null));
        assertTrue(e.getMessage().contains("leasehold.MaxNamesPerUnit"), e.getMessage());
        assertEquals(List.of(), List.copyOf(new MicroProfileSettings(Map.of()).supplied()));
    }
}
