package org.leasehold.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.audit.AuditSigner;
import org.leasehold.audit.Witness;
import org.leasehold.audit.WitnessEvent;
import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.GrantWitness;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.Predecessor;
import org.leasehold.time.Micros;

/**
 * Gives every lease the engine hands out its witnesses: one {@link Witness} per name, stamped with the engine's time
 * as signed time. Nothing waits for the signature; each grant's {@link GrantWitness} completes when its batch is
 * signed. An upgrade's witnesses are queued for the next signed batch at once, and hurry it (they are written within
 * the transaction's commit); a grant's, renewal's or reinstatement's only once somebody asks for the proof (a writer
 * stamping a message, a client asking the lease server), since most leases end with no message written under them.
 * Called with no lock held.
 */
final class Witnesses {
    private final AuditSigner signer;

    /** Witnesses signed by {@code signer}, or none if it is null. */
    Witnesses(AuditSigner signer) {
        this.signer = signer;
    }

    boolean signing() {
        return signer != null;
    }

    /**
     * {@code lease} with a fresh witness on every grant, for {@code event} at {@code signedAt} (micros), naming
     * {@code principal} (null: none known); the lease itself if the engine signs nothing (or {@code lease} is null).
     */
    Lease stamp(Lease lease, String principal, WitnessEvent event, long signedAt) {
        if (signer == null || lease == null) {
            return lease;
        }
        List<LeaseGrant> grants = lease.grants();
        List<LeaseGrant> out = new ArrayList<>(grants.size());
        for (LeaseGrant g : grants) {
            out.add(g.withWitness(witness(lease, g, principal, event, signedAt)));
        }
        if (event == WitnessEvent.UPGRADE) {
            // A transaction upgrades its leases at prepare to write under them at once: their frame witnesses are
            // waited for within the commit, so the batch is signed without its linger.
            signer.hurry();
        }
        return new Lease(lease.holder(), lease.mode(), lease.kind(), lease.grantedAt(), lease.deadline(), out);
    }

    private GrantWitness witness(Lease lease, LeaseGrant g, String principal, WitnessEvent event, long signedAt) {
        Predecessor p = g.predecessor();
        CorrelationId predId = p == null ? CorrelationId.NONE : p.correlationId();
        Ending ending = p == null ? Ending.UNKNOWN : p.ending();
        long endedAt = p == null || p.endedAt() == null ? Long.MIN_VALUE : Micros.of(p.endedAt());
        long watermark = p == null || p.watermark() == null ? Long.MIN_VALUE : Micros.of(p.watermark());
        // The watermark is published with the release, so the service's time of the release is its signed time.
        long watermarkAt = watermark == Long.MIN_VALUE ? Long.MIN_VALUE : endedAt;
        Witness w = new Witness(event, signer.serviceId(), signer.keyId(), g.name(), g.generation(), lease.mode(),
                lease.kind(), micros(g.floor()), micros(g.writableFrom()), micros(lease.deadline()),
                micros(lease.grantedAt()), signedAt, signer.radius(), g.correlationId() == null ? CorrelationId.NONE
                        : g.correlationId(), predId, ending, endedAt, watermark, watermarkAt, lease.holder(),
                principal);
        return signer.grantWitness(w, w.encode(), event == WitnessEvent.UPGRADE);
    }

    private static long micros(Instant i) {
        return i == null ? Long.MIN_VALUE : Micros.of(i);
    }
}
