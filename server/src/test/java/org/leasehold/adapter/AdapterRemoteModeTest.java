package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import jakarta.resource.ResourceException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.Lease;
import org.leasehold.lease.NameStatus;
import org.leasehold.server.LeaseServer;
import org.leasehold.server.ServerConfig;
import org.leasehold.time.SystemTimeSource;

/**
 * The resource adapter in remote mode: two adapters (two "servers" of a fleet, with their own writer identities) on
 * one bag store log take their leases from one lease server, so they may share the log, which embedded mode refuses.
 */
class AdapterRemoteModeTest {
    private LeaseServer server;
    private SystemTimeSource time;
    private AdapterFixture a;
    private AdapterFixture b;

    @BeforeEach
    void start() throws Exception {
        server = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO)));
        time = new SystemTimeSource("adapter-remote-test");
        Path root = AdapterFixture.freshRoot("remote");
        String mode = "remote:" + server.address();
        a = new AdapterFixture(root, time, mcf -> {
            mcf.setLeaseService(mode);
            mcf.setWriterId("fleet-a");
            mcf.setRemoteOptions("callTimeout=5s");
        });
        b = new AdapterFixture(root, time, mcf -> {
            mcf.setLeaseService(mode);
            mcf.setWriterId("fleet-b");
        });
    }

    @AfterEach
    void stop() {
        if (a != null) {
            a.close();
        }
        if (b != null) {
            b.close();
        }
        time.close();
        server.close();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void twoServersShareALogThroughTheLeaseServer() throws Exception {
        a.tm.begin();
        Lease first;
        try (LeaseConnection c = a.connection()) {
            first = c.acquire("shared/account");
            c.append(bytes("from a"));
        }
        CountDownLatch asking = new CountDownLatch(1);
        CompletableFuture<Void> fromB = CompletableFuture.runAsync(() -> {
            try {
                b.tm.begin();
                try (LeaseConnection c = b.connection()) {
                    asking.countDown();
                    c.acquire("shared/account");
                    c.append(bytes("from b"));
                }
                b.tm.commit();
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        assertTrue(asking.await(10, TimeUnit.SECONDS));
        Thread.sleep(200);
        assertFalse(fromB.isDone(), "the second server waits for the lease the first holds");
        a.tm.commit();
        fromB.get(30, TimeUnit.SECONDS);

        List<Message> log = a.messages();
        assertEquals(List.of("from a", "from b"), log.stream()
                .map(m -> new String(m.payload(), StandardCharsets.UTF_8)).toList());
        assertEquals(List.of("fleet-a", "fleet-b"), log.stream().map(Message::writer).toList());
        assertTrue(log.get(1).timestamp().isAfter(log.get(0).timestamp()));
        assertTrue(log.get(1).leases().get(0).generation() > first.grant("shared/account").generation());
        NameStatus status = a.mcf.runtime().leases().inspect("shared/account", 1).get(0);
        assertTrue(status.holders().isEmpty(), "both released");
        assertEquals(log.get(1).timestamp(), status.floor(), "released with the commit's timestamp as watermark");
    }

    @Test
    void badRemoteSettingsFailTheDeployment() throws Exception {
        Path root = AdapterFixture.freshRoot("remote-bad");
        ResourceException e = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> new AdapterFixture(root, time, mcf -> mcf.setRemoteOptions("tokenFile")));
        assertTrue(e.getMessage().contains("RemoteOptions entry 'tokenFile' is not key=value"), e.getMessage());
        ResourceException none = org.junit.jupiter.api.Assertions.assertThrows(ResourceException.class,
                () -> new AdapterFixture(root, time, mcf -> mcf.setLeaseService("remote:")));
        assertTrue(none.getMessage().contains("names no server"), none.getMessage());
    }
}
