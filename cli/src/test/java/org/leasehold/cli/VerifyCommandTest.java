package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.audit.Witness;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.lease.Lease;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code leasehold verify} on real stores written through the public {@code BagStore} API, with leases from a real
 * embedded engine and witnesses signed in real Merkle batches ({@link AuditedStore}): a clean log is proven, and each
 * forgery or bug is reported with its log, bucket, file and offset.
 */
class VerifyCommandTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    /** The findings of a JSON run. */
    private static List<JsonNode> findings(CliRun r) throws Exception {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode n : r.json()) {
            if (n.get("type").asText().equals("finding")) {
                out.add(n);
            }
        }
        return out;
    }

    private static JsonNode summary(CliRun r) throws Exception {
        List<JsonNode> all = r.json();
        JsonNode last = all.get(all.size() - 1);
        assertEquals("summary", last.get("type").asText(), r.toString());
        return last;
    }

    private static Set<String> kinds(CliRun r) throws Exception {
        Set<String> k = new TreeSet<>();
        for (JsonNode n : findings(r)) {
            k.add(n.get("kind").asText());
        }
        return k;
    }

    /** Asserts a finding of {@code kind} at the frame of {@code a} and returns it. */
    private static JsonNode at(CliRun r, AuditedStore s, String kind, Appended a) throws Exception {
        for (JsonNode n : findings(r)) {
            if (n.get("kind").asText().equals(kind)) {
                assertEquals(AuditedStore.LOG, n.get("log").asText(), r.toString());
                assertEquals(a.bucket().toString(), n.get("bucket").asText(), r.toString());
                assertEquals(Micros.of(a.bucket()), n.get("bucketMicros").asLong(), r.toString());
                assertEquals(s.relative(a), n.get("file").asText(), r.toString());
                assertEquals(a.offset(), n.get("offset").asLong(), r.toString());
                return n;
            }
        }
        throw new AssertionError("no " + kind + " finding in\n" + r);
    }

    private static int index(Witness w, int fieldAfterNames) {
        return 22 + 2 + w.serviceId().length() + 2 + w.name().length() + fieldAfterNames;
    }

    @Test
    void aCleanLogOfTwoHoldersIsProven() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-clean")) {
            Lease a = s.acquire("node-a", LEASE, "orders/1", "orders/2");
            List<LeaseStamp> sa = s.stamps(a);
            s.advance(Duration.ofMillis(100));
            s.append(sa, "a1");
            s.advance(Duration.ofMillis(300));
            Appended last = s.append(sa, "a2", "a3");
            s.release(a, last.timestamp());
            s.advance(Duration.ofMillis(10));
            Lease b = s.acquire("node-b", LEASE, "orders/1");
            List<LeaseStamp> sb = s.stamps(b);
            s.advance(Duration.ofMillis(10));
            s.append(sb, "b1");
            // 1.5 s after the grant's witness: a fresher signed time attached keeps the timestamp within the bound.
            s.advance(Duration.ofMillis(1500));
            SignedTimeProof t = s.signer.signTime(new byte[8], Micros.of(s.now())).join();
            FrameWitness fresh = AuditedStore.witnessOf(sb).withTime(t.time(), t.proof());
            s.append(List.of(AuditedStore.withWitness(sb.get(0), fresh.encode())), "b2");

            CliRun json = s.verify("--json");
            assertEquals(0, json.code(), json.toString());
            assertEquals(List.of(), findings(json));
            JsonNode sum = summary(json);
            assertEquals("PROVEN", sum.get("verdict").asText());
            assertEquals(4, sum.get("frames").asLong());
            assertEquals(5, sum.get("messages").asLong());
            assertEquals(4, sum.get("witnesses").asLong());
            assertEquals(3, sum.get("grants").asLong());
            assertEquals(2, sum.get("names").asLong());
            assertEquals(0, sum.get("errors").asLong());
            assertTrue(sum.get("signatureChecks").asLong() <= 4, json.toString());

            CliRun text = s.verify();
            assertEquals(0, text.code(), text.toString());
            assertEquals(1, text.lines().size(), text.toString());
            assertTrue(text.lines().get(0).startsWith("PROVEN: 1 logs, "), text.toString());
        }
    }

    @Test
    void aFlippedBitInAWitnessIsABadSignature() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-flip-witness")) {
            List<LeaseStamp> st = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            s.advance(Duration.ofMillis(100));
            s.append(st, "m1");
            Appended hit = s.append(st, "m2");
            assertEquals(0, s.verify().code());
            // The frame of m2 only: the lowest bit of the witness's deadline (one microsecond later).
            FrameWitness fw = AuditedStore.witnessOf(st);
            s.flip(hit, fw.witnessBytes(), index(fw.witness(), 8 + 1 + 4 + 1 + 8 + 8 + 7), 0);
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("BAD_SIGNATURE"), kinds(r), r.toString());
            assertEquals(1, findings(r).size(), r.toString());
            at(r, s, "BAD_SIGNATURE", hit);
            assertEquals("orders/1", findings(r).get(0).get("name").asText());
        }
    }

    @Test
    void aFlippedBitInAMerklePathIsABadSignature() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-flip-path")) {
            List<LeaseStamp> st = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            FrameWitness fw = AuditedStore.witnessOf(st);
            assertEquals(2, fw.proof().path().length, "the batch of four gives a path of two hashes");
            s.advance(Duration.ofMillis(100));
            Appended hit = s.append(st, "m1");
            byte[] proof = fw.proof().encode();
            s.flip(hit, proof, 26 + 32 + 5, 6);
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("BAD_SIGNATURE"), kinds(r), r.toString());
            at(r, s, "BAD_SIGNATURE", hit);
        }
    }

    @Test
    void aFlippedBitInASignedTimeIsABadSignature() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-flip-time")) {
            List<LeaseStamp> st = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            s.advance(Duration.ofMillis(800));
            SignedTimeProof t = s.signer.signTime(new byte[8], Micros.of(s.now())).join();
            FrameWitness fresh = AuditedStore.witnessOf(st).withTime(t.time(), t.proof());
            Appended hit = s.append(List.of(AuditedStore.withWitness(st.get(0), fresh.encode())), "m1");
            assertEquals(0, s.verify().code());
            byte[] time = t.timeBytes();
            // Bit 4 of the midpoint's lowest byte: 16 us later, well within every bound but the signature.
            s.flip(hit, time, time.length - 9, 4);
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("BAD_SIGNATURE"), kinds(r), r.toString());
            JsonNode f = at(r, s, "BAD_SIGNATURE", hit);
            assertTrue(f.get("message").asText().contains("signed time"), f.toString());
        }
    }

    @Test
    void aWitnessOfAnotherNameOrKeyIsCaught() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-other")) {
            List<LeaseStamp> one = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            List<LeaseStamp> two = s.stamps(s.acquire("node-a", LEASE, "orders/2"));
            s.advance(Duration.ofMillis(100));
            s.append(one, "fine");
            // orders/2 written with the witness of orders/1: the store refuses that at append, so a forger puts
            // orders/1's witness (of the same length) in place of orders/2's in the file.
            Appended otherName = s.append(two, "x");
            s.replace(otherName, two.get(0).witness(), one.get(0).witness());
            // orders/2's witness signed by a key nobody published.
            Lease three = s.acquire("node-a", LEASE, "orders/3");
            Witness w3 = s.witness(three, three.grants().get(0));
            try (AuditSigner rogue = new AuditSigner(SigningKey.generate(new SecureRandom()), AuditedStore.SERVICE,
                    1_000, 20_000, 64)) {
                FrameWitness fw = AuditedStore.sign(rogue, w3, s.now());
                Appended unknownKey = s.append(List.of(AuditedStore.withWitness(LeaseStamp.of(three).get(0),
                        fw.encode())), "y");
                // The witness names the published key, its proof is the rogue key's.
                FrameWitness mixed = new FrameWitness(w3.encode(), w3, fw.proof(), null, null, null);
                Appended mismatch = s.append(List.of(AuditedStore.withWitness(LeaseStamp.of(three).get(0),
                        mixed.encode())), "z");
                CliRun r = s.verify("--json");
                assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
                assertEquals(Set.of("WITNESS_OF_OTHER_LEASE", "UNKNOWN_KEY", "KEY_MISMATCH"), kinds(r), r.toString());
                at(r, s, "WITNESS_OF_OTHER_LEASE", otherName);
                at(r, s, "UNKNOWN_KEY", unknownKey);
                at(r, s, "KEY_MISMATCH", mismatch);
            }
        }
    }

    @Test
    void twoWitnessesOfOneGrantThatNameDifferentPrincipalsConflict() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-principal")) {
            Lease a = s.acquire("node-a", LEASE, "orders/1");
            Witness w = s.witness(a, a.grants().get(0));
            List<LeaseStamp> billing = List.of(AuditedStore.withWitness(LeaseStamp.of(a).get(0),
                    AuditedStore.sign(s.signer, withPrincipal(w, "billing"), s.now()).encode()));
            s.advance(Duration.ofMillis(100));
            s.append(billing, "b1");
            assertEquals(0, s.verify().code(), "one principal throughout is clean");
            // The same grant (correlation id) named with another principal: a signed statement that contradicts the
            // first, which a service never makes (renewals and upgrades keep the grant's principal).
            s.advance(Duration.ofMillis(100));
            Appended hit = s.append(List.of(AuditedStore.withWitness(LeaseStamp.of(a).get(0),
                    AuditedStore.sign(s.signer, withPrincipal(w, "mallory"), s.now()).encode())), "m1");
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("CONFLICTING_WITNESSES"), kinds(r), r.toString());
            JsonNode f = at(r, s, "CONFLICTING_WITNESSES", hit);
            assertTrue(f.get("message").asText().contains("for principal 'billing'")
                    && f.get("message").asText().contains("for principal 'mallory'"), f.toString());
        }
    }

    private static Witness withPrincipal(Witness w, String principal) {
        return new Witness(w.event(), w.serviceId(), w.keyId(), w.name(), w.generation(), w.mode(), w.kind(),
                w.floor(), w.writableFrom(), w.deadline(), w.grantedAt(), w.signedTime(), w.radius(),
                w.correlationId(), w.predecessorId(), w.predecessorEnding(), w.predecessorEndedAt(),
                w.predecessorWatermark(), w.predecessorWatermarkSignedAt(), w.holder(), principal);
    }

    @Test
    void aMessageOutsideItsLeaseIsCaught() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-outside")) {
            Lease a = s.acquire("node-a", Duration.ofSeconds(5), "orders/1");
            List<LeaseStamp> st = s.stamps(a);
            s.advance(Duration.ofMillis(100));
            Appended ok = s.append(st, "inside");
            s.advance(Duration.ofSeconds(6));
            // A writer bug: the stamp's deadline moved on, the witness's did not; a fresh signed time is attached.
            LeaseStamp p = st.get(0);
            SignedTimeProof t = s.signer.signTime(new byte[8], Micros.of(s.now())).join();
            byte[] w = AuditedStore.witnessOf(st).withTime(t.time(), t.proof()).encode();
            Appended hit = s.append(List.of(new LeaseStamp(p.name(), p.generation(), p.floor(),
                    p.deadline().plusSeconds(60), p.writableFrom(), null, w)), "late");
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("OUTSIDE_LEASE"), kinds(r), r.toString());
            assertEquals(1, findings(r).size(), r.toString());
            at(r, s, "OUTSIDE_LEASE", hit);
            assertTrue(ok.timestamp().isBefore(a.deadline()));
        }
    }

    @Test
    void theStaleHolderWriteAfterReleaseIsCaught() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-stale")) {
            Lease a = s.acquire("node-a", LEASE, "orders/1");
            List<LeaseStamp> sa = s.stamps(a);
            s.advance(Duration.ofMillis(100));
            Appended a1 = s.append(sa, "a1");
            s.release(a, a1.timestamp());
            s.advance(Duration.ofMillis(10));
            Lease b = s.acquire("node-b", LEASE, "orders/1");
            List<LeaseStamp> sb = s.stamps(b);
            s.advance(Duration.ofMillis(10));
            s.append(sb, "b1");
            assertEquals(0, s.verify().code());
            // node-a resumes and appends through the public API under its released lease: the store accepts it.
            s.advance(Duration.ofMillis(10));
            Appended stale = s.append(sa, "a-after-release");
            assertTrue(stale.timestamp().isAfter(b.grants().get(0).floor()));
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            JsonNode f = at(r, s, "STALE_HOLDER_WRITE", stale);
            assertTrue(f.get("message").asText().contains("above the watermark " + Micros.of(a1.timestamp())),
                    f.toString());
            // The same message breaks the lease order of the name (invariant 6); nothing else is reported.
            assertEquals(Set.of("STALE_HOLDER_WRITE", "LEASE_ORDER"), kinds(r), r.toString());
            at(r, s, "LEASE_ORDER", stale);
        }
    }

    @Test
    void aTimestampTwoSecondsFromItsSignedTimeIsCaught() throws Exception {
        // A writer whose store was configured to allow an hour; the verifier holds the 1 s bound.
        try (AuditedStore s = new AuditedStore("verify-time-bound", Duration.ofHours(1))) {
            List<LeaseStamp> st = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            s.advance(Duration.ofMillis(900));
            Appended near = s.append(st, "0.9 s after the witness");
            s.advance(Duration.ofMillis(1100));
            Appended far = s.append(st, "2 s after the witness");
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("SIGNED_TIME_BOUND"), kinds(r), r.toString());
            assertEquals(1, findings(r).size(), r.toString());
            at(r, s, "SIGNED_TIME_BOUND", far);
            assertTrue(near.timestamp().isBefore(far.timestamp()));
            assertEquals(0, s.verify("--time-bound", "3s").code());
        }
    }

    @Test
    void aMissingWitnessIsAWarningOrWithRequireWitnessesAnError() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-missing")) {
            Lease a = s.acquire("node-a", LEASE, "orders/1");
            List<LeaseStamp> signed = s.stamps(a);
            s.advance(Duration.ofMillis(100));
            s.append(signed, "signed");
            Appended bare = s.append(LeaseStamp.of(a), "bare");
            s.append(LeaseStamp.of(a), "bare again");
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.WARNINGS, r.code(), r.toString());
            assertEquals(Set.of("MISSING_WITNESS"), kinds(r), r.toString());
            assertEquals(1, findings(r).size(), "one warning per grant: " + r);
            assertEquals("WARNING", at(r, s, "MISSING_WITNESS", bare).get("severity").asText());
            assertEquals(2, summary(r).get("missingWitnesses").asLong());
            assertEquals("PROVEN_WITH_WARNINGS", summary(r).get("verdict").asText());

            CliRun strict = s.verify("--json", "--require-witnesses");
            assertEquals(VerifyCommand.ERRORS, strict.code(), strict.toString());
            assertEquals("ERROR", at(strict, s, "MISSING_WITNESS_REQUIRED", bare).get("severity").asText());
        }
    }

    @Test
    void aRevokedKeysWitnessesAreFlaggedFromTheRevocationTime() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-revoked")) {
            List<LeaseStamp> before = s.stamps(s.acquire("node-a", LEASE, "orders/1"));
            s.advance(Duration.ofMillis(100));
            Appended early = s.append(before, "signed before the revocation");
            Instant revokedAt = s.now().plusMillis(500);
            s.advance(Duration.ofSeconds(1));
            List<LeaseStamp> after = s.stamps(s.acquire("node-b", LEASE, "orders/2"));
            s.advance(Duration.ofMillis(100));
            Appended late = s.append(after, "signed after the revocation");
            assertEquals(0, s.verify().code());
            s.revoke(s.key, revokedAt);
            CliRun r = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, r.code(), r.toString());
            assertEquals(Set.of("KEY_REVOKED"), kinds(r), r.toString());
            assertEquals(1, findings(r).size(), r.toString());
            at(r, s, "KEY_REVOKED", late);
            assertTrue(early.timestamp().isBefore(revokedAt));
        }
    }

    @Test
    void unreadableKeysAndUnknownLogsAreClearFailures() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-failures")) {
            CliRun noLog = s.verify("--log", "nope");
            assertEquals(2, noLog.code(), noLog.toString());
            assertTrue(noLog.err().contains("the store has no log 'nope'"), noLog.toString());
            java.nio.file.Files.writeString(s.root().resolve(".leasehold/keys/" + s.key.id() + ".key"), "garbage\n");
            CliRun badKeys = s.verify();
            assertEquals(1, badKeys.code(), badKeys.toString());
            assertTrue(badKeys.err().contains("the published keys cannot be read"), badKeys.toString());
        }
    }

    @Test
    void aCompactedLogVerifiesAndADamagedSegmentIsCaught() throws Exception {
        try (AuditedStore s = new AuditedStore("verify-segment")) {
            Lease a = s.acquire("node-a", LEASE, "orders/1");
            List<LeaseStamp> sa = s.stamps(a);
            s.advance(Duration.ofMillis(100));
            Appended first = s.append(sa, "a1");
            s.advance(Duration.ofMillis(700));
            s.append(sa, "a2");
            // Past the end of the store's hour-long segment span plus the horizon.
            s.advance(Duration.ofMinutes(80));
            s.store.store.sealThrough(AuditedStore.LOG, first.bucket(), s.now().minusSeconds(60));
            long from = Micros.of(first.bucket()) - Micros.of(first.bucket()) % 3_600_000_000L;
            String name = from + "-" + (from + 3_600_000_000L) + ".segment";
            assertTrue(s.store.store.compact(AuditedStore.LOG, Duration.ofMinutes(1)).published().contains(name));
            CliRun r = s.verify("--json");
            assertEquals(0, r.code(), r.toString());
            assertEquals(2, summary(r).get("messages").asLong(), r.toString());
            // One bit of the segment's first frame (its timestamp's lowest byte): the segment no longer agrees.
            java.nio.file.Path seg = s.root().resolve(AuditedStore.LOG).resolve("segments").resolve(name);
            byte[] bytes = java.nio.file.Files.readAllBytes(seg);
            bytes[8 + 16 + 23] ^= 1;
            seg.toFile().setWritable(true);
            java.nio.file.Files.write(seg, bytes);
            CliRun damaged = s.verify("--json");
            assertEquals(VerifyCommand.ERRORS, damaged.code(), damaged.toString());
            assertEquals(Set.of("BAD_SEGMENT"), kinds(damaged), damaged.toString());
            assertEquals("segments/" + seg.getFileName(), findings(damaged).get(0).get("file").asText());
        }
    }
}
