package org.leasehold.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeyRotation;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.Micros;

/**
 * A lease server rotates its signing key without a restart (docs/SERVER.md, "Signing"): a key file linked into its
 * state directory (as {@code leasehold keys rotate-server} links it) is adopted at the next look, every
 * {@link KeyRotation#CHECK_MICROS} of the server's clock (a test clock here, moved by the test): served by the keys
 * call and published into the store root before the first witness it signs, the old key still served and valid, and
 * the service in the witnesses unchanged, then and after a restart, after which the earlier keys are still served. A
 * damaged key file is not adopted: the server signs on with its key (and after a restart, one that is not current is
 * not served, with a warning). Connections stay open throughout; the witnesses are checked against the published keys alone.
 */
class ServerKeyRotationTest {
    private static final HolderId ME = new HolderId("key-rotation-test", "t1");
    private static final Instant START = Instant.parse("2026-06-01T00:00:00Z");

    private final Path dir = Path.of("target", "key-rotation-" + System.nanoTime());
    private final Closing closing = new Closing();

    @AfterEach
    void stop() {
        closing.closeAll();
    }

    private LeaseServer start(Path state, Path root, Instant clock) throws Exception {
        LeaseServer s = LeaseServer.start(ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withStateDir(state).withSigning(new ServerConfig.Signing(true, null, root)).withTestClock(clock));
        closing.add(s);
        return s;
    }

    private static FrameWitness witness(Lease lease) throws Exception {
        return FrameWitness.decode(lease.grants().get(0).witness().await(Duration.ofSeconds(30)));
    }

    private static KeySet published(Path root) throws Exception {
        return PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root));
    }

    private static Set<KeyId> served(RemoteLeaseService client) throws Exception {
        return client.publicKeys("any").stream().map(PublishedKey::id).collect(Collectors.toSet());
    }

    @Test
    void aKeyFileLinkedIntoTheStateDirectoryIsServedPublishedAndSignedWithAtTheNextLookWithoutARestart()
            throws Exception {
        Path state = dir.resolve("state");
        Path root = dir.resolve("store");
        Files.createDirectories(root);
        LeaseServer server = start(state, root, START);
        TestClockClient clock = closing.later(new TestClockClient(server.address()));
        RemoteLeaseService client = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                .callTimeout(Duration.ofSeconds(10)).build()));

        Lease before = client.acquire(LeaseRequest.builder(ME, "rotated/a").build());
        FrameWitness first = witness(before);
        KeyId k1 = first.proof().keyId();
        String service = first.witness().serviceId();
        assertEquals("lease-server/" + k1, service);
        client.release(before, null, null);

        KeyFiles files = new KeyFiles(new NfsSafeFiles(), state.resolve("signing"), "operator", new SecureRandom());
        SigningKey k2 = files.next();
        assertNotEquals(k1, k2.id());
        // Not yet looked at: the server signs on with its key.
        clock.advance(Duration.ofMillis(KeyRotation.CHECK_MICROS / 1_000 - 1));
        Lease stillOld = client.acquire(LeaseRequest.builder(ME, "rotated/b").build());
        assertEquals(k1, witness(stillOld).proof().keyId(), "no look yet, no rotation");
        assertEquals(Set.of(k1), served(client));
        assertEquals(null, published(root).get(k2.id()), "not published before the look");
        client.release(stillOld, null, null);

        clock.advance(Duration.ofMillis(1));
        assertEquals(Set.of(k2.id(), k1), served(client), "the new key served, the old one still served");
        PublishedKey p2 = published(root).get(k2.id());
        assertNotNull(p2, "the new key is published into the store root");
        assertEquals(service, p2.serviceId(), "published under the same service");
        assertEquals(Micros.of(START.plusMillis(KeyRotation.CHECK_MICROS / 1_000)), p2.validFrom());
        assertEquals(Long.MAX_VALUE, published(root).get(k1).validUntil(), "the old key stays valid");

        Lease after = client.acquire(LeaseRequest.builder(ME, "rotated/a").build());
        FrameWitness second = witness(after);
        assertEquals(k2.id(), second.proof().keyId(), "signed with the new key, on the same connection");
        assertEquals(k2.id(), second.witness().keyId());
        assertEquals(service, second.witness().serviceId(), "the service stays the same across the rotation");
        assertEquals(first.witness().correlationId(), second.witness().predecessorId(),
                "the chain of the name goes on across the rotation");
        AuditVerifier verifier = new AuditVerifier(published(root));
        assertEquals(List.of(), verifier.check(first), "the old key's witness still verifies");
        assertEquals(List.of(), verifier.check(second), "the new key's witness verifies against the published keys");
        client.release(after, null, null);

        // A damaged key file linked as the next one is not adopted; the server signs on with the key it has.
        Files.writeString(state.resolve("signing").resolve("key.3.pem"), "not a key", StandardCharsets.US_ASCII);
        clock.advance(Duration.ofMillis(KeyRotation.CHECK_MICROS / 1_000));
        Lease damaged = client.acquire(LeaseRequest.builder(ME, "rotated/c").build());
        assertEquals(k2.id(), witness(damaged).proof().keyId(), "a damaged key file is not adopted");
        assertEquals(Set.of(k2.id(), k1), served(client));
        client.release(damaged, null, null);
        Files.delete(state.resolve("signing").resolve("key.3.pem"));
        server.close();

        // Restarted on the same state directory: the current key, and the same service.
        LeaseServer restarted = start(state, root, START.plus(Duration.ofHours(1)));
        RemoteLeaseService c2 = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(restarted.address())
                .callTimeout(Duration.ofSeconds(10)).build()));
        Lease again = c2.acquire(LeaseRequest.builder(ME, "rotated/a").waitFor(Duration.ofSeconds(30)).build());
        FrameWitness third = witness(again);
        assertEquals(k2.id(), third.proof().keyId(), "the restarted server signs with the rotated key");
        assertEquals(service, third.witness().serviceId(), "and as the same service");
        assertEquals(List.of(), new AuditVerifier(published(root)).check(third));
        // It serves the key rotated out before the restart too, after the current one: a client that pinned both
        // before the restart sees the same keys, as after a rotation.
        assertEquals(Set.of(k2.id(), k1), served(c2));
        PublishedKey earlier = c2.publicKeys("any").stream().filter(k -> k.id().equals(k1)).findFirst().orElseThrow();
        assertEquals(Long.MIN_VALUE, earlier.validFrom(), "its start is not kept: served as open");
        assertEquals(service, earlier.serviceId());
        c2.release(again, null, null);
        restarted.close();

        // Restarted after a damaged earlier key file and a newer key were linked: it signs with the newest, serves
        // every key it can read, and warns of the one it cannot.
        Files.writeString(state.resolve("signing").resolve("key.3.pem"), "not a key", StandardCharsets.US_ASCII);
        SigningKey k4 = files.next();
        try (LogCapture holderLog = LogCapture.of(EngineHolder.class)) {
            LeaseServer third2 = start(state, root, START.plus(Duration.ofHours(2)));
            RemoteLeaseService c3 = closing.later(new RemoteLeaseService(RemoteClientConfig.builder(third2.address())
                    .callTimeout(Duration.ofSeconds(10)).build()));
            assertEquals(Set.of(k4.id(), k2.id(), k1), served(c3), "the current key and the earlier ones it can read");
            Lease fourth = c3.acquire(LeaseRequest.builder(ME, "rotated/a").waitFor(Duration.ofSeconds(30)).build());
            assertEquals(k4.id(), witness(fourth).proof().keyId());
            assertTrue(holderLog.records().stream().anyMatch(r -> r.getLevel() == Level.WARNING
                    && r.getMessage().startsWith("LEASEHOLD-8105") && String.valueOf(r.getParameters()[0])
                            .endsWith("key.3.pem")), "the unreadable earlier key file is named in a warning");
        }
    }
}
