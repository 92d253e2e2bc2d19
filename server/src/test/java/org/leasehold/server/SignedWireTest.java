package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

/**
 * The lease server signs (issue 20): in-process servers on loopback with their real clocks, clients on both
 * transports. Every grant, upgrade and renewal comes with a witness whose proof follows on the session; the witnesses
 * verify against the keys the server published into a bag store root, and frames appended through the {@code BagStore}
 * API under the remote lease carry them (read back and verified). The key is kept in the state directory across a
 * restart, taken from a PEM file, or ephemeral; it is served by the keys call and {@code GET /keys}. A client whose own
 * clock is 700 ms off the server's signed time appends; 2 s off, it is refused at the clock check with a message that
 * says by how much, and a writer whose store clock is 2 s off the witness's signed time is refused by the store.
 */
class SignedWireTest {
    private static final HolderId ME = new HolderId("signed-wire-test", "t1");

    private final Path dir = Path.of("target", "signed-wire-" + System.nanoTime());
    private final Closing closing = new Closing();
    /** The real clock, as the servers read it; the skewed clocks of clients are offsets of it. */
    private final SystemTimeSource wall = closeLater(new SystemTimeSource("signed-wire-wall"));

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private <T extends AutoCloseable> T closeLater(T c) {
        return closing.later(c);
    }

    private static ServerConfig base() {
        return ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .withSocket(ServerConfig.SocketSettings.loopback());
    }

    private LeaseServer start(ServerConfig config) throws Exception {
        LeaseServer s = LeaseServer.start(config);
        closing.add(s);
        return s;
    }

    private RemoteLeaseService client(LeaseServer server, RemoteClientConfig.Transport transport) {
        return closeLater(new RemoteLeaseService(RemoteClientConfig.builder(server.address()).transport(transport)
                .callTimeout(Duration.ofSeconds(10)).build()));
    }

    private static KeySet published(Path root) throws Exception {
        return PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root));
    }

    private FileBagStore store(Path root, SystemTimeSource clock) throws Exception {
        FileBagStore s = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(dir.resolve("locks"))
                .metronome(false).maxClockError(Duration.ofSeconds(1)).build(), clock);
        closing.add(s);
        return s;
    }

    private SystemTimeSource clock(long skewMillis) {
        return closeLater(new SystemTimeSource(Clock.offset(wall.clock(), Duration.ofMillis(skewMillis)),
                "signed-wire-clock"));
    }

    /** The frame witness of each grant of {@code lease}, checked to verify and to be of {@code event}. */
    private static void assertWitnessed(Lease lease, WitnessEvent event, AuditVerifier verifier) throws Exception {
        for (LeaseGrant g : lease.grants()) {
            assertNotNull(g.witness(), "grant of " + g.name() + " carries a witness");
            FrameWitness fw = FrameWitness.decode(g.witness().await(Duration.ofSeconds(30)));
            assertEquals(g.name(), fw.witness().name());
            assertEquals(g.generation(), fw.witness().generation());
            assertEquals(g.correlationId(), fw.witness().correlationId());
            assertEquals(event, fw.witness().event());
            assertNull(fw.witness().principal(), "a server that authenticates nobody names no principal");
            assertEquals(List.of(), verifier.check(fw), "the witness of " + g.name() + " verifies");
        }
    }

    private static List<Message> readAll(FileBagStore store, String log) throws Exception {
        List<Message> out = new ArrayList<>();
        try (MessageStream s = store.read(ReadRequest.all(log))) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
        }
        return out;
    }

    @Test
    void grantsUpgradesAndRenewalsOverBothTransportsCarryWitnessesThatVerifyAndFramesCarryThem() throws Exception {
        Path root = dir.resolve("store");
        Files.createDirectories(root);
        LeaseServer server = start(base().withStateDir(dir.resolve("state"))
                .withSigning(new ServerConfig.Signing(true, null, root)));
        KeySet keys = published(root);
        assertEquals(1, keys.keys().size(), "the server published its key before it signed");
        AuditVerifier verifier = new AuditVerifier(keys);
        FileBagStore store = store(root, clock(0));
        store.createLog("log");
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService client = client(server, transport);
            String a = "signed/" + transport + "/a";
            String b = "signed/" + transport + "/b";
            Lease tentative = client.acquire(LeaseRequest.builder(ME, a, b).kind(LeaseKind.TENTATIVE)
                    .leaseFor(Duration.ofSeconds(8)).build());
            assertWitnessed(tentative, WitnessEvent.GRANT, verifier);
            Lease full = client.upgrade(tentative, null);
            assertWitnessed(full, WitnessEvent.UPGRADE, verifier);
            Lease renewed = client.renew(full, full.deadline().plusSeconds(1), null);
            assertWitnessed(renewed, WitnessEvent.RENEWAL, verifier);
            // With a fresh signed time attached, as the adapter does: the renewal's own may be over a second old
            // on a loaded machine.
            byte[] nonce = new byte[16];
            new SecureRandom().nextBytes(nonce);
            SignedTimeProof t = client.signedTime(a, nonce);
            List<LeaseStamp> stamps = new ArrayList<>();
            for (LeaseStamp s : LeaseStamp.of(renewed)) {
                stamps.add(new LeaseStamp(s.name(), s.generation(), s.floor(), s.deadline(), s.writableFrom(),
                        s.predecessorExpiredAt(), FrameWitness.decode(s.witness()).withTime(t.time(), t.proof())
                                .encode()));
            }
            store.append(AppendRequest.of("log", stamps, ("under " + transport).getBytes(StandardCharsets.UTF_8)));
            client.release(renewed, null, null);
            // The keys call on the session names the published key.
            assertEquals(keys.keys().iterator().next().id(), client.publicKeys(a).get(0).id());
        }
        List<Message> all = readAll(store, "log");
        assertEquals(2, all.size());
        for (Message m : all) {
            assertEquals(2, m.leases().size());
            for (StampedLease s : m.leases()) {
                assertTrue(s.witness().length > 0, "frame lease " + s.name() + " carries its witness");
                FrameWitness fw = FrameWitness.decode(s.witness());
                assertEquals(s.name(), fw.witness().name());
                assertEquals(s.generation(), fw.witness().generation());
                assertEquals(List.of(), verifier.check(fw));
            }
        }
        // GET /keys serves the same key.
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                "http://127.0.0.1:" + server.httpPort() + "/keys")).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode());
        PublishedKey k = keys.keys().iterator().next();
        assertTrue(r.body().contains("\"keyId\":\"" + k.id() + "\"") && r.body().contains(k.key().base64())
                && r.body().contains("\"signing\":true"), r.body());
    }

    @Test
    void aServerWithoutSigningGrantsWithoutWitnessesAndFramesStayEmpty() throws Exception {
        Path root = dir.resolve("store-unsigned");
        Files.createDirectories(root);
        LeaseServer server = start(base().withSigning(ServerConfig.Signing.OFF));
        FileBagStore store = store(root, clock(0));
        store.createLog("log");
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService client = client(server, transport);
            Lease lease = client.acquire(LeaseRequest.builder(ME, "unsigned/" + transport).build());
            assertNull(lease.grants().get(0).witness());
            store.append(AppendRequest.of("log", LeaseStamp.of(lease), new byte[] {1}));
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> client.signedTime("unsigned/" + transport, new byte[16]));
            assertTrue(e.getMessage().contains("--no-signing"), e.getMessage());
            assertEquals(List.of(), client.publicKeys("unsigned/" + transport));
            client.release(lease, null, null);
        }
        for (Message m : readAll(store, "log")) {
            assertEquals(0, m.leases().get(0).witness().length);
        }
    }

    @Test
    void theKeyIsKeptInTheStateDirectoryAcrossARestartTakenFromAPemFileOrEphemeral() throws Exception {
        Path state = dir.resolve("state-kept");
        LeaseServer first = start(base().withStateDir(state));
        String kept = client(first, RemoteClientConfig.Transport.GRPC).publicKeys("k").get(0).id().toString();
        first.close();
        LeaseServer second = start(base().withStateDir(state));
        RemoteLeaseService c2 = client(second, RemoteClientConfig.Transport.SOCKET);
        assertEquals(kept, c2.publicKeys("k").get(0).id().toString(), "the restarted server signs with its key");
        // The restarted server grants after its time mark's horizon: the acquisition waits for it.
        Lease lease = c2.acquire(LeaseRequest.builder(ME, "kept").waitFor(Duration.ofSeconds(60)).build());
        assertEquals(kept, FrameWitness.decode(lease.grants().get(0).witness().await(Duration.ofSeconds(30)))
                .proof().keyId().toString());
        c2.release(lease, null, null);
        second.close();

        SigningKey pem = SigningKey.generate(new SecureRandom());
        Path pemFile = dir.resolve("server-key.pem");
        Files.writeString(pemFile, pem.toPem());
        Path root = dir.resolve("store-pem");
        Files.createDirectories(root);
        LeaseServer third = start(base().withStateDir(state).withSigning(new ServerConfig.Signing(true, pemFile, root)));
        assertEquals(pem.id(), client(third, RemoteClientConfig.Transport.GRPC).publicKeys("k").get(0).id());
        assertNotNull(published(root).get(pem.id()), "the PEM key is published into the store root");
        third.close();

        LeaseServer e1 = start(base());
        LeaseServer e2 = start(base());
        assertNotEquals(client(e1, RemoteClientConfig.Transport.GRPC).publicKeys("k").get(0).id(),
                client(e2, RemoteClientConfig.Transport.GRPC).publicKeys("k").get(0).id(),
                "without a state directory and a PEM key each start has its own ephemeral key");
    }

    @Test
    void aSignedTimeOverEitherTransportVerifiesAndEchoesTheNonce() throws Exception {
        Path root = dir.resolve("store-time");
        Files.createDirectories(root);
        LeaseServer server = start(base().withSigning(new ServerConfig.Signing(true, null, root)));
        AuditVerifier verifier = new AuditVerifier(published(root));
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService client = client(server, transport);
            byte[] nonce = new byte[16];
            new SecureRandom().nextBytes(nonce);
            long before = wall.nowMicros();
            SignedTimeProof t = client.signedTime("time", nonce);
            long after = wall.nowMicros() + 1_000L;
            assertTrue(java.util.Arrays.equals(nonce, t.time().nonce()));
            assertTrue(t.time().midpoint() >= before - 1_000 && t.time().midpoint() <= after,
                    "the signed time is the server's clock: " + t.time());
            assertEquals(500_000, t.time().radius(), "the radius is the server's --clock-error");
            assertEquals(List.of(), verifier.check(t));
        }
    }

    @Test
    void aClientWhoseClockIs700MsOffAppendsAndOne2SecondsOffIsRefusedAtTheClockCheck() throws Exception {
        Path root = dir.resolve("store-skew");
        Files.createDirectories(root);
        LeaseServer server = start(base().withSigning(new ServerConfig.Signing(true, null, root)));
        AuditVerifier verifier = new AuditVerifier(published(root));
        int i = 0;
        for (long skew : new long[] {700, -700}) {
            SystemTimeSource local = clock(skew);
            RemoteLeaseService client = closeLater(new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                    .transport(skew > 0 ? RemoteClientConfig.Transport.SOCKET : RemoteClientConfig.Transport.GRPC)
                    .build(), local));
            Lease lease = client.acquire(LeaseRequest.builder(ME, "skew/" + skew).leaseFor(Duration.ofSeconds(8))
                    .build());
            FileBagStore store = store(root, local);
            if (i++ == 0) {
                store.createLog("log");
            }
            // A writer whose clock is behind waits until its clock reaches writableFrom (the store says "retry at").
            CountDownLatch writable = new CountDownLatch(1);
            local.schedule(Micros.of(lease.grants().get(0).writableFrom()), writable::countDown);
            assertTrue(writable.await(30, TimeUnit.SECONDS));
            // As the adapter does: a fresh signed time with the witnesses, so the store compares the frame's
            // timestamp with the service's time at the write.
            byte[] nonce = new byte[16];
            new SecureRandom().nextBytes(nonce);
            SignedTimeProof t = client.signedTime("skew/" + skew, nonce);
            List<LeaseStamp> stamps = new ArrayList<>();
            for (LeaseStamp s : LeaseStamp.of(lease)) {
                stamps.add(new LeaseStamp(s.name(), s.generation(), s.floor(), s.deadline(), s.writableFrom(),
                        s.predecessorExpiredAt(), FrameWitness.decode(s.witness()).withTime(t.time(), t.proof())
                                .encode()));
            }
            store.append(AppendRequest.of("log", stamps, ("skew " + skew).getBytes(StandardCharsets.UTF_8)));
            client.release(lease, null, null);
        }
        FileBagStore reader = store(root, clock(0));
        List<Message> all = readAll(reader, "log");
        assertEquals(2, all.size());
        for (Message m : all) {
            assertEquals(List.of(), verifier.check(FrameWitness.decode(m.leases().get(0).witness())));
        }
        for (long skew : new long[] {2_000, -2_000}) {
            RemoteLeaseService client = closeLater(new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                    .build(), clock(skew)));
            LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                    () -> client.acquire(LeaseRequest.builder(ME, "skew/" + skew).build()));
            assertTrue(e.getMessage().matches("(?s).*this process's clock is PT(1\\.9|2)[0-9.]*S .*")
                    && e.getMessage().contains(skew > 0
                    ? "ahead of the signed time" : "behind the signed time") && e.getMessage().contains("maxClockError")
                    && e.getMessage().contains("correct this machine's clock"), e.getMessage());
        }
    }

    @Test
    void aWriterWhoseStoreClockIsTwoSecondsFromTheRemoteWitnessIsRefusedByTheStore() throws Exception {
        Path root = dir.resolve("store-far");
        Files.createDirectories(root);
        LeaseServer server = start(base());
        RemoteLeaseService client = client(server, RemoteClientConfig.Transport.SOCKET);
        Lease lease = client.acquire(LeaseRequest.builder(ME, "far").leaseFor(Duration.ofSeconds(8)).build());
        FileBagStore store = store(root, clock(2_000));
        store.createLog("log");
        TimestampOutOfRangeException e = assertThrows(TimestampOutOfRangeException.class, () -> store.append(
                AppendRequest.of("log", LeaseStamp.of(lease), new byte[] {1})));
        assertEquals(TimestampOutOfRangeException.Reason.FAR_FROM_SIGNED_TIME, e.reason());
        assertTrue(e.getMessage().contains("after the latest signed time") && e.getMessage().contains("signedTimeBound"),
                e.getMessage());
        client.release(lease, null, null);
    }
}
