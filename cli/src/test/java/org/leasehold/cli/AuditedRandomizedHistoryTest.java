package org.leasehold.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.locks.LockSupport;

import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeyFiles;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.ServiceKeys;
import org.leasehold.audit.Witness;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.cli.verify.Finding;
import org.leasehold.cli.verify.LogVerifier;
import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.RandomizedHistoryContract;
import org.leasehold.engine.EmbeddedFixture;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.Lease;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.Micros;

/**
 * The randomized lease history ({@link RandomizedHistoryContract}) against an embedded engine whose witnesses are
 * signed, each acknowledged write stored through the public {@code BagStore} API in a real store under
 * {@code target/} with its leases' witnesses; then the offline verifier proves the whole log, and, after one bit of
 * one stored witness is flipped (with a valid frame checksum, as a forger would), reports that frame with its
 * location.
 */
class AuditedRandomizedHistoryTest extends RandomizedHistoryContract {
    private static final String LOG = "history";
    private static final String SERVICE = "randomized/engine";

    private volatile boolean moving;
    private Thread driver;
    private Path root;
    private ManualTimeSource time;
    private AuditSigner signer;
    private FileBagStore store;
    private EmbeddedFixture fixture;
    /** Every acknowledged write: where it is stored and the witness of its first lease. */
    private final ConcurrentLinkedQueue<Stored> stored = new ConcurrentLinkedQueue<>();

    private record Stored(Appended at, FrameWitness witness) {
    }

    @Override
    protected LeaseFixture startMoving(long seed) {
        try {
            root = TestStore.BASE.resolve("randomized-audit");
            TestStore.deleteTree(root);
            Files.createDirectories(root);
            time = new ManualTimeSource(EmbeddedFixture.START);
            KeyFiles keys = new KeyFiles(new NfsSafeFiles(), root.resolve(".leasehold-test-keys"), "t",
                    new SecureRandom());
            signer = new ServiceKeys(keys, new PublishedKeys(new NfsSafeFiles(), root, "t"), SERVICE)
                    .start(keys.current(), 1_000, time.nowMicros());
            store = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(TestStore.BASE.resolve("writer-locks"))
                    .writerId("w1").metronome(false).maxLeaseDuration(Duration.ofSeconds(1))
                    .grace(Duration.ofMillis(200)).maxClockError(Duration.ofMillis(100)).build(), time);
            store.createLog(LOG);
        } catch (Exception e) {
            throw new IllegalStateException("the audited store could not be set up: " + e, e);
        }
        fixture = new EmbeddedFixture(new LeaseFixture.Settings(Duration.ofSeconds(1), Duration.ofMillis(200),
                Duration.ZERO, 4, 1_000), time, signer);
        moving = true;
        driver = new Thread(() -> {
            while (moving) {
                fixture.advance(Duration.ofMillis(1));
                LockSupport.parkNanos(20_000);
            }
        }, "clock-driver");
        driver.setDaemon(true);
        driver.start();
        return fixture;
    }

    @Override
    protected void stopMoving() {
        moving = false;
        try {
            if (driver != null) {
                driver.join();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Appends one message under the lease's stamps (witnesses included); the store picks the timestamp. */
    @Override
    protected Instant write(LeaseFixture f, Lease lease, Instant chosen) throws Exception {
        List<LeaseStamp> stamps = LeaseStamp.of(lease);
        try {
            Appended a = store.append(AppendRequest.of(LOG, stamps, ("by " + lease.holder() + " at " + chosen)
                    .getBytes(StandardCharsets.UTF_8)));
            stored.add(new Stored(a, FrameWitness.decode(stamps.get(0).witness())));
            return a.timestamp();
        } catch (BagStoreException e) {
            // Refused (the clock moved past the lease while the write was on its way): not acknowledged.
            return null;
        }
    }

    @Override
    protected void afterHistory(long seed) throws Exception {
        signer.close();
        store.close();
        KeySet keys = PublishedKeys.load(new NfsSafeFiles(), PublishedKeys.directory(root));
        List<Finding> clean = verify(keys);
        assertTrue(stored.size() > 0, "the history stored writes");
        assertEquals(List.of(), clean, "seed " + seed + ": the log of " + stored.size() + " acknowledged writes");

        // One bit of one stored witness: the lowest bit of its deadline, in a frame whose lease wrote another frame
        // too (so the grant chain keeps a valid copy of the witness and the one damaged frame is all there is).
        Map<String, Integer> frames = new HashMap<>();
        for (Stored s : stored) {
            frames.merge(key(s.witness().witness()), 1, Integer::sum);
        }
        List<Stored> candidates = new ArrayList<>();
        for (Stored s : stored) {
            if (frames.get(key(s.witness().witness())) > 1) {
                candidates.add(s);
            }
        }
        assertTrue(candidates.size() > 0, "a lease wrote two frames");
        Stored hit = candidates.get(new Random(seed).nextInt(candidates.size()));
        Witness w = hit.witness().witness();
        byte[] was = hit.witness().witnessBytes();
        byte[] now = was.clone();
        int deadlineLow = 22 + 2 + w.serviceId().length() + 2 + w.name().length() + 8 + 1 + 4 + 1 + 8 + 8 + 7;
        now[deadlineLow] ^= 1;
        AuditedStore.replace(AuditedStore.file(root, hit.at()), hit.at(), was, now);
        List<Finding> damaged = verify(keys);
        assertEquals(1, damaged.size(), "seed " + seed + ": " + damaged);
        Finding f = damaged.get(0);
        assertEquals(Finding.Kind.BAD_SIGNATURE, f.kind(), f.toString());
        assertEquals(LOG, f.log());
        assertEquals(Micros.of(hit.at().bucket()), f.bucket(), f.toString());
        assertTrue(f.file().endsWith("/" + hit.at().file()), f.toString());
        assertEquals(hit.at().offset(), f.offset(), f.toString());
        assertEquals(w.name(), f.name(), f.toString());
        System.out.println("randomized audited history: " + stored.size() + " writes verified; the flipped bit "
                + "reported at " + f.location());
    }

    private static String key(Witness w) {
        return w.name() + "#" + w.generation() + "#" + w.event() + "#" + w.signedTime();
    }

    /** Every finding of the offline verifier on the log. */
    private List<Finding> verify(KeySet keys) throws Exception {
        List<Finding> out = new ArrayList<>();
        LogVerifier v = new LogVerifier(new LogVerifier.Options(keys, Micros.of(Duration.ofSeconds(1)), true),
                out::add, null);
        v.verifyLog(root, LOG);
        v.finish();
        assertEquals(stored.size(), v.count(LogVerifier.Counter.MESSAGES), "every acknowledged write read back");
        return out;
    }
}
