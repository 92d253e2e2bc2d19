package org.leasehold.cli;

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
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.Micros;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * {@code leasehold keys} on a real store whose witnesses an embedded engine signs with keys kept as the adapter keeps
 * them ({@code .leasehold/signing/<log>/<writer>/}): the key is rotated by the command while four holders take leases
 * and write, the engine adopts it as the adapter's rotation timer does, {@code leasehold verify} proves the whole log,
 * and a revocation flags exactly the witnesses the revoked key signed from the revocation time on.
 */
class KeysCommandTest {
    private static final String LOG = "orders";
    private static final String WRITER = "w1";
    private static final String SERVICE = "embedded/" + WRITER + "/" + LOG;
    private static final int THREADS = 4;
    private static final int ROUNDS = 30;
    private static final int ROTATE_AT = 12;

    /** One frame written: where, and the key and signed time of its witness. */
    private record Written(Appended at, KeyId key, long signedTime) {
    }

    @Test
    void aKeyRotatedWhileLeasesAreGrantedVerifiesAndARevocationFlagsFromItsTime() throws Exception {
        try (TestStore s = new TestStore("keys-rotation")) {
            Path signing = s.root.resolve(".leasehold").resolve("signing").resolve(LOG);
            java.nio.file.Files.createDirectories(signing);
            KeyFiles files = new KeyFiles(new NfsSafeFiles(), signing.resolve(WRITER), WRITER, new SecureRandom());
            ServiceKeys keys = new ServiceKeys(files, new PublishedKeys(new NfsSafeFiles(), s.root, WRITER), SERVICE);
            AuditSigner signer = keys.start(files.current(), 1_000, s.clock.nowMicros());
            KeyId first = signer.keyId();
            EmbeddedLeaseService engine = new EmbeddedLeaseService(EngineConfig.defaults().withServiceId(SERVICE)
                    .withMaxLeaseDuration(Duration.ofSeconds(60)).withQuietPeriod(Duration.ZERO), s.clock, null,
                    signer);
            ConcurrentLinkedQueue<Written> written = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(THREADS);
            CliRun rotated = null;
            Instant rotatedAt = null;
            try {
                for (int round = 0; round < ROUNDS; round++) {
                    CyclicBarrier start = new CyclicBarrier(THREADS + 1);
                    List<Future<?>> running = new ArrayList<>();
                    for (int t = 0; t < THREADS; t++) {
                        int thread = t;
                        int r = round;
                        running.add(pool.submit(() -> {
                            start.await(30, TimeUnit.SECONDS);
                            Random rnd = new Random(r * 31L + thread);
                            // Overlapping names across threads: leases wait for each other and chain.
                            String a = "account/" + rnd.nextInt(6);
                            String b = "account/" + (6 + rnd.nextInt(3));
                            Lease lease = engine.acquire(LeaseRequest.builder(new HolderId("node-" + thread, "t" + r),
                                    a, b).leaseFor(Duration.ofSeconds(30)).waitFor(Duration.ofSeconds(60)).build());
                            List<LeaseStamp> stamps = LeaseStamp.of(lease);
                            Appended at = s.store.append(AppendRequest.of(LOG, stamps, ("transfer " + a + " " + b)
                                    .getBytes(StandardCharsets.UTF_8)));
                            FrameWitness fw = FrameWitness.decode(stamps.get(0).witness());
                            written.add(new Written(at, fw.witness().keyId(), fw.latestSignedTime()));
                            engine.release(lease, at.timestamp(), null);
                            return null;
                        }));
                    }
                    start.await(30, TimeUnit.SECONDS);
                    if (round == ROTATE_AT) {
                        // While this round's holders take leases and write: the operator's command, then the
                        // engine's next look at its key directory.
                        rotatedAt = s.clock.now();
                        rotated = CliRun.of(s.clock, "keys", "rotate", "--store", s.root.toString(), "--log", LOG,
                                "--writer", WRITER, "--json");
                        assertEquals(0, rotated.code(), rotated.toString());
                        assertNotNull(keys.adoptLatest(signer, s.clock.nowMicros()));
                    }
                    for (Future<?> f : running) {
                        f.get(60, TimeUnit.SECONDS);
                    }
                    s.clock.advance(Duration.ofMillis(50));
                }
            } finally {
                pool.shutdownNow();
                engine.close();
                signer.close();
            }
            KeyId second = KeyId.parse(rotated.json().get(0).get("keyId").asText());
            assertNotEquals(first, second);
            assertEquals(second, files.current().id(), "the rotated key is the current key file");
            Set<KeyId> used = new HashSet<>();
            written.forEach(w -> used.add(w.key()));
            assertEquals(Set.of(first, second), used, "witnesses of both keys in the log");

            CliRun list = CliRun.of(s.clock, "keys", "list", "--store", s.root.toString(), "--json");
            assertEquals(0, list.code(), list.toString());
            assertEquals(2, list.json().size(), list.toString());
            for (JsonNode k : list.json()) {
                assertEquals(SERVICE, k.get("service").asText());
                assertTrue(k.get("revokedAt").isNull());
            }

            CliRun clean = CliRun.of(s.clock, "verify", "--store", s.root.toString(), "--json");
            assertEquals(0, clean.code(), clean.toString());
            JsonNode sum = clean.json().get(clean.json().size() - 1);
            assertEquals("PROVEN", sum.get("verdict").asText(), clean.toString());
            assertEquals(THREADS * ROUNDS, sum.get("messages").asLong(), clean.toString());

            // Revoke the first key from a time before the rotation: the witnesses it signed from then on are flagged.
            Instant revokedAt = rotatedAt.minusMillis(200);
            CliRun revoke = CliRun.of(s.clock, "keys", "revoke", "--store", s.root.toString(), "--key",
                    first.toString(), "--at", revokedAt.toString(), "--reason", "copied off the machine");
            assertEquals(0, revoke.code(), revoke.toString());
            assertEquals("key " + first + " revoked from " + revokedAt, revoke.lines().get(0));
            Set<String> expected = new HashSet<>();
            for (Written w : written) {
                if (w.key().equals(first) && w.signedTime() >= Micros.of(revokedAt)) {
                    expected.add(w.at().bucket() + " " + w.at().file() + "@" + w.at().offset());
                }
            }
            assertTrue(expected.size() >= THREADS, "witnesses of the first key after the revocation: " + expected);
            CliRun flagged = CliRun.of(s.clock, "verify", "--store", s.root.toString(), "--json");
            assertEquals(VerifyCommand.ERRORS, flagged.code(), flagged.toString());
            Set<String> found = new HashSet<>();
            for (JsonNode n : flagged.json()) {
                if (n.get("type").asText().equals("finding")) {
                    assertEquals("KEY_REVOKED", n.get("kind").asText(), flagged.toString());
                    String f = n.get("file").asText();
                    found.add(n.get("bucket").asText() + " " + f.substring(f.lastIndexOf('/') + 1) + "@"
                            + n.get("offset").asLong());
                }
            }
            assertEquals(expected, found, flagged.toString());
        }
    }

    /**
     * {@code keys rotate-server} links the next key file of a lease server's state directory (the server adopts it
     * while it runs: {@code ServerKeyRotationTest} in the server module) and names the service, which stays the first
     * key's; a directory without keys is refused with what to give instead.
     */
    @Test
    void rotateServerLinksTheNextKeyFileOfAServersStateDirectoryAndKeepsItsService() throws Exception {
        try (TestStore s = new TestStore("keys-rotate-server")) {
            Path state = s.root.resolveSibling(s.root.getFileName() + "-server-state");
            TestStore.deleteTree(state); // a state directory of its own, as the store's root is (a rerun starts afresh)
            KeyFiles files = new KeyFiles(new NfsSafeFiles(), Files.createDirectories(state).resolve("signing"),
                    "lease-server", new SecureRandom());
            KeyId first = files.current().id();
            CliRun rotated = CliRun.of(s.clock, "keys", "rotate-server", "--state-dir", state.toString(), "--json");
            assertEquals(0, rotated.code(), rotated.toString());
            KeyId second = KeyId.parse(rotated.json().get(0).get("keyId").asText());
            assertNotEquals(first, second);
            assertEquals(second, files.current().id(), "the new key is the current key file");
            assertEquals(first, files.first().id());
            assertEquals("lease-server/" + first, rotated.json().get(0).get("service").asText());
            assertTrue(Files.exists(state.resolve("signing").resolve("key.2.pem")));
            CliRun again = CliRun.of(s.clock, "keys", "rotate-server", "--state-dir", state.toString());
            assertEquals(0, again.code(), again.toString());
            assertTrue(again.out().startsWith("key " + files.current().id() + " of service lease-server/" + first
                    + " linked in "), again.toString());
            assertTrue(Files.exists(state.resolve("signing").resolve("key.3.pem")));

            CliRun none = CliRun.of(s.clock, "keys", "rotate-server", "--state-dir", s.root.toString());
            assertEquals(1, none.code(), none.toString());
            assertTrue(none.err().startsWith("leasehold: no generated signing keys under "
                    + s.root.resolve("signing") + ": give the --state-dir of a lease server"), none.toString());
            CliRun missing = CliRun.of(s.clock, "keys", "rotate-server");
            assertEquals(2, missing.code(), missing.toString());
            assertTrue(missing.err().contains("--state-dir"), missing.toString());
        }
    }

    @Test
    void badArgumentsAndMissingKeysAreOneClearLine() throws Exception {
        try (TestStore s = new TestStore("keys-errors")) {
            CliRun noKeys = CliRun.of(s.clock, "keys", "rotate", "--store", s.root.toString(), "--log", LOG,
                    "--writer", WRITER);
            assertEquals(1, noKeys.code(), noKeys.toString());
            assertTrue(noKeys.err().startsWith("leasehold: no generated signing keys of writer 'w1' for log 'orders' under "),
                    noKeys.toString());
            CliRun badId = CliRun.of(s.clock, "keys", "revoke", "--store", s.root.toString(), "--key", "xyz",
                    "--reason", "r");
            assertEquals(2, badId.code(), badId.toString());
            assertTrue(badId.err().contains("--key 'xyz': a key id is 32 hexadecimal digits, got: xyz"),
                    badId.toString());
            CliRun unknown = CliRun.of(s.clock, "keys", "revoke", "--store", s.root.toString(), "--key",
                    "0123456789abcdef0123456789abcdef", "--reason", "r");
            assertEquals(1, unknown.code(), unknown.toString());
            assertTrue(unknown.err().startsWith("leasehold: no key 0123456789abcdef0123456789abcdef is published in "),
                    unknown.toString());
            CliRun empty = CliRun.of(s.clock, "keys", "list", "--store", s.root.toString());
            assertEquals(0, empty.code(), empty.toString());
            assertEquals(List.of(), empty.lines());
        }
    }
}
