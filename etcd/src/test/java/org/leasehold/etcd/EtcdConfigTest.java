package org.leasehold.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.leasehold.backend.LeaseBackend;
import org.leasehold.backend.LeaseBackends;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;

/** The {@code etcd:} specification, and the backend found through {@link java.util.ServiceLoader} by its scheme. */
class EtcdConfigTest {

    @Test
    void endpointsAndOptionsAreParsed() {
        EtcdConfig c = EtcdConfig.parse("etcd:10.0.0.1:2379, https://10.0.0.2:2379?prefix=payments/&user=lh"
                + "&password=s3cret&callTimeout=750ms&sessionTtl=20s&maxLease=5s&clockError=100ms");
        assertEquals(List.of(URI.create("http://10.0.0.1:2379"), URI.create("https://10.0.0.2:2379")), c.endpoints());
        assertEquals("payments/", c.prefix());
        assertEquals("lh", c.user());
        assertEquals(Duration.ofMillis(750), c.callTimeout());
        assertEquals(Duration.ofSeconds(20), c.sessionTtl());
        assertEquals(Duration.ofSeconds(5), c.maxLeaseDuration());
        assertEquals(Duration.ofMillis(100), c.clockErrorBound());
        assertEquals(EtcdConfig.LIST_NAMES_LIMIT, c.listNames(), "by default the start lists up to 1 Mi names");
        assertEquals(0, EtcdConfig.parse("etcd:10.0.0.1:2379?listNames=0").listNames());
        assertEquals(5_000, EtcdConfig.parse("etcd:10.0.0.1:2379?listNames=5000").listNames());
        assertTrue(!c.toString().contains("s3cret"), "the password never shows: " + c);
        EtcdConfig tls = EtcdConfig.parse("etcd://a:1,b:2?tls=true&trust=/etc/ca.pem&cert=/etc/c.pem&key=/etc/k.pem");
        assertEquals(List.of(URI.create("https://a:1"), URI.create("https://b:2")), tls.endpoints());
        assertEquals(Path.of("/etc/ca.pem"), tls.trustCertificates());
    }

    @Test
    void badSpecificationsAreRefusedNamingThePart() {
        assertRefused("etcd:", "endpoints");
        assertRefused("zk:127.0.0.1:2181", "must start with etcd:");
        assertRefused("etcd:127.0.0.1:2379?tsl=true", "known options");
        assertRefused("etcd:127.0.0.1:2379?user=lh", "both user and password");
        assertRefused("etcd:127.0.0.1:2379?cert=/c.pem", "both the client certificate and its key");
        assertRefused("etcd:127.0.0.1:2379?sessionTtl=500ms", "at least 2 s");
        assertRefused("etcd:127.0.0.1:2379?maxLease=0s", "maxLeaseDuration");
        assertRefused("etcd:127.0.0.1?prefix=x/", "host:port");
        assertRefused("etcd:127.0.0.1:2379?listNames=all", "etcd listNames 'all' is not an integer: give how many");
        assertRefused("etcd:127.0.0.1:2379?listNames=-1", "use 0 to 1048576 (0 lists no names at the start)");
        assertRefused("etcd:127.0.0.1:2379?listNames=2000000", "use 0 to 1048576");
    }

    private static void assertRefused(String spec, String words) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> EtcdConfig.parse(spec));
        assertTrue(e.getMessage().contains(words), spec + ": " + e.getMessage());
    }

    @Test
    void theBackendIsFoundByItsScheme() {
        LeaseBackend.Settings settings = new LeaseBackend.Settings(Duration.ofSeconds(7), Duration.ofSeconds(1),
                Duration.ofMillis(200), "app-1");
        ManualTimeSource time = new ManualTimeSource(EtcdFixture.START);
        try (LeaseService s = LeaseBackends.open("etcd:127.0.0.1:2379?prefix=never-used/", settings, time,
                getClass().getClassLoader())) {
            EtcdLeaseService etcd = (EtcdLeaseService) s;
            assertEquals(Duration.ofSeconds(7), etcd.config().maxLeaseDuration(), "the caller's times by default");
            assertEquals("etcd/app-1", etcd.serviceId());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> LeaseBackends.open("zk:127.0.0.1:2181", settings, time, getClass().getClassLoader()));
        assertTrue(e.getMessage().contains("no lease backend for 'zk:'") && e.getMessage().contains("found etcd"),
                e.getMessage());
    }
}
