package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.leasehold.adapter.RemoteModeProbe;
import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.engine.EngineConfig;
import org.leasehold.etcd.EtcdCluster;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.NameStatus;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.SystemTimeSource;

/**
 * Two lease servers with {@code --backend etcd://...} in front of one real etcd serve the same names: a name taken
 * through one is busy through the other, a release through one hands its watermark to a holder through the other, and
 * when one server stops the other goes on serving the names it never saw, with their state. The resource adapter in
 * etcd mode shares a log the same way.
 */
class EtcdBackendTest {
    private static EtcdCluster etcd;

    @BeforeAll
    static void startEtcd() {
        etcd = EtcdCluster.start("server-backend", 1);
    }

    @AfterAll
    static void stopEtcd() {
        etcd.close();
    }

    private static String backend() {
        return "etcd://" + etcd.endpoints().stream().map(URI::getAuthority).collect(Collectors.joining(","))
                + "?prefix=servers/" + UUID.randomUUID() + "/";
    }

    @Test
    void serversInFrontOfOneEtcdServeTheSameNames() throws Exception {
        String spec = backend();
        EngineConfig engine = EngineConfig.defaults().withQuietPeriod(Duration.ZERO);
        LeaseServer one = LeaseServer.start(ServerConfig.loopback(engine).withBackend(spec));
        LeaseServer two = LeaseServer.start(ServerConfig.loopback(engine).withBackend(spec));
        HolderId a = new HolderId("host-a", "tx/1");
        HolderId b = new HolderId("host-b", "tx/2");
        try (RemoteLeaseService viaOne = new RemoteLeaseService(RemoteClientConfig.builder(one.address()).build());
                RemoteLeaseService viaTwo = new RemoteLeaseService(RemoteClientConfig.builder(two.address()).build())) {
            Lease first = viaOne.acquire(LeaseRequest.builder(a, "tenant/7").build());
            LeaseBusyException busy = assertThrows(LeaseBusyException.class,
                    () -> viaTwo.acquire(LeaseRequest.builder(b, "tenant/7").build()));
            assertEquals("tenant/7", busy.name());
            Instant watermark = first.floor().plusNanos(5_000);
            viaOne.release(first, watermark, "log=ledger");
            Lease second = viaTwo.acquire(LeaseRequest.builder(b, "tenant/7").build());
            LeaseGrant g = second.grant("tenant/7");
            assertEquals(watermark, g.floor(), "the watermark released through the other server");
            assertEquals(Ending.RELINQUISHED, g.predecessor().ending());
            assertEquals(first.grant("tenant/7").correlationId(), g.predecessor().correlationId());
            assertTrue(g.generation() > first.grant("tenant/7").generation());
            assertTrue(viaOne.check("tenant/7", g.generation()), "either server answers the fencing check");

            one.close(); // a front stops: the names live on in etcd
            Instant second2 = second.floor().plusNanos(9_000);
            viaTwo.release(second, second2, null);
            Lease third = viaTwo.acquire(LeaseRequest.builder(a, "tenant/7").build());
            assertEquals(second2, third.floor());
            assertTrue(third.grant("tenant/7").generation() > g.generation());
        } finally {
            one.close();
            two.close();
        }
    }

    /**
     * The resource adapter with {@code LeaseService=etcd:...} (two adapters on one bag store, as two application
     * servers): a transaction commits its message under an etcd lease, the second waits for the first's lease, a
     * rolled-back transaction writes nothing and releases, and the commit's timestamp is the floor etcd hands on.
     */
    @Test
    void twoAdaptersShareALogThroughEtcd() throws Exception {
        String spec = "etcd:" + etcd.endpoints().stream().map(URI::getAuthority).collect(Collectors.joining(","))
                + "?prefix=adapters/" + UUID.randomUUID() + "/";
        Path root = RemoteModeProbe.freshRoot("etcd-adapters");
        try (SystemTimeSource time = new SystemTimeSource("adapter-etcd-test");
                RemoteModeProbe a = RemoteModeProbe.start(root, time, mcf -> {
                    mcf.setLeaseService(spec);
                    mcf.setWriterId("fleet-a");
                });
                RemoteModeProbe b = RemoteModeProbe.start(root, time, mcf -> {
                    mcf.setLeaseService(spec);
                    mcf.setWriterId("fleet-b");
                })) {
            assertTrue(a.leases() instanceof org.leasehold.etcd.EtcdLeaseService, a.leases().getClass().getName());
            a.tm().begin();
            Lease first;
            try (LeaseConnection c = a.connection()) {
                first = c.acquire("shared/account");
                c.append(bytes("from a"));
            }
            CountDownLatch asking = new CountDownLatch(1);
            CompletableFuture<Void> fromB = CompletableFuture.runAsync(() -> {
                try {
                    b.tm().begin();
                    try (LeaseConnection c = b.connection()) {
                        asking.countDown();
                        c.acquire("shared/account");
                        c.append(bytes("from b"));
                    }
                    b.tm().commit();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            assertTrue(asking.await(10, TimeUnit.SECONDS));
            a.tm().commit();
            fromB.get(30, TimeUnit.SECONDS);

            b.tm().begin();
            try (LeaseConnection c = b.connection()) {
                c.acquire("shared/account");
                c.append(bytes("rolled back"));
            }
            b.tm().rollback();

            List<Message> log = a.messages();
            assertEquals(List.of("from a", "from b"), log.stream()
                    .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
            assertTrue(log.get(1).leases().get(0).generation() > first.grant("shared/account").generation());
            NameStatus status = a.leases().inspect("shared/account", 1).get(0);
            assertTrue(status.holders().isEmpty(), "every transaction released: " + status);
            assertEquals(log.get(1).timestamp(), status.floor(), "the last commit's timestamp is the watermark");
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void aBadBackendSpecificationRefusesTheStartNamingThePart() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LeaseServer.start(
                ServerConfig.loopback(EngineConfig.defaults()).withBackend("etcd://127.0.0.1:1?tsl=true")));
        assertTrue(e.getMessage().contains("tsl") && e.getMessage().contains("known options"), e.getMessage());
    }
}
