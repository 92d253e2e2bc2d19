package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import com.google.protobuf.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.HurryRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;

/**
 * A writer that needs a remote lease's frame witness now gets it without waiting for the server's batch: the proof of
 * a witness follows its grant on the session, and a caller blocking on it ({@link LeaseStamp#of}) asks the server to
 * sign at once ({@code HurryRequest}) and, on the socket transport, reads the connection the proof comes on (before,
 * nobody read it until the connection's next answer or its idle probe, about a second later). The server here lingers
 * a whole second over each batch ({@code --signing-linger 1s}), so only a hurry signs a batch early; its
 * {@code leasehold_signer_hurried_batches_total} counts them; on the socket transport the proof is completed on the
 * writer's own thread. Grants, renewals (whose answer the calling thread reads), a lease of several names and a time
 * request (which the server hurries itself), on both transports.
 */
class ProofHurryTest {
    private static final HolderId ME = new HolderId("proof-hurry-test", "t1");

    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    @Test
    void aWriterBlockingOnAProofHurriesTheServerOnEitherTransport() throws Exception {
        LeaseServer server = closing.later(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO))
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .withSocket(ServerConfig.SocketSettings.loopback())
                .withSigning(ServerConfig.Signing.DEFAULT.withLinger(Duration.ofSeconds(1)))));
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService client = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                    .transport(transport).callTimeout(Duration.ofSeconds(10)).build()));
            String prefix = "hurry/" + transport + "/";
            // A first cycle sets the client up (clock samples, a signed time the server hurries, the connection):
            // none of that falls in the counts below, each taken before its step makes the statement it waits for.
            client.release(client.acquire(LeaseRequest.builder(ME, prefix + "warm-up").build()), null, null);

            AtomicReference<Lease> lease = new AtomicReference<>();
            // Which thread completes the proof: on the socket transport, the writer's own, reading the connection (a
            // proof left to the connection's background reader waits for its idle probe, half a second or more).
            AtomicReference<Thread> completedOn = new AtomicReference<>();
            assertHurried(server, transport + " grant", () -> {
                lease.set(client.acquire(LeaseRequest.builder(ME, prefix + "a").build()));
                lease.get().grants().get(0).witness().sealed().thenRun(() -> completedOn.set(Thread.currentThread()));
                assertStamped(lease.get(), WitnessEvent.GRANT);
            });
            if (transport == RemoteClientConfig.Transport.SOCKET) {
                assertEquals(Thread.currentThread(), completedOn.get(), "the writer read its proof itself");
            }

            AtomicReference<Lease> renewed = new AtomicReference<>();
            assertHurried(server, transport + " renewal", () -> {
                renewed.set(client.renew(lease.get(), client.now().plusSeconds(20), null));
                assertStamped(renewed.get(), WitnessEvent.RENEWAL);
            });

            AtomicReference<Lease> two = new AtomicReference<>();
            assertHurried(server, transport + " grant of two names", () -> {
                two.set(client.acquire(LeaseRequest.builder(ME, List.of(prefix + "b", prefix + "c")).build()));
                assertStamped(two.get(), WitnessEvent.GRANT);
            });

            // A time request's answer is waited for too: the server signs its batch without the linger.
            assertHurried(server, transport + " time request", () -> client.signedTime(prefix + "a", new byte[16]));

            // The session goes on after the one-way requests: calls are answered as before.
            client.release(renewed.get(), null, null);
            client.release(two.get(), null, null);
        }
    }

    @Test
    void aHurryIsOneWayAndTheSessionGoesOn() throws Exception {
        LeaseServer server = closing.later(LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults()
                .withQuietPeriod(Duration.ZERO)).withSocket(ServerConfig.SocketSettings.loopback())));
        for (boolean socket : new boolean[] {false, true}) {
            RawSession s = closing.later(socket ? RawSession.socket(server.socketPort(), null)
                    : RawSession.grpc(server.port(), null));
            SessionRequest hurry = SessionRequest.newBuilder().setRequestId(5)
                    .setHurry(HurryRequest.getDefaultInstance()).build();
            s.send(hurry, hurry, SessionRequest.newBuilder().setRequestId(6)
                    .setEcho(EchoRequest.newBuilder().setPayload(ByteString.copyFromUtf8("after"))).build());
            List<SessionReply> replies = s.repliesUpTo(6);
            assertEquals(1, replies.size(), s.transport() + ": a hurry is answered by nothing: " + replies);
            assertEquals("after", replies.get(0).getEcho().toStringUtf8());
        }
    }

    @Test
    void aSigningLingerOutOfRangeIsRefusedWithWhatToGive() {
        for (Duration bad : List.of(Duration.ofMillis(-1), Duration.ofSeconds(2), Duration.ofNanos(1_500))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ServerConfig.loopback(
                    EngineConfig.defaults()).withSigning(ServerConfig.Signing.DEFAULT.withLinger(bad)).validate());
            assertTrue(e.getMessage().contains("--signing-linger") && e.getMessage().contains("whole microseconds"),
                    e.getMessage());
        }
        ServerConfig.loopback(EngineConfig.defaults()).withSigning(ServerConfig.Signing.DEFAULT.withLinger(Duration.ZERO))
                .validate();
        // On the command line: the default, a value, and one out of range.
        LeaseServerMain main = new LeaseServerMain();
        new picocli.CommandLine(main).parseArgs("--no-state-dir");
        assertEquals(Duration.ofNanos(200_000), main.toConfig().signing().linger());
        main = new LeaseServerMain();
        new picocli.CommandLine(main).parseArgs("--no-state-dir", "--signing-linger=5ms");
        assertEquals(Duration.ofMillis(5), main.toConfig().signing().linger());
        LeaseServerMain tooLong = new LeaseServerMain();
        new picocli.CommandLine(tooLong).parseArgs("--no-state-dir", "--signing-linger=2s");
        assertTrue(assertThrows(IllegalArgumentException.class, tooLong::toConfig).getMessage()
                .contains("--signing-linger PT2S is out of range"));
    }

    private interface Check {
        void run() throws Exception;
    }

    /**
     * Runs {@code check} (which makes a statement and blocks on its proof) and asserts that the server signed a batch
     * before its linger of a second ran out meanwhile: only a hurry does (the steps take milliseconds).
     */
    private static void assertHurried(LeaseServer server, String what, Check check) throws Exception {
        double before = hurried(server);
        check.run();
        double after = hurried(server);
        assertTrue(after > before, what + ": the proof was waited for, so the server's batch should have been hurried ("
                + before + " hurried batches before, " + after + " after)");
    }

    /** Each grant's frame witness, as a writer takes it, is that grant's, of {@code event}. */
    private static void assertStamped(Lease lease, WitnessEvent event) throws Exception {
        List<LeaseStamp> stamps = LeaseStamp.of(lease);
        assertEquals(lease.grants().size(), stamps.size());
        for (int i = 0; i < stamps.size(); i++) {
            LeaseGrant g = lease.grants().get(i);
            FrameWitness fw = FrameWitness.decode(stamps.get(i).witness());
            assertEquals(g.name(), fw.witness().name());
            assertEquals(g.generation(), fw.witness().generation());
            assertEquals(event, fw.witness().event());
        }
    }

    private static double hurried(LeaseServer server) throws Exception {
        return MetricSamples.sample(server, "leasehold_signer_hurried_batches_total");
    }
}
