package org.leasehold.audit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.lease.HolderId;

/** Keys, encodings, batch signing and every forgery the verifier must catch. */
class AuditChainTest {
    private final SigningKey key = AuditFixture.key(1);
    private final AuditSigner signer = new AuditSigner(key, "svc-1", 500_000, 200, 256);

    @AfterEach
    void close() {
        signer.close();
    }

    private static List<AuditProblem.Kind> kinds(List<AuditProblem> problems) {
        List<AuditProblem.Kind> out = new ArrayList<>();
        for (AuditProblem p : problems) {
            out.add(p.kind());
        }
        return out;
    }

    private FrameWitness signed(String name, long gen) throws Exception {
        return signer.sign(AuditFixture.witness(key.id(), name, gen)).get(10, TimeUnit.SECONDS);
    }

    @Test
    void rfc8032TestVectorSignsAsEd25519() throws Exception {
        // RFC 8032 section 7.1, TEST 1: the empty message.
        HexFormat hex = HexFormat.of();
        byte[] seed = hex.parseHex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        byte[] der = hex.parseHex("302e020100300506032b657004220420");
        String pem = "-----BEGIN PRIVATE KEY-----\n" + java.util.Base64.getEncoder().encodeToString(
                java.nio.ByteBuffer.allocate(48).put(der).put(seed).array()) + "\n-----END PRIVATE KEY-----\n";
        SigningKey k = SigningKey.fromPem(pem);
        assertEquals("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", hex.formatHex(k.publicKey().raw()));
        assertEquals("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd"
                + "25bf5f0595bbe24655141438e7a100b", hex.formatHex(k.sign(new byte[0])));
        assertEquals(k.publicKey(), VerifyingKey.fromPem(k.publicKey().toPem()));
        assertEquals(k.id(), SigningKey.fromPem(k.toPem()).id());
        assertEquals(KeyId.of(k.publicKey().raw()), KeyId.parse(k.id().toString()));
        assertThrows(AuditFormatException.class, () -> SigningKey.fromPem(k.publicKey().toPem()));
    }

    @Test
    void witnessEncodingRoundTripsAndRefusesAnythingElse() throws Exception {
        Witness w = AuditFixture.witness(key.id(), "tenant/42", 7);
        byte[] b = w.encode();
        assertEquals(w, Witness.decode(b));
        assertArrayEquals(b, Witness.decode(b).encode());
        // FORMAT.md's table: magic, version, event, key id at 6, service id length at 22.
        assertEquals(0x4C485754, java.nio.ByteBuffer.wrap(b).getInt(0));
        assertEquals(1, b[4]);
        assertEquals(1, b[5]);
        assertEquals(key.id().high(), java.nio.ByteBuffer.wrap(b).getLong(6));
        assertEquals(5, java.nio.ByteBuffer.wrap(b).getShort(22));
        for (int cut = 0; cut < b.length; cut++) {
            byte[] shorter = java.util.Arrays.copyOf(b, cut);
            assertThrows(AuditFormatException.class, () -> Witness.decode(shorter), "cut at " + cut);
        }
        byte[] longer = java.util.Arrays.copyOf(b, b.length + 1);
        assertThrows(AuditFormatException.class, () -> Witness.decode(longer));
        byte[] v2 = b.clone();
        v2[4] = 2;
        assertTrue(assertThrows(AuditFormatException.class, () -> Witness.decode(v2)).getMessage()
                .contains("version 2"));
        SignedTime t = new SignedTime(key.id(), "svc-1", new byte[] {1, 2, 3}, AuditFixture.T, 700);
        assertEquals(t, SignedTime.decode(t.encode()));
        // Text that is not ASCII is decoded as UTF-8, strictly: a byte no UTF-8 text holds is refused.
        Witness accented = new Witness(w.event(), "svc-été", w.keyId(), w.name(), w.generation(), w.mode(), w.kind(),
                w.floor(), w.writableFrom(), w.deadline(), w.grantedAt(), w.signedTime(), w.radius(), w.correlationId(),
                w.predecessorId(), w.predecessorEnding(), w.predecessorEndedAt(), w.predecessorWatermark(),
                w.predecessorWatermarkSignedAt(), new HolderId("hôte-a/jvm", "tx/東京"), "élodie");
        assertEquals(accented, Witness.decode(accented.encode()));
        byte[] notUtf8 = b.clone();
        notUtf8[24] = (byte) 0xFF;
        assertTrue(assertThrows(AuditFormatException.class, () -> Witness.decode(notUtf8)).getMessage()
                .contains("'service id' is not UTF-8"));
    }

    @Test
    void concurrentWitnessesAreSignedInBatchesAndVerifyWithOneSignatureEach() throws Exception {
        int threads = 8;
        int each = 500;
        List<CompletableFuture<FrameWitness>> all = java.util.Collections.synchronizedList(new ArrayList<>());
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int tt = t;
            Thread th = new Thread(() -> {
                try {
                    go.await();
                } catch (InterruptedException e) {
                    return;
                }
                for (int i = 0; i < each; i++) {
                    all.add(signer.sign(AuditFixture.witness(key.id(), "n/" + tt, i + 1)));
                }
            });
            th.start();
            ts.add(th);
        }
        go.countDown();
        for (Thread th : ts) {
            th.join();
        }
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key)));
        for (CompletableFuture<FrameWitness> f : all) {
            FrameWitness fw = FrameWitness.decode(f.get(10, TimeUnit.SECONDS).encode());
            assertEquals(List.of(), v.check(fw));
        }
        long batches = signer.counts()[0];
        assertEquals(threads * each, signer.counts()[1]);
        assertTrue(batches < threads * each, "batched: " + batches);
        assertEquals(batches, v.signatureChecks(), "one signature check per batch");
    }

    @Test
    void aStoreReadsTheNameGenerationAndLatestSignedTimeOfAFrameWitnessWithoutDecodingItAndRefusesABrokenEnvelope()
            throws Exception {
        FrameWitness bare = signed("tenant/süd", 9);
        SignedTimeProof t = signer.signTime(new byte[] {7}, AuditFixture.T + 250_000).get(10, TimeUnit.SECONDS);
        FrameWitness timed = bare.withTime(t.time(), t.proof());
        for (FrameWitness fw : List.of(bare, timed)) {
            byte[] b = fw.encode();
            FrameWitness.Summary s = FrameWitness.summarize(b);
            assertEquals(new FrameWitness.Summary(fw.witness().name(), fw.witness().generation(), fw.latestSignedTime()),
                    s);
            for (int cut = 0; cut < b.length; cut++) {
                byte[] shorter = java.util.Arrays.copyOf(b, cut);
                assertThrows(AuditFormatException.class, () -> FrameWitness.summarize(shorter), "cut at " + cut);
            }
            byte[] longer = java.util.Arrays.copyOf(b, b.length + 1);
            assertThrows(AuditFormatException.class, () -> FrameWitness.summarize(longer));
            byte[] notAWitness = b.clone();
            notAWitness[8] ^= 1; // the witness's own magic, inside the envelope
            assertTrue(assertThrows(AuditFormatException.class, () -> FrameWitness.summarize(notAWitness))
                    .getMessage().contains("not a witness"));
        }
        assertEquals(AuditFixture.T + 250_000, FrameWitness.summarize(timed.encode()).latestSignedTime());
        byte[] timedBytes = timed.encode();
        int timeAt = 6 + 2 + timed.witnessBytes().length + 2 + timed.proof().encode().length + 2;
        timedBytes[timeAt] ^= 1; // the signed time's magic
        assertTrue(assertThrows(AuditFormatException.class, () -> FrameWitness.summarize(timedBytes)).getMessage()
                .contains("not a signed time"));
    }

    @Test
    void aFlippedBitAnywhereInAWitnessIsCaught() throws Exception {
        FrameWitness fw = signed("tenant/1", 3);
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key)));
        byte[] w = fw.witnessBytes();
        for (int bit = 0; bit < w.length * 8; bit++) {
            byte[] forged = w.clone();
            forged[bit / 8] ^= (byte) (1 << (bit % 8));
            Witness decoded;
            try {
                decoded = Witness.decode(forged);
            } catch (AuditFormatException e) {
                continue;
            }
            List<AuditProblem> p = v.check(new FrameWitness(forged, decoded, fw.proof(), null, null, null));
            assertTrue(!p.isEmpty(), "bit " + bit + " passed");
        }
    }

    @Test
    void aFlippedBitInAPathOrSignatureIsCaught() throws Exception {
        List<CompletableFuture<FrameWitness>> fs = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            fs.add(signer.sign(AuditFixture.witness(key.id(), "n", i + 1)));
        }
        FrameWitness fw = null;
        for (CompletableFuture<FrameWitness> f : fs) {
            FrameWitness x = f.get(10, TimeUnit.SECONDS);
            if (x.proof().path().length > 0) {
                fw = x;
            }
        }
        assertTrue(fw != null, "some witness shares its batch");
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key)));
        assertEquals(List.of(), v.check(fw));
        BatchProof p = fw.proof();
        byte[][] path = p.path();
        path[path.length - 1][31] ^= 1;
        BatchProof badPath = new BatchProof(p.keyId(), p.leafCount(), p.leafIndex(), path, p.signature());
        assertEquals(List.of(AuditProblem.Kind.BAD_SIGNATURE), kinds(v.check(new FrameWitness(fw.witnessBytes(),
                fw.witness(), badPath, null, null, null))));
        byte[] sig = p.signature();
        sig[10] ^= 4;
        BatchProof badSig = new BatchProof(p.keyId(), p.leafCount(), p.leafIndex(), p.path(), sig);
        assertEquals(List.of(AuditProblem.Kind.BAD_SIGNATURE), kinds(v.check(new FrameWitness(fw.witnessBytes(),
                fw.witness(), badSig, null, null, null))));
        BatchProof badIndex = new BatchProof(p.keyId(), p.leafCount(), (p.leafIndex() + 1) % p.leafCount(), p.path(),
                p.signature());
        assertTrue(!v.check(new FrameWitness(fw.witnessBytes(), fw.witness(), badIndex, null, null, null)).isEmpty());
    }

    @Test
    void aFlippedBitInASignedTimeIsCaughtAndItsBoundIsItsOwn() throws Exception {
        FrameWitness fw = signed("tenant/1", 3);
        SignedTimeProof t = signer.signTime(new byte[] {9, 9}, AuditFixture.T + 400_000).get(10, TimeUnit.SECONDS);
        FrameWitness with = fw.withTime(t.time(), t.proof());
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key)));
        FrameWitness decoded = FrameWitness.decode(with.encode());
        assertEquals(List.of(), v.check(decoded));
        assertEquals(AuditFixture.T + 400_000, decoded.latestSignedTime());
        assertEquals(List.of(), v.check(t));
        SignedTime later = new SignedTime(t.time().keyId(), "svc-1", t.time().nonce(), t.time().midpoint() ^ 1,
                t.time().radius());
        assertEquals(List.of(AuditProblem.Kind.BAD_SIGNATURE), kinds(v.check(fw.withTime(later, t.proof()))));
        assertEquals(List.of(AuditProblem.Kind.BAD_SIGNATURE), kinds(v.check(
                new SignedTimeProof(later, later.encode(), t.proof()))));
    }

    @Test
    void otherKeysRevokedKeysAndKeysOutsideTheirValidityAreFlagged() throws Exception {
        FrameWitness fw = signed("tenant/1", 3);
        SigningKey other = AuditFixture.key(2);
        // Unknown key.
        assertEquals(List.of(AuditProblem.Kind.UNKNOWN_KEY),
                kinds(new AuditVerifier(KeySet.of(AuditFixture.published(other))).check(fw)));
        // Another key's signature over the same root, claiming the published key's id.
        BatchProof p = fw.proof();
        byte[] root = p.rootFor(fw.witnessBytes());
        byte[] otherSig = other.sign(BatchProof.signedMessage(key.id(), p.leafCount(), root));
        BatchProof forged = new BatchProof(key.id(), p.leafCount(), p.leafIndex(), p.path(), otherSig);
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key), AuditFixture.published(other)));
        assertEquals(List.of(AuditProblem.Kind.BAD_SIGNATURE),
                kinds(v.check(new FrameWitness(fw.witnessBytes(), fw.witness(), forged, null, null, null))));
        // A witness of another key's batch naming this key.
        try (AuditSigner s2 = new AuditSigner(other, "svc-1", 500_000, 0, 16)) {
            FrameWitness theirs = s2.sign(AuditFixture.witness(other.id(), "tenant/1", 3)).get(10, TimeUnit.SECONDS);
            assertEquals(List.of(AuditProblem.Kind.KEY_MISMATCH), kinds(v.check(new FrameWitness(fw.witnessBytes(),
                    fw.witness(), theirs.proof(), null, null, null))));
        }
        // Revoked at or before the witness's signed time; not revoked before a later time.
        long signedAt = fw.witness().signedTime();
        assertEquals(List.of(AuditProblem.Kind.KEY_REVOKED), kinds(new AuditVerifier(KeySet.of(
                AuditFixture.published(key).revokedFrom(signedAt))).check(fw)));
        assertEquals(List.of(), kinds(new AuditVerifier(KeySet.of(
                AuditFixture.published(key).revokedFrom(signedAt + 1))).check(fw)));
        assertEquals(List.of(AuditProblem.Kind.KEY_NOT_VALID), kinds(new AuditVerifier(KeySet.of(new PublishedKey(
                key.publicKey(), "svc-1", signedAt + 1, Long.MAX_VALUE, Long.MAX_VALUE))).check(fw)));
        assertEquals(List.of(AuditProblem.Kind.SERVICE_MISMATCH), kinds(new AuditVerifier(KeySet.of(new PublishedKey(
                key.publicKey(), "svc-2", 0, Long.MAX_VALUE, Long.MAX_VALUE))).check(fw)));
    }

    @Test
    void aFrameSignedOnTheGrantPathIsTheFrameWitnessEncodedAndVerifies() throws Exception {
        Witness w = AuditFixture.witness(key.id(), "tenant/frame", 4);
        byte[] frame = signer.signFrame(w, w.encode()).get(10, TimeUnit.SECONDS);
        FrameWitness decoded = FrameWitness.decode(frame);
        assertEquals(w, decoded.witness());
        assertArrayEquals(decoded.encode(), frame, "the bytes are the frame witness's encoding");
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key)));
        assertEquals(List.of(), v.check(decoded));

        // Waiting for it hurries the batch: with a linger of a second, the get below would otherwise time out.
        try (AuditSigner slow = new AuditSigner(key, "svc-1", 500_000, 1_000_000, 256)) {
            CompletableFuture<byte[]> f = slow.signFrame(w, null);
            assertEquals(w, FrameWitness.decode(f.get(800, TimeUnit.MILLISECONDS)).witness());
            assertEquals(1, slow.hurriedBatches());
        }

        // A witness built for the key rotated out last is still signed with it: its signed time may lie before the
        // new key's validity.
        SigningKey next = AuditFixture.key(4);
        signer.rotate(next);
        FrameWitness kept = FrameWitness.decode(signer.signFrame(w, w.encode()).get(10, TimeUnit.SECONDS));
        assertEquals(key.id(), kept.witness().keyId());
        assertEquals(key.id(), kept.proof().keyId());
        assertEquals(List.of(), new AuditVerifier(KeySet.of(AuditFixture.published(key), new PublishedKey(
                next.publicKey(), "svc-1", w.signedTime() + 1, Long.MAX_VALUE, Long.MAX_VALUE))).check(kept));
        // One rotated out before that is given the current key's id, and re-encoded.
        SigningKey third = AuditFixture.key(5);
        signer.rotate(third);
        FrameWitness rekeyed = FrameWitness.decode(signer.signFrame(w, w.encode()).get(10, TimeUnit.SECONDS));
        assertEquals(third.id(), rekeyed.witness().keyId());
        assertEquals(third.id(), rekeyed.proof().keyId());
        assertEquals(List.of(), new AuditVerifier(KeySet.of(AuditFixture.published(key), AuditFixture.published(third)))
                .check(rekeyed));
        signer.close();
        assertTrue(signer.signFrame(w, null).isCompletedExceptionally(), "closed: nothing more is signed");
    }

    @Test
    void rotationSignsLaterStatementsWithTheNewKeyAndClosedSignersRefuse() throws Exception {
        FrameWitness before = signed("tenant/1", 1);
        SigningKey next = AuditFixture.key(3);
        signer.rotate(next);
        FrameWitness after = signer.sign(AuditFixture.witness(next.id(), "tenant/1", 2)).get(10, TimeUnit.SECONDS);
        assertEquals(key.id(), before.proof().keyId());
        assertEquals(next.id(), after.proof().keyId());
        assertEquals(next.id(), after.witness().keyId());
        AuditVerifier v = new AuditVerifier(KeySet.of(AuditFixture.published(key), AuditFixture.published(next)));
        assertEquals(List.of(), v.check(before));
        assertEquals(List.of(), v.check(after));
        AuditSigner.Counts totals = signer.totals();
        assertEquals(2, totals.statements(), "the totals count both keys' statements: " + totals);
        assertEquals(2, totals.batches(), "one batch of each key: " + totals);
        assertEquals(1, signer.counts()[1], "the current key's own count starts again");
        assertEquals(0, totals.queued());
        signer.close();
        CompletableFuture<FrameWitness> late = signer.sign(AuditFixture.witness(next.id(), "x", 1));
        assertTrue(late.isCompletedExceptionally());
    }
}
