package org.leasehold.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.leasehold.store.StoreFixture.T0;
import static org.leasehold.store.StoreFixture.config;
import static org.leasehold.store.StoreFixture.freshDir;
import static org.leasehold.store.StoreFixture.readAll;
import static org.leasehold.store.StoreFixture.req;

import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.AuditVerifier;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.KeySet;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.bag.InvalidAppendException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.TimestampOutOfRangeException;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.ManualTimeSource;

/**
 * The store refuses a frame whose timestamp lies further than {@code signedTimeBound} from the signed time its
 * witnesses carry: a writer whose clock is off from the lease service's by 700 ms writes, by 2 s it is refused with
 * a clear error, both ways. The lease service and the writer run on their own clocks.
 */
class SignedTimeBoundTest {
    private final SigningKey key = SigningKey.generate(new SecureRandom());
    private final AuditSigner signer = new AuditSigner(key, "svc-s", 500_000, 100, 64);
    private final ManualTimeSource serviceClock = new ManualTimeSource(T0);
    private final EmbeddedLeaseService engine = new EmbeddedLeaseService(EngineConfig.defaults().withServiceId("svc-s")
            .withQuietPeriod(Duration.ZERO), serviceClock, null, signer);

    @AfterEach
    void close() {
        engine.close();
        signer.close();
    }

    /** The stamps of {@code lease} with a signed time taken now on the service's clock attached, as the adapter does. */
    private List<LeaseStamp> freshStamps(Lease lease) throws Exception {
        SignedTimeProof t = engine.signedTime(new byte[] {7}).get(10, TimeUnit.SECONDS);
        List<LeaseStamp> out = new ArrayList<>();
        for (LeaseStamp s : LeaseStamp.of(lease)) {
            out.add(new LeaseStamp(s.name(), s.generation(), s.floor(), s.deadline(), s.writableFrom(),
                    s.predecessorExpiredAt(), FrameWitness.decode(s.witness()).withTime(t.time(), t.proof()).encode()));
        }
        return out;
    }

    /** Appends under a fresh lease from a writer whose clock is {@code skew} off; null if accepted. */
    private TimestampOutOfRangeException append(Path root, long skewMillis, int i) throws Exception {
        ManualTimeSource writerClock = new ManualTimeSource(serviceClock.now().plusMillis(skewMillis));
        Lease lease = engine.acquire(LeaseRequest.builder(new HolderId("w", "t" + i), "acct/" + i).build());
        if (skewMillis < 0) {
            // A slow writer waits until its clock reaches writableFrom; the service's clock moves on meanwhile.
            serviceClock.advance(Duration.ofMillis(-skewMillis + 1));
            writerClock.advance(Duration.ofMillis(-skewMillis + 1));
        }
        try (FileBagStore store = FileBagStore.open(config(root).build(), writerClock)) {
            store.createLog("log");
            store.append(req("log", freshStamps(lease), "m" + i));
            return null;
        } catch (TimestampOutOfRangeException e) {
            return e;
        } finally {
            serviceClock.advance(Duration.ofMillis(10));
        }
    }

    @Test
    void writersWithin700MsWriteAndWritersTwoSecondsOffAreRefusedBothWays() throws Exception {
        Path root = freshDir("signed-time-bound");
        assertEquals(null, append(root, 700, 1));
        assertEquals(null, append(root, -700, 2));
        for (long skew : new long[] {2_000, -2_000}) {
            TimestampOutOfRangeException e = append(root, skew, skew > 0 ? 3 : 4);
            assertTrue(e != null, "skew " + skew + " was accepted");
            assertEquals(TimestampOutOfRangeException.Reason.FAR_FROM_SIGNED_TIME, e.reason());
            assertTrue(e.getMessage().contains("signedTimeBound") && e.getMessage().contains("nothing was written")
                    && e.getMessage().contains(skew > 0 ? "after" : "before"), e.getMessage());
        }
        // What was written carries its witnesses; they verify.
        try (FileBagStore store = FileBagStore.open(config(root).build(), serviceClock)) {
            List<Message> all = readAll(store, ReadRequest.all("log"));
            assertEquals(2, all.size());
            AuditVerifier v = new AuditVerifier(KeySet.of(new PublishedKey(key.publicKey(), "svc-s", 0,
                    Long.MAX_VALUE, Long.MAX_VALUE)));
            for (Message m : all) {
                FrameWitness fw = FrameWitness.decode(m.leases().get(0).witness());
                assertEquals(m.leases().get(0).name(), fw.witness().name());
                assertEquals(List.of(), v.check(fw));
                assertTrue(fw.time() != null);
            }
        }
    }

    @Test
    void theBoundIsAPropertyAndAWitnessOfAnotherLeaseIsRefused() throws Exception {
        Path root = freshDir("signed-time-bound-2");
        ManualTimeSource writerClock = new ManualTimeSource(T0.plusMillis(1_500));
        Lease a = engine.acquire(LeaseRequest.builder(new HolderId("w", "a"), "acct/a").build());
        Lease b = engine.acquire(LeaseRequest.builder(new HolderId("w", "b"), "acct/b").build());
        try (FileBagStore wide = FileBagStore.open(config(root).signedTimeBound(Duration.ofSeconds(2)).build(),
                writerClock)) {
            wide.createLog("log");
            wide.append(req("log", LeaseStamp.of(a), "1.5 s off, bound 2 s"));
            LeaseStamp sa = LeaseStamp.of(a).get(0);
            LeaseStamp swapped = new LeaseStamp(sa.name(), sa.generation(), sa.floor(), sa.deadline(),
                    sa.writableFrom(), null, LeaseStamp.of(b).get(0).witness());
            InvalidAppendException e = assertThrows(InvalidAppendException.class, () -> wide.append(req("log",
                    List.of(swapped), "x")));
            assertTrue(e.getMessage().contains("is the witness of 'acct/b'"), e.getMessage());
            LeaseStamp garbage = new LeaseStamp(sa.name(), sa.generation(), sa.floor(), sa.deadline(),
                    sa.writableFrom(), null, new byte[] {1, 2, 3});
            assertTrue(assertThrows(InvalidAppendException.class, () -> wide.append(req("log", List.of(garbage), "x")))
                    .getMessage().contains("is not a frame witness"));
        }
        try (FileBagStore strict = FileBagStore.open(config(root).build(), writerClock)) {
            assertEquals(TimestampOutOfRangeException.Reason.FAR_FROM_SIGNED_TIME, assertThrows(
                    TimestampOutOfRangeException.class, () -> strict.append(req("log", LeaseStamp.of(a), "x")))
                    .reason());
        }
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> config(root).signedTimeBound(Duration.ZERO).build());
        assertTrue(bad.getMessage().contains("signedTimeBound"), bad.getMessage());
        assertThrows(IllegalArgumentException.class, () -> config(root).signedTimeBound(Duration.ofHours(2)).build());
    }
}
