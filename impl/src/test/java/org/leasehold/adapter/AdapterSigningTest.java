package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.stream.Stream;

import jakarta.resource.ResourceException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeyId;
import org.leasehold.audit.KeyRotation;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.SigningKey;
import org.leasehold.bag.Message;
import org.leasehold.bag.StampedLease;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.store.FileBagStore;
import org.leasehold.store.format.SegmentFile;
import org.leasehold.time.Micros;

/**
 * The adapter's audit properties end to end: {@code SigningKeyFile} (the embedded engine signs with a configured key,
 * published before it signs; a bad file refuses the start naming it), {@code SignedTimeBoundMillis} (the store's bound,
 * which the adapter's reused signed times keep to) and {@code CompactionIntervalMillis} (background compaction).
 */
class AdapterSigningTest {
    private AdapterFixture fx;

    @AfterEach
    void stop() {
        if (fx != null) {
            fx.close();
        }
    }

    private void transfer(String from, String to) throws Exception {
        try (LeaseConnection c = fx.connection()) {
            c.acquire(from, to);
            c.append(("transfer " + from + " " + to).getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Connection {@code i} signed on with {@code subjects[i]} (the container's way) takes {@code account/i} and writes. */
    private void writeOnePerSubject(javax.security.auth.Subject[] subjects) throws Exception {
        for (int i = 0; i < subjects.length; i++) {
            jakarta.resource.spi.ManagedConnection mc = fx.mcf.createManagedConnection(subjects[i], null);
            try (LeaseConnection c = (LeaseConnection) mc.getConnection(subjects[i], null)) {
                c.acquire("account/" + i);
                c.append(("message " + i).getBytes(StandardCharsets.UTF_8));
            } finally {
                mc.destroy();
            }
        }
    }

    private static FrameWitness witness(Message m, int lease) throws Exception {
        StampedLease l = m.leases().get(lease);
        assertTrue(l.witness().length > 0, "lease " + l.name() + " of " + m + " carries a witness");
        return FrameWitness.decode(l.witness());
    }

    @Test
    void aConfiguredKeyFileSignsTheWitnessesAndIsPublished() throws Exception {
        Path root = AdapterFixture.freshRoot("signing-key-file");
        SigningKey key = SigningKey.generate(new SecureRandom());
        Path pem = root.resolve("engine-key.pem");
        Files.writeString(pem, key.toPem());
        fx = new AdapterFixture(root, new org.leasehold.time.ManualTimeSource(AdapterFixture.START),
                mcf -> mcf.setSigningKeyFile(pem.toString()));
        transfer("account/1", "account/2");
        fx.time.advance(Duration.ofMillis(300));
        transfer("account/2", "account/3");
        List<Message> written = fx.messages();
        assertEquals(2, written.size());
        AdapterMetrics metrics = fx.rm().metrics();
        assertTrue(metrics.getSignerStatements() >= 4, "two grants and two upgrades signed at least: "
                + metrics.getSignerStatements());
        assertTrue(metrics.getSignerBatches() >= 1 && metrics.getSignerBatches() <= metrics.getSignerStatements());
        assertEquals(0, metrics.getSignerQueueFullWaits());
        KeySet keys = PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root));
        assertTrue(Files.isRegularFile(PublishedKeys.directory(root).resolve(key.id() + ".key")),
                "the configured key is published under .leasehold/keys");
        AuditVerifier verifier = new AuditVerifier(keys);
        for (Message m : written) {
            for (int i = 0; i < m.leases().size(); i++) {
                FrameWitness fw = witness(m, i);
                assertEquals(key.id(), fw.witness().keyId(), "signed with the configured key");
                assertEquals(List.of(), verifier.check(fw), "the witness of " + m.leases().get(i).name());
            }
        }
        Path generated = root.resolve(".leasehold").resolve("signing");
        if (Files.isDirectory(generated)) {
            try (Stream<Path> s = Files.walk(generated)) {
                assertFalse(s.anyMatch(p -> p.getFileName().toString().endsWith(".pem")),
                        "no key is generated when one is configured");
            }
        }
    }

    /**
     * Container-managed sign-on: the container passes a {@link javax.security.auth.Subject} with each connection, and
     * the embedded engine names its principal in the lease's witnesses (the user name of the password credential for
     * this factory, else the Subject's one principal), in a transaction in the witness of the upgrade at prepare too.
     * No Subject, a credential of another factory with several principals: no principal.
     */
    @Test
    void theContainersSubjectNamesThePrincipalInTheWitnesses() throws Exception {
        fx = new AdapterFixture("signing-principal", mcf -> { });
        javax.security.auth.Subject withCredential = new javax.security.auth.Subject();
        jakarta.resource.spi.security.PasswordCredential credential =
                new jakarta.resource.spi.security.PasswordCredential("ledger-app", "secret".toCharArray());
        credential.setManagedConnectionFactory(fx.mcf);
        withCredential.getPrivateCredentials().add(credential);
        withCredential.getPrincipals().add(() -> "alice");
        withCredential.getPrincipals().add(() -> "accountants");
        javax.security.auth.Subject onePrincipal = new javax.security.auth.Subject();
        onePrincipal.getPrincipals().add(() -> "bob");
        javax.security.auth.Subject otherFactory = new javax.security.auth.Subject();
        jakarta.resource.spi.security.PasswordCredential foreign =
                new jakarta.resource.spi.security.PasswordCredential("someone-else", "x".toCharArray());
        foreign.setManagedConnectionFactory(new LeaseholdManagedConnectionFactory());
        otherFactory.getPrivateCredentials().add(foreign);
        otherFactory.getPrincipals().add(() -> "carol");
        otherFactory.getPrincipals().add(() -> "clerks");

        javax.security.auth.Subject[] subjects = {withCredential, onePrincipal, otherFactory, null};
        String[] expected = {"ledger-app", "bob", null, null};
        writeOnePerSubject(subjects);
        // In a JTA transaction: the tentative lease is upgraded at prepare, and the frame written at commit carries
        // the upgrade's witness, which names the principal too.
        fx.tm.begin();
        jakarta.resource.spi.ManagedConnection mc = fx.mcf.createManagedConnection(onePrincipal, null);
        try {
            fx.tm.getTransaction().enlistResource(mc.getXAResource());
            try (LeaseConnection c = (LeaseConnection) mc.getConnection(onePrincipal, null)) {
                c.acquire("account/" + subjects.length);
                c.append(("message " + subjects.length).getBytes(StandardCharsets.UTF_8));
            }
            fx.tm.commit();
        } finally {
            mc.destroy();
        }
        List<Message> written = fx.messages();
        assertEquals(subjects.length + 1, written.size());
        for (Message m : written) {
            int i = Integer.parseInt(new String(m.payload(), StandardCharsets.UTF_8).substring("message ".length()));
            FrameWitness fw = witness(m, 0);
            assertEquals(i < subjects.length ? expected[i] : "bob", fw.witness().principal(), "the principal of "
                    + "connection " + i + " (" + fw.witness().event() + ")");
        }
        // A principal longer than a witness holds: the connection is refused, saying why, and nothing is written.
        javax.security.auth.Subject tooLong = new javax.security.auth.Subject();
        tooLong.getPrincipals().add(() -> "p".repeat(1025));
        jakarta.resource.spi.ManagedConnection refused = fx.mcf.createManagedConnection(tooLong, null);
        try {
            jakarta.resource.spi.SecurityException e = assertThrows(jakarta.resource.spi.SecurityException.class,
                    () -> refused.getConnection(tooLong, null));
            assertTrue(e.getMessage().contains("1025 bytes") && e.getMessage().contains("shorter resource principal"),
                    e.getMessage());
        } finally {
            refused.destroy();
        }
        assertEquals(subjects.length + 1, fx.messages().size());
        Message inTransaction = written.stream().filter(m -> new String(m.payload(), StandardCharsets.UTF_8)
                .equals("message " + subjects.length)).findFirst().orElseThrow();
        assertEquals(org.leasehold.audit.WitnessEvent.UPGRADE, witness(inTransaction, 0).witness().event(),
                "the transaction's frame carries its upgrade's witness");
    }

    /**
     * {@code ResourcePrincipal}: the definition names the principal when the container passes none (no Subject, or an
     * empty user name, as Payara Micro does); a principal the container passes wins; one too long for a witness fails
     * the definition's check, saying so.
     */
    @Test
    void aDefinitionsResourcePrincipalNamesWhatTheContainerLeavesUnnamed() throws Exception {
        fx = new AdapterFixture("signing-resource-principal", mcf -> mcf.setResourcePrincipal(" orders-service "));
        javax.security.auth.Subject emptyName = new javax.security.auth.Subject();
        jakarta.resource.spi.security.PasswordCredential blank =
                new jakarta.resource.spi.security.PasswordCredential("", new char[0]);
        blank.setManagedConnectionFactory(fx.mcf);
        emptyName.getPrivateCredentials().add(blank);
        emptyName.getPrincipals().add(() -> "");
        javax.security.auth.Subject mapped = new javax.security.auth.Subject();
        jakarta.resource.spi.security.PasswordCredential credential =
                new jakarta.resource.spi.security.PasswordCredential("ledger-writer", "secret".toCharArray());
        credential.setManagedConnectionFactory(fx.mcf);
        mapped.getPrivateCredentials().add(credential);
        javax.security.auth.Subject[] subjects = {null, emptyName, mapped};
        String[] expected = {"orders-service", "orders-service", "ledger-writer"};
        writeOnePerSubject(subjects);
        List<Message> written = fx.messages();
        assertEquals(subjects.length, written.size());
        for (Message m : written) {
            int i = Integer.parseInt(new String(m.payload(), StandardCharsets.UTF_8).substring("message ".length()));
            assertEquals(expected[i], witness(m, 0).witness().principal(), "the principal of connection " + i);
        }
        fx.mcf.setResourcePrincipal("p".repeat(1025));
        jakarta.resource.spi.InvalidPropertyException e = assertThrows(jakarta.resource.spi.InvalidPropertyException.class,
                () -> fx.mcf.createManagedConnection(null, null));
        assertTrue(e.getMessage().contains("ResourcePrincipal is 1025 bytes") && e.getMessage().contains("shorter"),
                e.getMessage());
    }

    /**
     * Outside embedded mode no witness takes {@code ResourcePrincipal}: the definition's check says so once, and does
     * not fail (a definition moved to a lease server keeps working).
     */
    @Test
    void aResourcePrincipalOutsideEmbeddedModeIsReportedAsUnused() throws Exception {
        LeaseholdManagedConnectionFactory mcf = new LeaseholdManagedConnectionFactory();
        mcf.setBagStoreRoot(AdapterFixture.freshRoot("signing-principal-remote").toString());
        mcf.setLeaseService("remote:127.0.0.1:7420");
        mcf.setResourcePrincipal("orders-service");
        mcf.useMicroProfile(java.util.Map.of());
        List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(new java.util.logging.SimpleFormatter().formatMessage(r));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger(LeaseholdManagedConnectionFactory.class.getName());
        jul.addHandler(capture);
        try {
            mcf.config();
            mcf.config();
            assertEquals("orders-service", mcf.definitionPrincipal());
        } finally {
            jul.removeHandler(capture);
        }
        List<String> unused = logged.stream().filter(m -> m.startsWith("LEASEHOLD-4504")).toList();
        assertEquals(1, unused.size(), "said once: " + logged);
        assertTrue(unused.get(0).contains("remote:127.0.0.1:7420") && unused.get(0).contains("not used"), unused.get(0));
    }

    /**
     * An operator links the next key file of the engine's generated keys (as {@code leasehold keys rotate} does) while
     * the adapter runs: within {@link KeyRotation#CHECK_MICROS} it publishes the key and signs with it, with no
     * restart, and the witnesses of both keys verify.
     */
    @Test
    void anOperatorRotatesTheGeneratedKeyWhileTheAdapterRuns() throws Exception {
        fx = new AdapterFixture("signing-key-rotation", mcf -> { });
        transfer("account/1", "account/2");
        KeyId first = witness(fx.messages().get(0), 0).witness().keyId();
        Path dir = fx.root.resolve(".leasehold").resolve("signing").resolve("ledger").resolve("writer-a");
        SigningKey next = new KeyFiles(new NfsSafeFiles(), dir, "operator", new SecureRandom()).next();
        assertFalse(Files.exists(PublishedKeys.directory(fx.root).resolve(next.id() + ".key")));
        fx.time.advance(Duration.ofSeconds(1));
        transfer("account/2", "account/3");
        assertEquals(first, witness(fx.messages().get(1), 0).witness().keyId(), "not before the next look");
        fx.time.advance(Duration.ofMillis(KeyRotation.CHECK_MICROS / 1_000));
        assertTrue(Files.exists(PublishedKeys.directory(fx.root).resolve(next.id() + ".key")), "published");
        transfer("account/3", "account/4");
        List<Message> written = fx.messages();
        assertEquals(next.id(), witness(written.get(2), 0).witness().keyId(), "the rotated key signs");
        AuditVerifier verifier = new AuditVerifier(PublishedKeys.load(new NfsSafeFiles(),
                PublishedKeys.directory(fx.root)));
        for (Message m : written) {
            assertEquals(List.of(), verifier.check(witness(m, 0)), m.toString());
        }
    }

    @Test
    void aMissingOrWrongKeyFileRefusesTheStartNamingTheFile() throws Exception {
        Path root = AdapterFixture.freshRoot("signing-key-bad");
        Path missing = root.resolve("nope.pem");
        String m = refused(root, missing);
        assertTrue(m.contains("SigningKeyFile " + missing + " does not exist: create one with 'openssl genpkey "
                + "-algorithm ed25519 -out " + missing + "'"), m);

        Path rsa = root.resolve("rsa.pem");
        KeyPairGenerator g = KeyPairGenerator.getInstance("RSA");
        g.initialize(1024);
        Files.writeString(rsa, "-----BEGIN PRIVATE KEY-----\n" + Base64.getMimeEncoder().encodeToString(
                g.generateKeyPair().getPrivate().getEncoded()) + "\n-----END PRIVATE KEY-----\n");
        m = refused(root, rsa);
        assertTrue(m.contains("SigningKeyFile " + rsa + " is not an Ed25519 private key: the PEM block is not an "
                + "Ed25519 private key (RFC 8410 PKCS #8); create one with 'openssl genpkey -algorithm ed25519'"), m);

        Path publicKey = root.resolve("public.pem");
        Files.writeString(publicKey, "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n");
        m = refused(root, publicKey);
        assertTrue(m.contains("SigningKeyFile " + publicKey + " is not an Ed25519 private key: no PEM block "
                + "'PRIVATE KEY' found"), m);

        Path dir = Files.createDirectories(root.resolve("a-directory"));
        m = refused(root, dir);
        assertTrue(m.contains("SigningKeyFile " + dir + " could not be read"), m);
        assertFalse(Files.exists(PublishedKeys.directory(root)), "nothing published by a refused start");
    }

    /** Starts an adapter on {@code root} with {@code keyFile}; its start must fail; returns the message. */
    private static String refused(Path root, Path keyFile) {
        ResourceException e = assertThrows(ResourceException.class, () -> new AdapterFixture(root,
                new org.leasehold.time.ManualTimeSource(AdapterFixture.START),
                mcf -> mcf.setSigningKeyFile(keyFile.toString())).close());
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append(" | ");
        }
        return all.toString();
    }

    /**
     * A witness signed just before the write (a grant taken and written at once, as a transaction's upgrade at prepare
     * is) is its frame's signed time: nothing is attached. A lease held half a second before it writes gets a signed
     * time of the write attached, which the store and a verifier judge the timestamp by.
     */
    @Test
    void aFreshWitnessIsItsFramesSignedTimeAndAnOlderOneGetsTheWritesAttached() throws Exception {
        fx = new AdapterFixture("signed-time-fresh", mcf -> { });
        transfer("account/1", "account/2");
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/3");
            fx.time.advance(Duration.ofMillis(500));
            c.append("held a while".getBytes(StandardCharsets.UTF_8));
        }
        List<Message> written = fx.messages();
        assertEquals(2, written.size());
        FrameWitness fresh = witness(written.get(0), 0);
        assertEquals(null, fresh.time(), "nothing attached to a witness signed at the write: " + fresh);
        assertEquals(fresh.witness().signedTime(), fresh.latestSignedTime());
        FrameWitness held = witness(written.get(1), 0);
        assertTrue(held.time() != null, "a signed time of the write attached: " + held);
        assertTrue(held.latestSignedTime() - held.witness().signedTime() >= 400_000, held.toString());
        for (Message m : written) {
            long off = Math.abs(Micros.of(m.timestamp()) - witness(m, 0).latestSignedTime());
            assertTrue(off < 200_000, m + " lies " + off + " µs from its signed time");
        }
        AuditVerifier v = new AuditVerifier(PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(fx.root)));
        assertEquals(List.of(), v.check(fresh));
        assertEquals(List.of(), v.check(held));
    }

    /**
     * With a bound of 100 ms the adapter asks for a new signed time 50 ms after the last (not 200 ms), so a commit
     * 150 ms after another is accepted, and every frame's timestamp lies within the bound of its signed time.
     */
    @Test
    void theSignedTimeBoundReachesTheStoreAndTheAdapterKeepsToIt() throws Exception {
        fx = new AdapterFixture("signed-time-bound", mcf -> mcf.setSignedTimeBoundMillis(100L));
        FileBagStore store = fx.mcf.runtime().store();
        assertEquals(Duration.ofMillis(100), store.config().signedTimeBound());
        for (int i = 0; i < 4; i++) {
            transfer("account/" + i, "account/" + (i + 1));
            fx.time.advance(Duration.ofMillis(150));
        }
        List<Message> written = fx.messages();
        assertEquals(4, written.size());
        for (Message m : written) {
            long off = Math.abs(Micros.of(m.timestamp()) - witness(m, 0).latestSignedTime());
            assertTrue(off <= 100_000, m + " lies " + off + " µs from its signed time");
        }
    }

    @Test
    void theCompactionIntervalCompactsTheLogInTheBackground() throws Exception {
        // Buckets of a minute and a long ownership heartbeat: the two hours the clock moves cost few timers.
        fx = new AdapterFixture("compaction-interval", mcf -> {
            mcf.setCompactionIntervalMillis(60_000L);
            mcf.setBucketMillis(60_000L);
            mcf.setOwnerTtlMillis(3_600_000L);
        });
        assertEquals(Duration.ofMinutes(1), fx.mcf.runtime().store().config().compactionInterval());
        for (int i = 0; i < 3; i++) {
            transfer("account/" + i, "account/" + (i + 1));
            fx.time.advance(Duration.ofMillis(400));
        }
        Path segments = fx.root.resolve("ledger").resolve("segments");
        // The log's first hour (one segment's span) older than the compaction horizon (an hour): the metronome has
        // sealed it, and the compactor, which runs every minute, merges it.
        compactUntil(Duration.ofMinutes(125), () -> published(segments));
        assertTrue(published(segments), "a segment is published under " + segments);
        assertEquals(3, fx.messages().size(), "read from the segment");
    }

    @Test
    void theCompactionHorizonAndRetentionDelayReachTheStoreAndRetentionRemovesTheCompactedBuckets() throws Exception {
        fx = new AdapterFixture("retention-delay", mcf -> {
            mcf.setCompactionIntervalMillis(60_000L);
            mcf.setCompactionHorizonMillis(600_000L);
            mcf.setRetentionDelayMillis(120_000L);
            mcf.setBucketMillis(60_000L);
            mcf.setOwnerTtlMillis(3_600_000L);
        });
        var config = fx.mcf.runtime().store().config();
        assertEquals(Duration.ofMinutes(10), config.compactionHorizon());
        assertTrue(config.removeCompactedBuckets());
        assertEquals(Duration.ofMinutes(2), config.retentionDelay());
        for (int i = 0; i < 3; i++) {
            transfer("account/" + i, "account/" + (i + 1));
            fx.time.advance(Duration.ofMillis(400));
        }
        Path log = fx.root.resolve("ledger");
        assertFalse(dataFiles(log).isEmpty(), "written into bucket files first");
        // The first hour older than the horizon (ten minutes): compacted; then, two minutes after the segment was
        // first seen published, its buckets' files are removed by the next background compaction.
        compactUntil(Duration.ofMinutes(75), () -> published(log.resolve("segments")) && dataFiles(log).isEmpty());
        assertTrue(published(log.resolve("segments")), "a segment is published");
        assertEquals(List.of(), dataFiles(log), "retention removed the compacted buckets' files");
        assertEquals(3, fx.messages().size(), "read from the segment");
    }

    /** A condition on the store's files. */
    private interface FilesCondition {
        boolean holds() throws Exception;
    }

    /**
     * Moves the clock by {@code first}, then a minute at a time until {@code done} holds: the compaction runs on the
     * store's own worker thread, so this waits for it, bounded by a deadline (the caller asserts the outcome).
     */
    private void compactUntil(Duration first, FilesCondition done) throws Exception {
        fx.time.advance(first);
        fx.context.drain();
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (!done.holds() && System.nanoTime() < deadline) {
            Thread.sleep(20);
            fx.time.advance(Duration.ofMinutes(1));
        }
    }

    private static List<Path> dataFiles(Path log) throws Exception {
        try (Stream<Path> s = Files.walk(log)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".data")).toList();
        }
    }

    private static boolean published(Path segments) throws Exception {
        if (!Files.isDirectory(segments)) {
            return false;
        }
        try (Stream<Path> s = Files.list(segments)) {
            return s.anyMatch(p -> SegmentFile.parseName(p.getFileName().toString()) != null);
        }
    }
}
