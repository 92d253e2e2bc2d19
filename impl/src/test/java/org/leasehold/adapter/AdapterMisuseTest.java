package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.InvalidPropertyException;

import org.junit.jupiter.api.Test;
import org.leasehold.LeaseholdException;
import org.leasehold.connector.ConnectionClosedException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.connector.NoLeaseHeldException;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.ManualTimeSource;

/** Bad configuration and bad use: each a clear error at deploy or call time, nothing lost. */
class AdapterMisuseTest {

    private static String deployError(Consumer<LeaseholdManagedConnectionFactory> configure) throws Exception {
        Path root = AdapterFixture.freshRoot("misuse");
        LeaseholdResourceAdapter ra = new LeaseholdResourceAdapter();
        ra.useTimeSource(new ManualTimeSource(AdapterFixture.START));
        try (TestBootstrapContext ctx = new TestBootstrapContext(null)) {
            ra.start(ctx);
            LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
            mcf.setBagStoreRoot(root.toString());
            mcf.setWriterId("misuse");
            configure.accept(mcf);
            mcf.setResourceAdapter(ra);
            ResourceException e = assertThrows(ResourceException.class, () -> mcf.createConnectionFactory(null));
            return e.getMessage();
        } finally {
            ra.stop();
        }
    }

    @Test
    void badConfigurationFailsTheDeploymentNamingTheProperty() throws Exception {
        String missing = deployError(m -> m.setBagStoreRoot("target/adapter-tests/does-not-exist"));
        assertTrue(missing.contains("BagStoreRoot") && missing.contains("does not exist"), missing);
        Path file = Files.createTempFile(Path.of("target"), "not-a-dir", ".txt");
        String notDir = deployError(m -> m.setBagStoreRoot(file.toString()));
        assertTrue(notDir.contains("not a directory"), notDir);
        String unset = deployError(m -> m.setBagStoreRoot(""));
        assertTrue(unset.contains("BagStoreRoot is not set"), unset);
        String log = deployError(m -> m.setLog("../escape"));
        assertTrue(log.contains("Log '../escape'"), log);
        String zero = deployError(m -> m.setMaxLeaseMillis(0L));
        assertTrue(zero.contains("MaxLeaseMillis is 0"), zero);
        String tooLong = deployError(m -> m.setMaxLeaseMillis(Duration.ofDays(2).toMillis()));
        assertTrue(tooLong.contains("at most one day"), tooLong);
        String grace = deployError(m -> m.setGraceMillis(-1L));
        assertTrue(grace.contains("GraceMillis is -1"), grace);
        String flush = deployError(m -> m.setFlushPolicy("sometimes"));
        assertTrue(flush.contains("FlushPolicy 'sometimes'"), flush);
        String mode = deployError(m -> m.setLeaseService("zookeeper"));
        assertTrue(mode.contains("LeaseService 'zookeeper'"), mode);
    }

    @Test
    void anUnwritableRootIsRefusedForAnUnprivilegedUser() throws Exception {
        Path root = AdapterFixture.freshRoot("readonly");
        Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("r-xr-xr-x"));
        try {
            if (Files.isWritable(root)) {
                // The superuser ignores mode bits, so the check cannot be seen to fail here; the property check still
                // asks the file system, which is what decides for an ordinary server account.
                org.junit.jupiter.api.Assumptions.abort("running as a user who can write a read-only directory");
            }
            String e = deployError(m -> m.setBagStoreRoot(root.toString()));
            assertTrue(e.contains("not writable"), e);
        } finally {
            Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void appendWithoutALeaseOrAfterCloseIsRefused() throws Exception {
        try (AdapterFixture fx = new AdapterFixture("use", m -> { })) {
            LeaseConnection c = fx.connection();
            NoLeaseHeldException none = assertThrows(NoLeaseHeldException.class,
                    () -> c.append("x".getBytes(StandardCharsets.UTF_8)));
            assertTrue(none.getMessage().contains("acquire"), none.getMessage());
            c.acquire("a");
            c.close();
            assertThrows(ConnectionClosedException.class, () -> c.append("x".getBytes(StandardCharsets.UTF_8)));
            assertThrows(ConnectionClosedException.class, () -> c.acquire("b"));
            assertTrue(fx.messages().isEmpty());
            try (LeaseConnection again = fx.connection()) {
                again.acquire("a");
            }
        }
    }

    @Test
    void takingMoreNamesThanConfiguredIsRefused() throws Exception {
        try (AdapterFixture fx = new AdapterFixture("names", m -> m.setMaxNamesPerUnit(3))) {
            try (LeaseConnection c = fx.connection()) {
                c.acquire("n/1", "n/2");
                List<String> two = new ArrayList<>(List.of("n/3", "n/4"));
                InvalidLeaseRequestException e = assertThrows(InvalidLeaseRequestException.class,
                        () -> c.acquire(LeaseOptions.of(two)));
                assertEquals(InvalidLeaseRequestException.Reason.TOO_MANY_NAMES, e.reason());
                assertTrue(e.getMessage().contains("MaxNamesPerUnit"), e.getMessage());
                c.acquire("n/3");
            }
        }
    }

    @Test
    void aSecondServerInEmbeddedModeOnTheSameLogRefusesToStart() throws Exception {
        Path root = AdapterFixture.freshRoot("owners");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        try (AdapterFixture first = new AdapterFixture(root, time, m -> m.setWriterId("server-a"))) {
            first.connection().close();
            String refused = secondServer(root, time);
            assertTrue(refused.contains("served by the embedded lease service of writer 'server-a'")
                    && refused.contains("serves one server only"), refused);
        }
    }

    @Test
    void aCrashedOwnerDoesNotBlockTheLogForever() throws Exception {
        Path root = AdapterFixture.freshRoot("takeover");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        AdapterFixture first = new AdapterFixture(root, time, m -> m.setWriterId("server-a"));
        first.connection().close();
        LeaseholdRuntime crashed = first.mcf.runtime();
        // A crash: the owner's heartbeats stop (nothing is released or cleaned up).
        crashed.ownership().close();
        assertTrue(secondServer(root, time).contains("serves one server only"), "still within the owner's TTL");
        time.advance(Duration.ofSeconds(9));
        try (AdapterFixture second = new AdapterFixture(root, time, m -> m.setWriterId("server-b"))) {
            LeaseConnection c = second.connection();
            LeaseServiceUnavailableException quiet = assertThrows(LeaseServiceUnavailableException.class,
                    () -> c.acquire(LeaseOptions.of("k").waitFor(Duration.ZERO)));
            assertTrue(quiet.availableAt() != null, quiet.getMessage());
            time.set(quiet.availableAt());
            c.acquire(LeaseOptions.of("k").waitFor(Duration.ZERO));
            c.close();
        } finally {
            first.close();
        }
    }

    private static String secondServer(Path root, ManualTimeSource time) throws Exception {
        LeaseholdResourceAdapter ra = new LeaseholdResourceAdapter();
        ra.useTimeSource(time);
        try (TestBootstrapContext ctx = new TestBootstrapContext(null)) {
            ra.start(ctx);
            LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
            mcf.setBagStoreRoot(root.toString());
            mcf.setLog("ledger");
            mcf.setWriterId("server-b");
            mcf.setResourceAdapter(ra);
            return assertThrows(ResourceException.class, () -> mcf.createConnectionFactory(null)).getMessage();
        } finally {
            ra.stop();
        }
    }

    /** WildFly's order: the connection factory is created first, then the adapter is started. */
    private static LeaseholdResourceAdapter factoryThenStart(Path root, ManualTimeSource time, String writer,
            TestBootstrapContext ctx, List<LeaseConnectionFactoryImpl> created) throws Exception {
        LeaseholdResourceAdapter ra = new LeaseholdResourceAdapter();
        ra.useTimeSource(time);
        LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
        mcf.setBagStoreRoot(root.toString());
        mcf.setLog("ledger");
        mcf.setWriterId(writer);
        mcf.setResourceAdapter(ra);
        created.add((LeaseConnectionFactoryImpl) mcf.createConnectionFactory(new TestConnectionManager(
                com.arjuna.ats.jta.TransactionManager.transactionManager())));
        ra.start(ctx);
        return ra;
    }

    @Test
    void aFactoryCreatedBeforeTheAdapterStartsGetsItsRuntimeWhenTheAdapterStarts() throws Exception {
        Path root = AdapterFixture.freshRoot("order");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        List<LeaseConnectionFactoryImpl> created = new ArrayList<>();
        try (TestBootstrapContext ctx = new TestBootstrapContext(null)) {
            LeaseholdResourceAdapter first = factoryThenStart(root, time, "server-a", ctx, created);
            try {
                // No connection yet: the adapter's start alone must have started the runtime that owns the log.
                String refused = secondServer(root, time);
                assertTrue(refused.contains("served by the embedded lease service of writer 'server-a'"), refused);
                created.get(0).getConnection().close();
            } finally {
                first.stop();
            }
        }
    }

    @Test
    void aRuntimeThatCannotStartWithTheAdapterIsReportedByTheFirstConnection() throws Exception {
        Path root = AdapterFixture.freshRoot("order-refused");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        try (AdapterFixture owner = new AdapterFixture(root, time, m -> m.setWriterId("server-a"))) {
            owner.connection().close();
            List<LeaseConnectionFactoryImpl> created = new ArrayList<>();
            try (TestBootstrapContext ctx = new TestBootstrapContext(null)) {
                LeaseholdResourceAdapter second = factoryThenStart(root, time, "server-b", ctx, created);
                try {
                    LeaseholdException e = assertThrows(LeaseholdException.class, () -> created.get(0).getConnection());
                    assertTrue(e.getMessage().contains("serves one server only"), e.getMessage());
                    // A container wraps the adapter's exception in its own (IronJacamar: IJ000453); the message the
                    // application gets still begins with the adapter's reason.
                    LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
                    mcf.setBagStoreRoot(root.toString());
                    mcf.setLog("ledger");
                    mcf.setWriterId("server-b");
                    mcf.setResourceAdapter(second);
                    LeaseConnectionFactoryImpl wrapped = new LeaseConnectionFactoryImpl(mcf, (m, info) -> {
                        try {
                            return m.createManagedConnection(null, info);
                        } catch (ResourceException inner) {
                            throw new ResourceException("IJ000453: Unable to get managed connection for eis/x", inner);
                        }
                    });
                    LeaseholdException w = assertThrows(LeaseholdException.class, wrapped::getConnection);
                    assertTrue(w.getMessage().startsWith("no Leasehold connection could be allocated: the log "),
                            w.getMessage());
                    assertTrue(w.getMessage().contains("writer 'server-a'") && w.getMessage().contains(
                            "ownership lapses at") && w.getMessage().endsWith("(IJ000453: Unable to get managed "
                            + "connection for eis/x)"), w.getMessage());
                } finally {
                    second.stop();
                }
            }
        }
    }

    @Test
    void invalidPropertyExceptionIsWhatContainersReport() throws Exception {
        LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
        mcf.setBagStoreRoot(null);
        assertThrows(InvalidPropertyException.class, mcf::config);
    }
}
