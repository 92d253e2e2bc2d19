package org.leasehold.adapter;

import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
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
 * Attaches a fresh signed time of the lease service (the embedded engine, or the lease server of the frame's first
 * lease in remote mode) to the witnesses of a frame, so that the store (and a verifier)
 * can compare the frame's timestamp with the lease service's time at the write, not only at the grant or the last
 * renewal. One signed time serves every commit for {@link #REUSE_MICROS}, or half the store's signed-time bound if that
 * is less (so that a reused signed time is never what pushes a commit beyond the bound); then the next commit asks for
 * a new one (a batch's linger, a few hundred microseconds). Nothing happens when the lease service signs nothing.
 */
final class SignedTimes {
    private static final System.Logger LOG = System.getLogger(SignedTimes.class.getName());
    /** How long one signed time is attached to commits, by this process's clock. */
    static final long REUSE_MICROS = 200_000;

    private final EmbeddedLeaseService engine;
    private final RemoteLeaseService remote;
    private final TimeSource time;
    private final long reuseMicros;
    private final SecureRandom random = new SecureRandom();
    private volatile SignedTimeProof latest;
    private volatile long fetchedAt = Long.MIN_VALUE;

    /** @param boundMicros the store's signed-time bound ({@code SignedTimeBoundMillis}) */
    SignedTimes(LeaseService leases, TimeSource time, long boundMicros) {
        this.engine = leases instanceof EmbeddedLeaseService e && e.signer() != null ? e : null;
        this.remote = leases instanceof RemoteLeaseService r ? r : null;
        this.time = time;
        this.reuseMicros = Math.min(REUSE_MICROS, boundMicros / 2);
    }

    /** {@code stamps} with a recent signed time attached to every witness (the stamps as they are without one). */
    List<LeaseStamp> attach(List<LeaseStamp> stamps) {
        if ((engine == null && remote == null) || stamps.isEmpty() || !witnessed(stamps)) {
            return stamps;
        }
        SignedTimeProof t = current(stamps.get(0).name());
        if (t == null) {
            return stamps;
        }
        List<LeaseStamp> out = new ArrayList<>(stamps.size());
        for (LeaseStamp s : stamps) {
            if (s.witnessLength() == 0) {
                out.add(s);
                continue;
            }
            try {
                byte[] w = FrameWitness.decode(s.witness()).withTime(t.time(), t.proof()).encode();
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

    private SignedTimeProof current(String name) {
        long now = time.nowMicros();
        SignedTimeProof t = latest;
        if (t != null && now - fetchedAt < reuseMicros && now >= fetchedAt) {
            return t;
        }
        byte[] nonce = new byte[16];
        random.nextBytes(nonce);
        try {
            t = engine != null ? engine.signedTime(nonce).get(1, TimeUnit.SECONDS) : remote.signedTime(name, nonce);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return latest;
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4403 no signed time from the lease service: "
                    + e + "; frames carry the signed time of their witnesses only");
            return latest;
        }
        latest = t;
        fetchedAt = now;
        return t;
    }
}
