package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;

/**
 * The health of an adapter whose lease service is a backend ({@code LeaseService=etcd:...}): the checks name the
 * backend and its endpoints, never lease servers; the backend is asked with a read at most once a second, and one
 * that does not answer makes the adapter not ready (but live) until it answers again. The backend here is the engine
 * behind a switch that makes its reads fail as an unreachable etcd's do.
 */
class AdapterBackendHealthTest {

    private static AdapterStatus.Check check(AdapterStatus s, String name) {
        return s.checks().stream().filter(c -> c.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no check " + name + " in " + s));
    }

    @Test
    void theChecksNameEtcdAndItsEndpointsAndAnEtcdThatDoesNotAnswerMakesItNotReadyButLive() throws Exception {
        Path root = AdapterFixture.freshRoot("backend-health");
        ManualTimeSource time = new ManualTimeSource(AdapterFixture.START);
        AdapterConfig config = AdapterConfig.from(root.toString(), "ledger",
                "etcd:10.0.0.1:2379,10.0.0.2:2379?prefix=payments/&user=leasehold&password=s3cret", null, null, null,
                null, null, "writer-a", null, null, null, null, null, null, null, null, null, null, null, null, null);
        EmbeddedLeaseService engine = new EmbeddedLeaseService(EngineConfig.defaults(), time);
        AtomicBoolean down = new AtomicBoolean();
        AtomicInteger reads = new AtomicInteger();
        LeaseService etcd = (LeaseService) Proxy.newProxyInstance(getClass().getClassLoader(),
                new Class<?>[] {LeaseService.class}, (proxy, method, args) -> {
                    if (method.getName().equals("inspect")) {
                        reads.incrementAndGet();
                        if (down.get()) {
                            throw new IllegalStateException("etcd at [http://10.0.0.1:2379, http://10.0.0.2:2379] did "
                                    + "not complete the scan (DEADLINE_EXCEEDED)");
                        }
                    }
                    try {
                        return method.invoke(engine, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        AdapterHealth health = new AdapterHealth(config, "writer-a", etcd, null, ClockCheck.none(), time);
        try {
            AdapterStatus s = health.status();
            assertTrue(s.ready() && s.live(), s.toString());
            assertEquals("etcd at 10.0.0.1:2379,10.0.0.2:2379 answers", check(s, AdapterStatus.LEASES).detail());
            assertEquals("nothing to compare: etcd keeps no clock, the deadlines are on this server's "
                    + "(MaxClockErrorMillis, 500 ms, bounds the clock difference between the servers that share etcd)",
                    check(s, AdapterStatus.CLOCKS).detail());
            assertEquals("etcd:10.0.0.1:2379,10.0.0.2:2379?prefix=payments/&user=leasehold&password=***",
                    s.leaseService(), "the password is not shown");
            assertFalse(s.toString().contains("lease server"), s.toString());
            assertEquals(1, reads.get());

            down.set(true);
            assertTrue(health.status().ready(), "a read's result is reused for a second");
            assertEquals(1, reads.get());
            time.advance(Duration.ofSeconds(1));
            s = health.status();
            assertFalse(s.ready(), s.toString());
            assertTrue(s.live(), "an etcd that does not answer may come back: no restart");
            assertEquals("etcd at 10.0.0.1:2379,10.0.0.2:2379 does not answer (etcd at [http://10.0.0.1:2379, "
                    + "http://10.0.0.2:2379] did not complete the scan (DEADLINE_EXCEEDED)): no lease is granted until "
                    + "it does. Check that the etcd members run, that this server reaches them, and the LeaseService "
                    + "options (TLS, user)", check(s, AdapterStatus.LEASES).detail());
            assertFalse(s.toString().contains("lease server"), s.toString());

            down.set(false);
            time.advance(Duration.ofSeconds(1));
            assertTrue(health.status().ready(), "answers again");
        } finally {
            health.close();
            engine.close();
        }
    }
}
