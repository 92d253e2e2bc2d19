package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.adapter.RemoteModeProbe;
import org.leasehold.audit.AuditProblem;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.bag.Message;
import org.leasehold.bag.StampedLease;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.LeaseKind;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

/**
 * Remote mode with names on two lease servers: a frame whose leases come from both carries, on each witness, the
 * signed time of that witness's own server (FORMAT.md, "Frame witness"), also when the frame before it (within the
 * adapter's reuse of a signed time) asked the other server. Every witness of the log is the one of the lease's
 * upgrade at commit (full, not the tentative grant's) and verifies against the keys both servers published into the
 * store; a witness of one server with the other's signed time attached is a
 * SERVICE_MISMATCH.
 */
class MultiServerSignedTimeTest {
    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private <T extends AutoCloseable> T closeLater(T c) {
        return closing.later(c);
    }

    private LeaseServer start(Path root) throws Exception {
        return closeLater(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withSigning(new ServerConfig.Signing(true, null, root))));
    }

    /** The id of the key of the server {@code name} belongs to, asked through a client of both servers. */
    private static String serverKeyOf(RemoteLeaseService client, String name) throws Exception {
        return client.publicKeys(name).get(0).id().toString();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void eachWitnessCarriesTheSignedTimeOfItsOwnServer() throws Exception {
        Path root = RemoteModeProbe.freshRoot("multi-server-signed-time");
        LeaseServer a = start(root);
        LeaseServer b = start(root);
        String servers = a.address() + "," + b.address();
        RemoteLeaseService client = closeLater(new RemoteLeaseService(RemoteClientConfig.builder(a.address(), b.address())
                .callTimeout(Duration.ofSeconds(10)).build()));
        // Two names on different servers (the servers' rendezvous order depends on their ports).
        String onFirst = "multi/0";
        String keyOfFirst = serverKeyOf(client, onFirst);
        String onOther = null;
        for (int i = 1; i < 200 && onOther == null; i++) {
            if (!serverKeyOf(client, "multi/" + i).equals(keyOfFirst)) {
                onOther = "multi/" + i;
            }
        }
        assertNotNull(onOther, "some name belongs to the other server");

        SystemTimeSource time = closeLater(new SystemTimeSource("multi-server-signed-time"));
        RemoteModeProbe adapter = closeLater(RemoteModeProbe.start(root, time, mcf -> {
            mcf.setLeaseService("remote:" + servers);
            mcf.setWriterId("multi");
            mcf.setRemoteOptions("callTimeout=10s");
        }));
        // A frame on both servers (the first lease on the first), then at once frames on the other server alone and on
        // both the other way round: within the adapter's reuse of a signed time.
        for (List<String> names : List.of(List.of(onFirst, onOther), List.of(onOther), List.of(onOther, onFirst))) {
            adapter.tm().begin();
            try (LeaseConnection c = adapter.connection()) {
                c.acquire(names.toArray(String[]::new));
                c.append(bytes(String.join("+", names)));
            }
            adapter.tm().commit();
        }
        // Then leases held on both servers for longer than a signed time is reused before a write (outside a
        // transaction: their witnesses are their grants'): the adapter attaches a signed time of each witness's
        // server. (The transactions' witnesses are their upgrades' at prepare, signed just before the write: they are
        // their frames' signed time, and nothing is attached to them.)
        try (LeaseConnection c = adapter.connection()) {
            c.acquire(onFirst, onOther);
            Thread.sleep(300);
            c.append(bytes("held"));
        }

        AuditVerifier verifier = new AuditVerifier(PublishedKeys.load(new NfsSafeFiles(),
                PublishedKeys.directory(root)));
        List<Message> log = adapter.messages();
        assertEquals(4, log.size());
        Set<String> services = new HashSet<>();
        for (Message m : log) {
            boolean held = new String(m.payload(), StandardCharsets.UTF_8).equals("held");
            for (StampedLease l : m.leases()) {
                FrameWitness fw = FrameWitness.decode(l.witness());
                if (held) {
                    assertNotNull(fw.time(), "the adapter attached a signed time to " + l.name());
                }
                if (fw.time() != null) {
                    assertEquals(fw.witness().serviceId(), fw.time().serviceId(), "the witness of " + l.name()
                            + " in '" + new String(m.payload(), StandardCharsets.UTF_8) + "' carries its own server's "
                            + "signed time");
                }
                long off = Math.abs(Micros.of(m.timestamp()) - fw.latestSignedTime());
                assertTrue(off < 200_000, "the frame's signed time of " + l.name() + " is " + off + " µs off");
                assertEquals(List.of(), verifier.check(fw));
                if (!held) {
                    assertEquals(LeaseKind.FULL, fw.witness().kind(), "the witness of " + l.name() + " is its upgrade's");
                }
                services.add(fw.witness().serviceId());
            }
        }
        assertEquals(2, services.size(), "witnesses of both servers: " + services);

        // The rule the verifier applies: another server's signed time on a witness is a service mismatch.
        Message both = log.get(3);
        FrameWitness first = FrameWitness.decode(both.leases().get(0).witness());
        FrameWitness other = FrameWitness.decode(both.leases().get(1).witness());
        assertNotEquals(first.witness().serviceId(), other.witness().serviceId());
        List<AuditProblem> crossed = verifier.check(other.withTime(first.time(), first.timeProof()));
        assertEquals(1, crossed.size(), crossed.toString());
        assertEquals(AuditProblem.Kind.SERVICE_MISMATCH, crossed.get(0).kind());
        assertTrue(crossed.get(0).message().contains("a witness carries the signed time of its own service"),
                crossed.get(0).message());
    }
}
