package org.leasehold.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.leasehold.audit.AuditProblem;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.Witness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/** Every grant, renewal, upgrade and reinstatement of a signing engine carries a witness that verifies and chains. */
class EngineWitnessTest {
    private static final HolderId A = new HolderId("p", "a");
    private static final HolderId B = new HolderId("p", "b");
    private static final HolderId C = new HolderId("p", "c");

    @TempDir
    Path root;

    private final ManualTimeSource time = new ManualTimeSource(EmbeddedFixture.START);
    private AuditSigner signer;
    private EmbeddedLeaseService engine;
    private ServiceKeys keys;

    private void start() throws Exception {
        NfsSafeFiles fs = new NfsSafeFiles();
        Files.createDirectories(root.resolve(".leasehold"));
        KeyFiles files = new KeyFiles(fs, root.resolve(".leasehold").resolve("signing"), "w1", new SecureRandom());
        keys = new ServiceKeys(files, new PublishedKeys(fs, root, "w1"), "svc-t");
        signer = keys.start(files.current(), 500_000, time.nowMicros());
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withServiceId("svc-t").withQuietPeriod(Duration.ZERO)
                .withMaxLeaseDuration(Duration.ofSeconds(10)).withGrace(Duration.ofSeconds(2)), time, null, signer);
        assertSame(signer, engine.signer());
    }

    @AfterEach
    void stop() {
        if (engine != null) {
            engine.close();
        }
        if (signer != null) {
            signer.close();
        }
    }

    private static FrameWitness sealed(LeaseGrant g) throws Exception {
        assertNotNull(g.witness(), "the grant of '" + g.name() + "' carries a witness");
        return FrameWitness.decode(g.witness().await(Duration.ofSeconds(10)));
    }

    private AuditVerifier verifier() throws Exception {
        return new AuditVerifier(new PublishedKeys(new NfsSafeFiles(), root, "reader").load());
    }

    @Test
    void grantsRenewalsAndUpgradesCarryWitnessesThatVerifyAndChain() throws Exception {
        start();
        Lease a = engine.acquire(LeaseRequest.builder(A, "t/1").leaseFor(Duration.ofSeconds(5)).build());
        FrameWitness wa = sealed(a.grants().get(0));
        Witness w = wa.witness();
        assertEquals(WitnessEvent.GRANT, w.event());
        assertEquals("t/1", w.name());
        assertEquals(a.grants().get(0).generation(), w.generation());
        assertEquals(Micros.of(a.deadline()), w.deadline());
        assertEquals(Micros.of(a.floor()), w.floor());
        assertEquals(Micros.of(a.writableFrom()), w.writableFrom());
        assertEquals(a.grants().get(0).correlationId(), w.correlationId());
        assertEquals(Ending.UNKNOWN, w.predecessorEnding());
        assertEquals(CorrelationId.NONE, w.predecessorId());
        assertEquals(time.nowMicros(), w.signedTime());
        assertEquals(500_000, w.radius());
        assertEquals(A, w.holder());
        assertEquals(signer.keyId(), w.keyId());
        AuditVerifier v = verifier();
        assertEquals(List.of(), v.check(wa));

        // Released with a watermark: the successor's witness names it, its release time and a's correlation id.
        time.advance(Duration.ofMillis(300));
        Instant wm = time.now().minusMillis(100);
        engine.release(a, wm, null);
        Instant releasedAt = time.now();
        time.advance(Duration.ofMillis(10));
        Lease b = engine.acquire(LeaseRequest.builder(B, "t/1").leaseFor(Duration.ofSeconds(1)).build());
        Witness wb = sealed(b.grants().get(0)).witness();
        assertEquals(w.correlationId(), wb.predecessorId());
        assertEquals(Ending.RELINQUISHED, wb.predecessorEnding());
        assertEquals(Micros.of(wm), wb.predecessorWatermark());
        assertEquals(Micros.of(releasedAt), wb.predecessorWatermarkSignedAt());
        assertTrue(wb.generation() > w.generation());

        // Renewed: same correlation id, later deadline, signed now.
        time.advance(Duration.ofMillis(200));
        Lease b2 = engine.renew(b, time.now().plusSeconds(1), null);
        Witness wr = sealed(b2.grants().get(0)).witness();
        assertEquals(WitnessEvent.RENEWAL, wr.event());
        assertEquals(wb.correlationId(), wr.correlationId());
        assertEquals(Micros.of(b2.deadline()), wr.deadline());
        assertEquals(time.nowMicros(), wr.signedTime());

        // Expired unreleased: the next witness says so, with its deadline, and writableFrom after the grace.
        time.advance(Duration.ofSeconds(2));
        Lease c = engine.acquire(LeaseRequest.builder(C, "t/1").tentative().build());
        Witness wc = sealed(c.grants().get(0)).witness();
        assertEquals(Ending.EXPIRED, wc.predecessorEnding());
        assertEquals(Micros.of(b2.deadline()), wc.predecessorEndedAt());
        assertEquals(Micros.of(b2.deadline()) + 2_000_000, wc.writableFrom());
        assertEquals(LeaseKind.TENTATIVE, wc.kind());
        Lease up = engine.upgrade(c, null);
        Witness wu = sealed(up.grants().get(0)).witness();
        assertEquals(WitnessEvent.UPGRADE, wu.event());
        assertEquals(LeaseKind.FULL, wu.kind());
        for (Lease l : List.of(b, b2, c, up)) {
            assertEquals(List.of(), v.check(sealed(l.grants().get(0))));
        }

        // The stamps a writer gets carry the sealed frame witness.
        LeaseStamp s = LeaseStamp.of(up).get(0);
        assertEquals(wu, FrameWitness.decode(s.witness()).witness());

        // A signed time answer.
        SignedTimeProof t = engine.signedTime(new byte[] {1, 2, 3}).get(10, TimeUnit.SECONDS);
        assertEquals(time.nowMicros(), t.time().midpoint());
        assertEquals(List.of(), v.check(t));
    }

    /** An engine whose signer waits a second after a batch's first statement: a writer waiting it out would show. */
    private void startWithALingerOfASecond() throws Exception {
        NfsSafeFiles fs = new NfsSafeFiles();
        Files.createDirectories(root.resolve(".leasehold"));
        KeyFiles files = new KeyFiles(fs, root.resolve(".leasehold").resolve("signing"), "w1", new SecureRandom());
        signer = new AuditSigner(files.current(), "svc-slow", 500_000, 1_000_000, ServiceKeys.DEFAULT_MAX_BATCH);
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withServiceId("svc-slow")
                .withQuietPeriod(Duration.ZERO), time, null, signer);
    }

    @Test
    void aWriterWaitingForItsWitnessOrASignedTimeHasItSignedWithoutTheLinger() throws Exception {
        startWithALingerOfASecond();
        Lease a = engine.acquire(LeaseRequest.builder(A, "hurry/1").build());
        Lease b = engine.acquire(LeaseRequest.builder(B, "hurry/2").build());
        // A grant's witness is signed only once somebody asks for its proof: nothing is queued yet.
        assertTrue(a.grants().get(0).witness().unasked());
        assertTrue(b.grants().get(0).witness().unasked());
        assertEquals(0, signer.totals().statements() + signer.totals().queued(), "nothing signed before it is asked");
        CompletableFuture<List<LeaseStamp>> write = CompletableFuture.supplyAsync(() -> LeaseStamp.of(a));
        List<LeaseStamp> stamps = write.get(800, TimeUnit.MILLISECONDS);
        assertEquals(1, signer.hurriedBatches(), "the writer's wait hurried the batch");
        FrameWitness fw = FrameWitness.decode(stamps.get(0).witness());
        assertEquals(1, fw.proof().leafCount(), "only the witness asked for was signed");
        assertTrue(b.grants().get(0).witness().unasked(), "the other grant's witness still waits to be asked");
        assertEquals(1, signer.totals().statements());
        // Asked for in turn, it is signed in a batch of its own.
        assertEquals(1, sealed(b.grants().get(0)).proof().leafCount());
        assertEquals(2, signer.counts()[0], "a batch for each");
        assertEquals(2, signer.hurriedBatches(), "waited for, it hurried its batch too");

        SignedTimeProof t = engine.signedTime(new byte[16]).get(800, TimeUnit.MILLISECONDS);
        assertEquals("svc-slow", t.time().serviceId());
        assertEquals(3, signer.hurriedBatches(), "a time request waited for hurries too");
    }

    @Test
    void anUpgradeHasItsWitnessesSignedWithoutTheLingerBeforeAnybodyWaits() throws Exception {
        startWithALingerOfASecond();
        // The tentative grant's witness waits for the linger (a second); the upgrade's hurries the batch at once, as
        // the commit that follows an upgrade writes its frame right after.
        Lease tentative = engine.acquire(LeaseRequest.builder(C, "hurry/3").tentative().build());
        Lease up = engine.upgrade(tentative, null);
        long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(800);
        while (!up.grants().get(0).witness().isSealed() && System.nanoTime() - until < 0) {
            Thread.sleep(1);
        }
        assertTrue(up.grants().get(0).witness().isSealed(), "the upgrade's witness was signed without its linger");
        assertEquals(1, signer.hurriedBatches());
        FrameWitness upgraded = sealed(up.grants().get(0));
        assertEquals(WitnessEvent.UPGRADE, upgraded.witness().event());
        assertEquals(1, upgraded.proof().leafCount(), "the tentative grant's witness, never asked for, is not signed");
        assertTrue(tentative.grants().get(0).witness().unasked());
        assertEquals(1, signer.totals().statements());
    }

    @Test
    void witnessesOfManyThreadsVerifyAndEachNamesChainsItsCorrelationIds() throws Exception {
        start();
        ConcurrentLinkedQueue<Lease> granted = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            HolderId h = new HolderId("p", "t" + t);
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; i < 200; i++) {
                        Lease l = engine.acquire(LeaseRequest.builder(h, "chain/" + (i % 3)).waitFor(Duration
                                .ofSeconds(30)).build());
                        granted.add(l);
                        engine.release(l, null, null);
                    }
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            th.start();
            threads.add(th);
        }
        for (Thread th : threads) {
            th.join();
        }
        AuditVerifier v = verifier();
        Map<String, List<Witness>> byName = new HashMap<>();
        for (Lease l : granted) {
            FrameWitness fw = sealed(l.grants().get(0));
            assertEquals(List.of(), v.check(fw));
            byName.computeIfAbsent(fw.witness().name(), k -> new ArrayList<>()).add(fw.witness());
        }
        assertEquals(800, granted.size());
        for (List<Witness> ws : byName.values()) {
            ws.sort((x, y) -> Long.compare(x.generation(), y.generation()));
            for (int i = 1; i < ws.size(); i++) {
                assertTrue(ws.get(i).generation() > ws.get(i - 1).generation());
                assertEquals(ws.get(i - 1).correlationId(), ws.get(i).predecessorId(), "chain of " + ws.get(i).name());
                assertEquals(Ending.RELINQUISHED, ws.get(i).predecessorEnding());
            }
        }
        assertTrue(signer.counts()[0] <= signer.counts()[1]);
    }

    @Test
    void rotationPublishesTheNewKeyFirstAndRevocationFlagsLaterWitnesses() throws Exception {
        start();
        Lease a = engine.acquire(LeaseRequest.builder(A, "r/1").build());
        KeyId first = signer.keyId();
        KeyId second = keys.rotate(signer, time.nowMicros());
        KeySet published = new PublishedKeys(new NfsSafeFiles(), root, "reader").load();
        assertNotNull(published.get(second), "published before it signs");
        Lease b = engine.acquire(LeaseRequest.builder(B, "r/2").build());
        assertEquals(second, sealed(b.grants().get(0)).proof().keyId());
        assertEquals(first, sealed(a.grants().get(0)).proof().keyId());
        AuditVerifier v = verifier();
        assertEquals(List.of(), v.check(sealed(a.grants().get(0))));
        assertEquals(List.of(), v.check(sealed(b.grants().get(0))));
        // Revoke the first key from now: witnesses signed before stay valid, later ones are flagged.
        time.advance(Duration.ofMillis(5));
        keys.revoke(first, time.nowMicros(), "test");
        v = verifier();
        assertEquals(List.of(), v.check(sealed(a.grants().get(0))));
        AuditSigner old = new AuditSigner(new KeyFiles(new NfsSafeFiles(), root.resolve(".leasehold")
                .resolve("signing"), "w1", new SecureRandom()).numbered(1), "svc-t", 500_000, 0, 8);
        try {
            Witness late = sealed(a.grants().get(0)).witness();
            Witness relabelled = new Witness(late.event(), late.serviceId(), first, late.name(), late.generation(),
                    late.mode(), late.kind(), late.floor(), late.writableFrom(), late.deadline(), late.grantedAt(),
                    time.nowMicros(), late.radius(), late.correlationId(), late.predecessorId(),
                    late.predecessorEnding(), late.predecessorEndedAt(), late.predecessorWatermark(),
                    late.predecessorWatermarkSignedAt(), late.holder(), late.principal());
            FrameWitness fw = old.sign(relabelled).get(10, TimeUnit.SECONDS);
            assertEquals(List.of(AuditProblem.Kind.KEY_REVOKED), v.check(fw).stream().map(AuditProblem::kind).toList());
        } finally {
            old.close();
        }
    }

    /** The principal named by the witness of every grant of {@code lease}, which verifies. */
    private static void assertPrincipal(String principal, Lease lease, WitnessEvent event, AuditVerifier v)
            throws Exception {
        for (LeaseGrant g : lease.grants()) {
            FrameWitness fw = sealed(g);
            assertEquals(principal, fw.witness().principal(), g.name() + " " + event);
            assertEquals(event, fw.witness().event(), g.name());
            assertEquals(List.of(), v.check(fw), g.name() + " " + event);
        }
    }

    @Test
    void witnessesNameTheRequestsPrincipalOnEveryPathOfGrantRenewalUpgradeAndHold() throws Exception {
        start();
        AuditVerifier v = verifier();
        // One free name (the engine's short path), tentative; then its upgrade, renewal and hold in doubt.
        Lease a = engine.acquire(LeaseRequest.builder(A, "p/1").tentative().leaseFor(Duration.ofSeconds(5)).build()
                .withPrincipal("billing"));
        assertPrincipal("billing", a, WitnessEvent.GRANT, v);
        Lease up = engine.upgrade(a, null);
        assertPrincipal("billing", up, WitnessEvent.UPGRADE, v);
        time.advance(Duration.ofMillis(100));
        Lease renewed = engine.renew(up, time.now().plusSeconds(3), null);
        assertPrincipal("billing", renewed, WitnessEvent.RENEWAL, v);
        Lease held = engine.holdInDoubt(renewed, time.now().plusSeconds(20));
        assertPrincipal("billing", held, WitnessEvent.RENEWAL, v);
        // Two names (the general path), and a request granted from the queue when the holder releases.
        Lease b = engine.acquire(LeaseRequest.builder(B, "p/2", "p/3").build().withPrincipal("ops"));
        assertPrincipal("ops", b, WitnessEvent.GRANT, v);
        CompletableFuture<Lease> queued = engine.acquireAsync(LeaseRequest.builder(C, "p/1", "p/2")
                .waitFor(Duration.ofSeconds(30)).build().withPrincipal("auditor"));
        assertFalse(queued.isDone(), "p/1 and p/2 are held");
        engine.release(held, null, null);
        engine.release(b, null, null);
        Lease c = queued.get(10, TimeUnit.SECONDS);
        assertPrincipal("auditor", c, WitnessEvent.GRANT, v);
        // No principal: the witness names none.
        Lease d = engine.acquire(LeaseRequest.builder(A, "p/4").build());
        assertPrincipal(null, d, WitnessEvent.GRANT, v);
    }

    @Test
    void anIdentityTooLongForAWitnessIsRefusedWhetherTheEngineSignsOrNotAndNothingIsHeld() throws Exception {
        start();
        EmbeddedLeaseService plain = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO),
                time);
        try {
            String tooLong = "x".repeat(Witness.MAX_TEXT + 1);
            // 513 characters of two UTF-8 bytes each: short in characters, too long in bytes.
            String wide = "\u00e9".repeat(Witness.MAX_TEXT / 2 + 1);
            List<LeaseRequest> bad = List.of(LeaseRequest.builder(new HolderId(tooLong, "o"), "q/1").build(),
                    LeaseRequest.builder(new HolderId("p", tooLong), "q/1", "q/2").build(),
                    LeaseRequest.builder(A, "q/2").waitFor(Duration.ofSeconds(1)).build().withPrincipal(wide));
            for (EmbeddedLeaseService e : List.of(engine, plain)) {
                for (LeaseRequest r : bad) {
                    InvalidLeaseRequestException x = assertThrows(InvalidLeaseRequestException.class,
                            () -> e.acquire(r));
                    assertEquals(InvalidLeaseRequestException.Reason.IDENTITY_TOO_LONG, x.reason(), x.getMessage());
                    assertTrue(x.getMessage().contains("1026 bytes of UTF-8; a lease's witness holds at most 1024")
                            || x.getMessage().contains("1025 bytes of UTF-8; a lease's witness holds at most 1024"),
                            x.getMessage());
                    ExecutionException async = assertThrows(ExecutionException.class,
                            () -> e.acquireAsync(r).get(10, TimeUnit.SECONDS));
                    assertTrue(async.getCause() instanceof InvalidLeaseRequestException, async.toString());
                }
                // Nothing was granted: both names are free, and identities of exactly 1,024 bytes are taken.
                Lease ok = e.acquire(LeaseRequest.builder(new HolderId("y".repeat(Witness.MAX_TEXT), "o"), "q/1",
                        "q/2").build().withPrincipal("\u00e9".repeat(Witness.MAX_TEXT / 2)));
                e.release(ok, null, null);
            }
        } finally {
            plain.close();
        }
    }

    @Test
    void anEngineWithoutASignerIssuesNoWitnessAndNoSignedTime() throws Exception {
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withQuietPeriod(Duration.ZERO), time);
        Lease a = engine.acquire(LeaseRequest.builder(A, "n/1").build());
        assertEquals(null, a.grants().get(0).witness());
        assertEquals(0, LeaseStamp.of(a).get(0).witnessLength());
        assertThrows(IllegalStateException.class, () -> engine.signedTime(new byte[0]));
    }
}
