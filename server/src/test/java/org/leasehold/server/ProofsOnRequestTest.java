package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import com.google.protobuf.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.EchoRequest;
import org.leasehold.wire.proto.Grant;
import org.leasehold.wire.proto.Holder;
import org.leasehold.wire.proto.ProofRequest;
import org.leasehold.wire.proto.ReleaseRequest;
import org.leasehold.wire.proto.SessionReply;
import org.leasehold.wire.proto.SessionRequest;
import org.leasehold.wire.proto.WitnessSeal;

/**
 * The lease server signs a grant's or renewal's witness only when somebody asks for its proof: most leases end with
 * no message written under them, and a witness no frame carries needs no signature. A client of this release asks
 * when a writer wants the proof ({@code ProofRequest}, on either transport); the proof verifies against the keys the
 * server published. A client of an earlier release ({@code wants_seals} on every request) still gets every proof
 * pushed. A proof request for a witness of a lease that ended, of another principal's lease, or for bytes that are no
 * witness, is answered with the reason; the session goes on.
 */
class ProofsOnRequestTest {
    private static final HolderId ME = new HolderId("proofs-on-request-test", "t1");
    private static final String TOKEN_A = "alice-token-0123456789abcdef";
    private static final String TOKEN_B = "bob-token-0123456789abcdef";

    private final Path dir = Path.of("target", "proofs-on-request-" + System.nanoTime());
    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private LeaseServer start(Path root, boolean tokens) throws Exception {
        Files.createDirectories(root);
        ServerConfig c = ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withHttpListen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))
                .withSocket(ServerConfig.SocketSettings.loopback()).withStateDir(dir.resolve("state"))
                .withSigning(new ServerConfig.Signing(true, null, root));
        if (tokens) {
            Path tokenFile = Files.writeString(dir.resolve("tokens"), "alice " + TOKEN_A + "\nbob " + TOKEN_B + "\n");
            Path acl = Files.writeString(dir.resolve("acl"), "*   proof/*   lease,check\n");
            c = c.withSecurity(null, null, null, tokenFile, acl);
        }
        return closing.later(LeaseServer.start(c));
    }

    @Test
    void leasesNobodyWritesUnderAreNotSignedAndAWriterGetsItsProofOnEitherTransport() throws Exception {
        Path root = dir.resolve("store");
        LeaseServer server = start(root, false);
        AuditVerifier verifier = new AuditVerifier(PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root)));
        for (RemoteClientConfig.Transport transport : RemoteClientConfig.Transport.values()) {
            RemoteLeaseService client = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(
                    server.address()).transport(transport).callTimeout(Duration.ofSeconds(10)).build()));
            String prefix = "proof/" + transport + "/";
            // A first cycle sets the client up (clock samples, a signed time, the connection).
            client.release(client.acquire(LeaseRequest.builder(ME, prefix + "warm-up").build()), null, null);

            double before = statements(server);
            List<Lease> unwritten = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                Lease l = client.acquire(LeaseRequest.builder(ME, prefix + "n/" + i).build());
                unwritten.add(client.renew(l, l.deadline().plusSeconds(1), null));
                client.release(unwritten.get(i), null, null);
            }
            double after = statements(server);
            // 100 witnesses (a grant and a renewal each); the client's own time requests are a few statements at most.
            assertTrue(after - before < 10, transport + ": 100 witnesses nobody asked for should not be signed; "
                    + "the server signed " + (after - before) + " statements meanwhile");
            for (Lease l : unwritten) {
                assertTrue(l.grants().get(0).witness().unasked(), l.grants().get(0).witness().toString());
            }

            Lease written = client.acquire(LeaseRequest.builder(ME, prefix + "w", prefix + "x").build());
            Lease renewed = client.renew(written, written.deadline().plusSeconds(1), null);
            for (Lease l : List.of(written, renewed)) {
                List<LeaseStamp> stamps = LeaseStamp.of(l);
                for (int i = 0; i < stamps.size(); i++) {
                    LeaseGrant g = l.grants().get(i);
                    FrameWitness fw = FrameWitness.decode(stamps.get(i).witness());
                    assertEquals(g.name(), fw.witness().name());
                    assertEquals(g.generation(), fw.witness().generation());
                    assertEquals(l == written ? WitnessEvent.GRANT : WitnessEvent.RENEWAL, fw.witness().event());
                    assertEquals(List.of(), verifier.check(fw), transport + ": the proof asked for verifies");
                    assertTrue(g.witness().hasStatement(fw.witnessBytes()), "the witness the grant carried");
                }
            }
            assertTrue(statements(server) - after >= 4, "the four witnesses asked for were signed");
            client.release(renewed, null, null);
        }
    }

    @Test
    void aClientThatWantsEveryProofGetsThemPushedAndAProofRequestIsAnsweredWithTheProofOrWhyNot() throws Exception {
        LeaseServer server = start(dir.resolve("store"), true);
        for (boolean socket : new boolean[] {false, true}) {
            RawSession alice = closing.later(socket ? RawSession.socket(server.socketPort(), TOKEN_A)
                    : RawSession.grpc(server.port(), TOKEN_A));
            RawSession bob = closing.later(socket ? RawSession.socket(server.socketPort(), TOKEN_B)
                    : RawSession.grpc(server.port(), TOKEN_B));
            String t = alice.transport();
            String name = "proof/raw/" + t;

            // Without wants_seals: the witness comes without its proof, and nothing follows by itself.
            alice.send(acquire(1, name + "/a", false));
            Grant a = grant(alice.reply(1));
            assertFalse(a.getWitness().isEmpty());
            assertTrue(a.getFrameWitness().isEmpty());
            assertFalse(a.getProofFollows());
            alice.send(echo(2));
            List<SessionReply> upToEcho = alice.repliesUpTo(2);
            assertEquals(1, upToEcho.size(), t + ": no proof pushed unasked: " + upToEcho);

            // Asked for: pushed under the request's id, with the statement asked for.
            alice.send(proofs(3, a.getWitness()));
            WitnessSeal sealA = alice.reply(3).getSeals().getSeals(0);
            assertEquals(a.getWitness(), sealA.getWitness());
            FrameWitness fw = FrameWitness.decode(sealA.getFrameWitness().toByteArray());
            assertEquals(name + "/a", fw.witness().name());
            assertArrayEquals(a.getWitness().toByteArray(), fw.witnessBytes());

            // With wants_seals (a client of an earlier release, or an upgrade): marked, and pushed by itself.
            alice.send(acquire(4, name + "/b", true));
            Grant b = grant(alice.reply(4));
            assertTrue(b.getFrameWitness().isEmpty() || !b.getProofFollows());
            if (b.getFrameWitness().isEmpty()) {
                assertTrue(b.getProofFollows());
                WitnessSeal pushed = alice.reply(4).getSeals().getSeals(0);
                assertEquals(name + "/b", FrameWitness.decode(pushed.getFrameWitness().toByteArray()).witness().name());
            }

            // Another principal may not have the proof of alice's lease.
            alice.send(acquire(5, name + "/c", false));
            SessionReply c = alice.reply(5);
            bob.send(proofs(6, grant(c).getWitness()));
            WitnessSeal refused = bob.reply(6).getSeals().getSeals(0);
            assertTrue(refused.getFrameWitness().isEmpty());
            assertTrue(refused.getError().contains("belongs to no lease that principal 'bob' holds on this server now"),
                    refused.getError());

            // A lease that ended: released, its witness is nobody's any more.
            alice.send(SessionRequest.newBuilder().setRequestId(7).setRelease(ReleaseRequest.newBuilder().setLease(
                    ProtoCodec.ref(ProtoCodec.lease(c.getLease())))).build());
            assertTrue(alice.reply(7).hasEndedAtMicros(), t);
            alice.send(proofs(8, grant(c).getWitness(), ByteString.copyFromUtf8("not a witness")));
            List<WitnessSeal> seals = alice.reply(8).getSeals().getSealsList();
            assertEquals(2, seals.size());
            assertTrue(seals.get(0).getError().contains("generation " + grant(c).getGeneration() + " belongs to no "
                    + "lease that principal 'alice' holds on this server now: the lease ended"), seals.get(0).getError());
            assertEquals(grant(c).getWitness(), seals.get(0).getWitness());
            assertTrue(seals.get(1).getError().contains("names no witness statement"), seals.get(1).getError());

            // Out of range: answered with an error for its id; the session goes on.
            alice.send(SessionRequest.newBuilder().setRequestId(9).setProof(ProofRequest.getDefaultInstance())
                    .build());
            SessionReply none = alice.reply(9);
            assertTrue(none.getError().getMessage().contains("names 1 to 64 witnesses, got 0"), t + ": " + none);
            alice.send(echo(10));
            assertEquals("ok", alice.reply(10).getEcho().toStringUtf8());
        }
    }

    private static SessionRequest acquire(long id, String name, boolean wantsSeals) {
        return SessionRequest.newBuilder().setWantsSeals(wantsSeals).setAcquire(AcquireRequest.newBuilder()
                .setRequestId(id).setHolder(Holder.newBuilder().setProcess("proofs").setOwner("o")).addNames(name)
                .setLeaseTimeMicros(30_000_000)).build();
    }

    private static SessionRequest echo(long id) {
        return SessionRequest.newBuilder().setRequestId(id).setEcho(EchoRequest.newBuilder()
                .setPayload(ByteString.copyFromUtf8("ok"))).build();
    }

    private static SessionRequest proofs(long id, ByteString... witnesses) {
        return SessionRequest.newBuilder().setRequestId(id).setProof(ProofRequest.newBuilder()
                .addAllWitnesses(List.of(witnesses))).build();
    }

    private static Grant grant(SessionReply r) {
        assertTrue(r.hasLease(), r.toString());
        return r.getLease().getGrants(0);
    }

    private static double statements(LeaseServer server) throws Exception {
        return MetricSamples.sample(server, "leasehold_signer_statements_total");
    }
}
