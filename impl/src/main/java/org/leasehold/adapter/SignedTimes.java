package org.leasehold.adapter;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import org.leasehold.audit.AuditFormatException;
import org.leasehold.audit.FrameWitness;
import org.leasehold.audit.SignedTimeProof;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.lease.LeaseService;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.TimeSource;

/**
 * Attaches a fresh signed time to the witnesses of a frame, each witness's from its own lease service (the embedded
 * engine, or in remote mode the lease server its name belongs to), so that the store (and a verifier) can compare the
 * frame's timestamp with that service's time at the write, not only at the grant or the last renewal: a lease's floor
 * and deadline are read on its own service's clock, and a verifier that holds one service's keys checks its witnesses
 * whole. One signed time per service serves every commit for {@link #REUSE_MICROS}, or half the store's signed-time
 * bound if that is less (so that a reused signed time is never what pushes a commit beyond the bound); then the next
 * commit asks for a new one (one signature: a waited-for time request is signed without the batch's linger). A
 * witness whose service signs no time, or answers with another service's, keeps the signed time of its grant only.
 *
 * <p>A witness whose own signed time is as recent as that (its grant, renewal or upgrade lies within the reuse period
 * of this process's clock, as a transaction's upgrade at prepare does) needs nothing attached: the frame keeps it as
 * it is, with no time asked for, no decoding and no re-encoding, and a frame witness about 30 % shorter. Nor is a signed
 * time older than the witness's own attached: it would not change the frame's latest signed time.
 */
final class SignedTimes {
    private static final System.Logger LOG = System.getLogger(SignedTimes.class.getName());
    /** How long one signed time is attached to commits, by this process's clock. */
    static final long REUSE_MICROS = 200_000;

    /** A signed time and when (this process's clock) it was fetched. */
    private record Fetched(SignedTimeProof proof, long at) {
    }

    private final EmbeddedLeaseService engine;
    private final RemoteLeaseService remote;
    private final TimeSource time;
    private final long reuseMicros;
    private final SecureRandom random = new SecureRandom();
    /** The latest signed time of each service, by service id. */
    private final Map<String, Fetched> latest = new ConcurrentHashMap<>();

    /** @param boundMicros the store's signed-time bound ({@code SignedTimeBoundMillis}) */
    SignedTimes(LeaseService leases, TimeSource time, long boundMicros) {
        this.engine = leases instanceof EmbeddedLeaseService e && e.signer() != null ? e : null;
        this.remote = leases instanceof RemoteLeaseService r ? r : null;
        this.time = time;
        this.reuseMicros = Math.min(REUSE_MICROS, boundMicros / 2);
    }

    /** {@code stamps} with a recent signed time of its own service attached to every witness. */
    List<LeaseStamp> attach(List<LeaseStamp> stamps) {
        if ((engine == null && remote == null) || stamps.isEmpty() || !witnessed(stamps)) {
            return stamps;
        }
        List<LeaseStamp> out = new ArrayList<>(stamps.size());
        for (LeaseStamp s : stamps) {
            if (s.witnessLength() == 0) {
                out.add(s);
                continue;
            }
            try {
                byte[] bytes = s.witness();
                if (Math.abs(time.nowMicros() - FrameWitness.summarize(bytes).latestSignedTime()) < reuseMicros) {
                    out.add(s);
                    continue;
                }
                FrameWitness fw = FrameWitness.decode(bytes);
                SignedTimeProof t = current(fw.witness().serviceId(), s.name());
                if (t == null || t.time().midpoint() <= fw.latestSignedTime()) {
                    out.add(s);
                    continue;
                }
                byte[] w = fw.withTime(t.time(), t.proof()).encode();
                out.add(new LeaseStamp(s.name(), s.generation(), s.floor(), s.deadline(), s.writableFrom(),
                        s.predecessorExpiredAt(), w));
            } catch (AuditFormatException e) {
                out.add(s);
            }
        }
        return out;
    }

    private static boolean witnessed(List<LeaseStamp> stamps) {
        for (LeaseStamp s : stamps) {
            if (s.witnessLength() > 0) {
                return true;
            }
        }
        return false;
    }

    /** A recent signed time of {@code service}, asked of the service {@code name} belongs to; null if none. */
    private SignedTimeProof current(String service, String name) {
        long now = time.nowMicros();
        Fetched f = latest.get(service);
        if (f != null && now - f.at < reuseMicros && now >= f.at) {
            return f.proof;
        }
        SignedTimeProof older = f == null ? null : f.proof;
        byte[] nonce = new byte[16];
        random.nextBytes(nonce);
        SignedTimeProof t;
        try {
            t = engine != null ? engine.signedTime(nonce).get(1, TimeUnit.SECONDS) : remote.signedTime(name, nonce);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return older;
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4403 no signed time from the lease service: "
                    + e + "; frames carry the signed time of their witnesses only");
            return older;
        }
        if (!t.time().serviceId().equals(service)) {
            // The service behind the name answers as another (it changed key since the grant): its time would not
            // be this witness's service's.
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-4404 the lease service of ''{0}'' answered the time request "
                    + "as ''{1}'', not as its witness''s ''{2}''; the frame carries the signed time of the witness only",
                    name, t.time().serviceId(), service);
            latest.put(t.time().serviceId(), new Fetched(t, now));
            return null;
        }
        latest.put(service, new Fetched(t, now));
        return t;
    }
}
