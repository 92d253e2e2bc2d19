package org.leasehold.remote;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.google.protobuf.ByteString;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.wire.proto.KeysReply;
import org.leasehold.wire.proto.PublicKey;
import org.leasehold.wire.proto.SignedTimeReply;

/**
 * The client's check of a server's signed time ({@link SignedClock}) against real signers: an answer signed by the
 * pinned key verifies; a flipped bit in the statement or the signature, another nonce, or a key the server does not
 * serve (after fetching its keys again once) is refused with a message saying so; a key that changed is pinned anew.
 * This process's clock is compared with the signed time: within radius, round trip and maxClockError it passes, beyond
 * it the server is refused, with by how much, until a check passes again.
 */
class SignedClockTest {
    private static final long NOW = 1_795_000_000_000_000L;

    private final SigningKey key = SigningKey.generate(new SecureRandom());
    private final AuditSigner signer = new AuditSigner(key, "lease-server/" + key.id(), 500_000, 50, 64);
    private final SigningKey other = SigningKey.generate(new SecureRandom());
    private final AuditSigner otherSigner = new AuditSigner(other, "lease-server/" + key.id(), 500_000, 50, 64);
    private final AtomicInteger keyFetches = new AtomicInteger();

    @AfterEach
    void close() {
        signer.close();
        otherSigner.close();
    }

    private static KeysReply keysOf(SigningKey k, String service) {
        return KeysReply.newBuilder().setSigning(true).addKeys(PublicKey.newBuilder()
                .setKeyId(ByteString.copyFrom(HexFormat.of().parseHex(k.id().toString())))
                .setEd25519(ByteString.copyFrom(k.publicKey().raw())).setServiceId(service).setValidFromMicros(0)
                .setValidUntilMicros(Long.MAX_VALUE)).build();
    }

    private KeysReply served() {
        keyFetches.incrementAndGet();
        return keysOf(key, "lease-server/" + key.id());
    }

    private static SignedTimeReply reply(SignedTimeProof t) {
        return SignedTimeReply.newBuilder().setSignedTime(ByteString.copyFrom(t.timeBytes()))
                .setProof(ByteString.copyFrom(t.proof().encode())).build();
    }

    private static byte[] flip(byte[] b, int index) {
        byte[] c = b.clone();
        c[index] ^= 1;
        return c;
    }

    @Test
    void aSignedTimeOfThePinnedKeyVerifiesAndForgedOrMismatchedOnesAreRefused() throws Exception {
        SignedClock clock = new SignedClock("server-a:7420", Duration.ofSeconds(1));
        byte[] nonce = {1, 2, 3, 4};
        SignedTimeProof good = signer.signTime(nonce, NOW).get(10, TimeUnit.SECONDS);
        assertEquals(NOW, clock.verify(nonce, reply(good), this::served).time().midpoint());
        assertEquals(1, keyFetches.get(), "the keys are fetched once and pinned");
        clock.verify(nonce, reply(good), this::served);
        assertEquals(1, keyFetches.get());

        byte[] proof = good.proof().encode();
        SignedTimeReply badSignature = reply(good).toBuilder().setProof(ByteString.copyFrom(flip(proof,
                proof.length - 1))).build();
        LeaseServiceUnavailableException e = assertThrows(LeaseServiceUnavailableException.class,
                () -> clock.verify(nonce, badSignature, this::served));
        assertTrue(e.getMessage().contains("does not verify") && e.getMessage().contains("server-a:7420")
                && e.getMessage().contains("was refused"), e.getMessage());

        // A changed midpoint (the last 16 bytes are midpoint and radius).
        byte[] time = good.timeBytes();
        SignedTimeReply changedTime = reply(good).toBuilder().setSignedTime(ByteString.copyFrom(flip(time,
                time.length - 9))).build();
        assertTrue(assertThrows(LeaseServiceUnavailableException.class, () -> clock.verify(nonce, changedTime,
                this::served)).getMessage().contains("does not verify"));

        assertTrue(assertThrows(LeaseServiceUnavailableException.class, () -> clock.verify(new byte[] {9}, reply(good),
                this::served)).getMessage().contains("answers another nonce"));

        SignedTimeReply garbage = SignedTimeReply.newBuilder().setSignedTime(ByteString.copyFrom(new byte[] {1, 2}))
                .setProof(ByteString.copyFrom(proof)).build();
        assertTrue(assertThrows(LeaseServiceUnavailableException.class, () -> clock.verify(nonce, garbage,
                this::served)).getMessage().contains("does not decode"));

        // Signed by a key the server does not serve: the keys are fetched again once, and it is still refused.
        SignedTimeProof foreign = otherSigner.signTime(nonce, NOW).get(10, TimeUnit.SECONDS);
        int before = keyFetches.get();
        e = assertThrows(LeaseServiceUnavailableException.class, () -> clock.verify(nonce, reply(foreign),
                this::served));
        assertEquals(before + 1, keyFetches.get());
        assertTrue(e.getMessage().contains("not among the 1 published keys"), e.getMessage());
    }

    @Test
    void aServerWhoseKeyChangedIsPinnedAnew() throws Exception {
        SignedClock clock = new SignedClock("server-b:7420", Duration.ofSeconds(1));
        byte[] nonce = {5};
        clock.verify(nonce, reply(signer.signTime(nonce, NOW).get(10, TimeUnit.SECONDS)), this::served);
        SignedTimeProof rotated = otherSigner.signTime(nonce, NOW).get(10, TimeUnit.SECONDS);
        assertEquals(NOW, clock.verify(nonce, reply(rotated), () -> keysOf(other, "lease-server/" + key.id()))
                .time().midpoint());
    }

    @Test
    void thisClockIsRefusedBeyondRadiusRoundTripAndMaxClockErrorAndAcceptedAgainWhenBack() throws Exception {
        SignedClock clock = new SignedClock("server-c:7420", Duration.ofSeconds(1));
        SignedTimeProof t = signer.signTime(new byte[] {1}, NOW).get(10, TimeUnit.SECONDS);
        // Asked 10 ms before and answered 10 ms after the server's reading, by clocks 700 ms and 1.4 s off.
        assertNull(clock.check(NOW + 700_000 - 10_000, t, NOW + 700_000 + 10_000));
        assertNull(clock.check(NOW - 1_400_000 - 10_000, t, NOW - 1_400_000 + 10_000), "1.4 s is within 0.5 s "
                + "radius + 20 ms round trip + 1 s");
        String ahead = clock.check(NOW + 2_000_000 - 10_000, t, NOW + 2_000_000 + 10_000);
        assertTrue(ahead != null && ahead.contains("this process's clock is PT2S ahead of the signed time of lease "
                + "server server-c:7420") && ahead.contains("PT1.48S beyond") && ahead.contains("maxClockError (PT1S)")
                && ahead.contains("correct this machine's clock"), ahead);
        assertEquals(ahead, clock.refusal());
        String behind = clock.check(NOW - 2_000_000 - 10_000, t, NOW - 2_000_000 + 10_000);
        assertTrue(behind != null && behind.contains("PT2S behind"), behind);
        assertNull(clock.check(NOW - 10_000, t, NOW + 10_000));
        assertNull(clock.refusal(), "a passing check lifts the refusal");
    }
}
