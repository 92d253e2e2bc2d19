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
import org.leasehold.time.TimeSource;

/**
 * Attaches a fresh signed time of the embedded engine to the witnesses of a frame, so that the store (and a verifier)
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
    private final TimeSource time;
    private final long reuseMicros;
    private final SecureRandom random = new SecureRandom();
    private volatile SignedTimeProof latest;
    private volatile long fetchedAt = Long.MIN_VALUE;

    /** @param boundMicros the store's signed-time bound ({@code SignedTimeBoundMillis}) */
    SignedTimes(LeaseService leases, TimeSource time, long boundMicros) {
        this.engine = leases instanceof EmbeddedLeaseService e && e.signer() != null ? e : null;
        this.time = time;
        this.reuseMicros = Math.min(REUSE_MICROS, boundMicros / 2);
    }

    /** {@code stamps} with a recent signed time attached to every witness (the stamps as they are without one). */
    List<LeaseStamp> attach(List<LeaseStamp> stamps) {
        if (engine == null || stamps.isEmpty()) {
            return stamps;
        }
        SignedTimeProof t = current();
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

    private SignedTimeProof current() {
        long now = time.nowMicros();
        SignedTimeProof t = latest;
        if (t != null && now - fetchedAt < reuseMicros && now >= fetchedAt) {
            return t;
        }
        byte[] nonce = new byte[16];
        random.nextBytes(nonce);
        try {
            t = engine.signedTime(nonce).get(1, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return latest;
        } catch (Exception e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4403 no signed time from the embedded lease service: "
                    + e + "; frames carry the signed time of their witnesses only");
            return latest;
        }
        latest = t;
        fetchedAt = now;
        return t;
    }
}
