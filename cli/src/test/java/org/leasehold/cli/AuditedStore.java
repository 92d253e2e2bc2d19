package org.leasehold.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.PublishedKey;
import org.leasehold.audit.PublishedKeys;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.audit.SigningKey;
import org.leasehold.audit.Witness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.fs.NfsSafeFiles;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;

/**
 * A real store ({@link TestStore}) whose leases come from a real embedded lease engine on the same manual clock, each
 * grant's witness signed in a Merkle batch by a real {@link AuditSigner}, the witnesses written into the frames through
 * the public {@code BagStore} API, and the signer's key published under the store root as {@code leasehold verify}
 * reads it. Also the tools to damage a stored frame as a forger or a bug would (with a valid frame checksum, so the
 * damage reaches the witness checks).
 */
final class AuditedStore implements AutoCloseable {
    static final String SERVICE = "svc-a";
    static final String LOG = "orders";

    final TestStore store;
    final EmbeddedLeaseService engine;
    final SigningKey key = SigningKey.generate(new SecureRandom());
    final AuditSigner signer;

    AuditedStore(String name) throws Exception {
        this(name, Duration.ofSeconds(1));
    }

    /** A store whose writer allows {@code storeBound} between a timestamp and its signed time. */
    AuditedStore(String name, Duration storeBound) throws Exception {
        store = new TestStore(name, storeBound);
        engine = new EmbeddedLeaseService(EngineConfig.defaults().withServiceId(SERVICE)
                .withMaxLeaseDuration(Duration.ofSeconds(60)).withQuietPeriod(Duration.ZERO), store.clock);
        // A linger of 20 ms so that the statements signed together share a batch (and a Merkle path).
        signer = new AuditSigner(key, SERVICE, 1_000, 20_000, 64);
        publish(key, Long.MIN_VALUE + 1, Long.MAX_VALUE);
    }

    Path root() {
        return store.root;
    }

    Instant now() {
        return store.clock.now();
    }

    void advance(Duration d) {
        store.clock.advance(d);
    }

    /** Publishes {@code k} for {@link #SERVICE} under the store root. */
    void publish(SigningKey k, long validFrom, long validUntil) throws IOException, AuditFormatException {
        new PublishedKeys(new NfsSafeFiles(), root(), "test").publish(new PublishedKey(k.publicKey(), SERVICE,
                validFrom, validUntil, Long.MAX_VALUE));
    }

    /** Publishes the revocation of {@code k} from {@code at}. */
    void revoke(SigningKey k, Instant at) throws IOException {
        new PublishedKeys(new NfsSafeFiles(), root(), "test").revoke(k.id(), Micros.of(at), "revoked by the test");
    }

    /** An exclusive full lease on {@code names} for {@code holder}, for {@code time}. */
    Lease acquire(String holder, Duration time, String... names) throws Exception {
        return engine.acquire(LeaseRequest.builder(new HolderId(holder, "t"), names).leaseFor(time).build());
    }

    /** Releases {@code lease} with {@code watermark}. */
    void release(Lease lease, Instant watermark) throws Exception {
        engine.release(lease, watermark, null);
    }

    /** The witness a lease service states for grant {@code g} of {@code lease}, signed at the clock's time. */
    Witness witness(Lease lease, LeaseGrant g) {
        Predecessor p = g.predecessor();
        CorrelationId pred = p == null ? CorrelationId.NONE : p.correlationId();
        Ending ending = p == null ? Ending.UNKNOWN : p.ending();
        long endedAt = p == null || p.endedAt() == null ? Long.MIN_VALUE : Micros.of(p.endedAt());
        long wm = p == null || p.watermark() == null ? Long.MIN_VALUE : Micros.of(p.watermark());
        return new Witness(WitnessEvent.GRANT, SERVICE, key.id(), g.name(), g.generation(), lease.mode(), lease.kind(),
                Micros.of(g.floor()), Micros.of(g.writableFrom()), Micros.of(lease.deadline()),
                Micros.of(lease.grantedAt()), Micros.of(now()), 1_000, g.correlationId(), pred, ending, endedAt, wm,
                wm == Long.MIN_VALUE ? Long.MIN_VALUE : endedAt, lease.holder(), null);
    }

    /**
     * Signs {@code w} with {@code by} in one batch with three time answers (so its Merkle path has two hashes), and
     * returns the frame witness.
     */
    static FrameWitness sign(AuditSigner by, Witness w, Instant now) {
        CompletableFuture<FrameWitness> f = by.sign(w);
        List<CompletableFuture<SignedTimeProof>> others = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            others.add(by.signTime(new byte[] {(byte) i}, Micros.of(now)));
        }
        others.forEach(CompletableFuture::join);
        return f.join();
    }

    /** The stamps of {@code lease}, each with its grant's witness signed now. */
    List<LeaseStamp> stamps(Lease lease) {
        List<LeaseStamp> out = new ArrayList<>();
        List<LeaseStamp> plain = LeaseStamp.of(lease);
        for (int i = 0; i < plain.size(); i++) {
            FrameWitness fw = sign(signer, witness(lease, lease.grants().get(i)), now());
            out.add(withWitness(plain.get(i), fw.encode()));
        }
        return out;
    }

    static LeaseStamp withWitness(LeaseStamp s, byte[] witness) {
        return new LeaseStamp(s.name(), s.generation(), s.floor(), s.deadline(), s.writableFrom(),
                s.predecessorExpiredAt(), witness);
    }

    /** The first witness field of {@code stamps}, decoded. */
    static FrameWitness witnessOf(List<LeaseStamp> stamps) throws Exception {
        return FrameWitness.decode(stamps.get(0).witness());
    }

    Appended append(List<LeaseStamp> stamps, String... payloads) throws Exception {
        return store.append(LOG, stamps, payloads);
    }

    /** The data file of {@code a}. */
    Path file(Appended a) {
        return file(root(), a);
    }

    /** The data file of {@code a} in the store at {@code root}. */
    static Path file(Path root, Appended a) {
        Path dir = root.resolve(a.log());
        Instant b = a.bucket();
        java.time.LocalDateTime t = java.time.LocalDateTime.ofEpochSecond(b.getEpochSecond(), 0,
                java.time.ZoneOffset.UTC);
        return dir.resolve(String.format("%04d/%02d/%02d/%02d/%02d/%02d.%06d", t.getYear(), t.getMonthValue(),
                t.getDayOfMonth(), t.getHour(), t.getMinute(), t.getSecond(), b.getNano() / 1000)).resolve(a.file());
    }

    /** The path of {@code a}'s data file as the verifier reports it (relative to the log's directory). */
    String relative(Appended a) {
        return root().resolve(a.log()).relativize(file(a)).toString().replace('\\', '/');
    }

    /**
     * Flips bit {@code bit} of the byte at {@code index} of {@code inFrame} (bytes the frame holds, found in it) of
     * the frame of {@code a}, and rewrites the frame's checksum, as a forger would.
     */
    void flip(Appended a, byte[] inFrame, int index, int bit) throws IOException {
        byte[] now = inFrame.clone();
        now[index] ^= (byte) (1 << bit);
        replace(a, inFrame, now);
    }

    /**
     * Replaces {@code was} (bytes the frame of {@code a} holds) with {@code now}, of the same length, and rewrites the
     * frame's checksum, as a forger would: what the store's own checks would refuse at append.
     */
    void replace(Appended a, byte[] was, byte[] now) throws IOException {
        if (was.length != now.length) {
            throw new AssertionError("a forgery in place needs bytes of the same length: " + was.length + " and "
                    + now.length);
        }
        replace(file(a), a, was, now);
    }

    /**
     * Replaces {@code was} with {@code now} in the frame of {@code a} in data file {@code f}, and rewrites the frame's
     * checksum.
     */
    static void replace(Path f, Appended a, byte[] was, byte[] now) throws IOException {
        if (was.length != now.length) {
            throw new AssertionError("a forgery in place needs bytes of the same length");
        }
        byte[] all = Files.readAllBytes(f);
        int at = find(all, (int) a.offset(), a.length(), was);
        if (at < 0) {
            throw new AssertionError("the frame at " + a.offset() + " does not hold the bytes to damage");
        }
        System.arraycopy(now, 0, all, at, now.length);
        int o = (int) a.offset();
        CRC32C crc = new CRC32C();
        crc.update(all, o, 12);
        crc.update(all, o + 16, a.length() - 16);
        int c = (int) crc.getValue();
        all[o + 12] = (byte) (c >>> 24);
        all[o + 13] = (byte) (c >>> 16);
        all[o + 14] = (byte) (c >>> 8);
        all[o + 15] = (byte) c;
        f.toFile().setWritable(true);
        Files.write(f, all);
    }

    private static int find(byte[] all, int from, int length, byte[] what) {
        outer:
        for (int i = from; i + what.length <= from + length; i++) {
            for (int k = 0; k < what.length; k++) {
                if (all[i + k] != what[k]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** Runs {@code leasehold verify --store <root>} with {@code args}. */
    CliRun verify(String... args) {
        List<String> a = new ArrayList<>(List.of("verify", "--store", root().toString()));
        a.addAll(List.of(args));
        return CliRun.of(store.clock, a.toArray(new String[0]));
    }

    @Override
    public void close() {
        signer.close();
        engine.close();
        store.close();
    }
}
