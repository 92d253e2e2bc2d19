package org.leasehold.engine;

import java.time.Instant;

import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Finds the live holding a lease value stands for (to renew, upgrade, hold or release it), or says what became of
 * it: expired, broken, released, re-taken, or never granted here.
 *
 * <p>Callers hold the locks of all the lease's shards.
 */
final class Holders {
    private final TimeSource time;
    private final Stripes stripes;
    private final String serviceId;

    Holders(TimeSource time, Stripes stripes, String serviceId) {
        this.time = time;
        this.stripes = stripes;
        this.serviceId = serviceId;
    }

    /** Finds the live holding of {@code lease}, or throws what became of it. Callers hold all its shards' locks. */
    Holding find(Lease lease, long now) throws LeaseException {
        Holding found = null;
        for (LeaseGrant g : lease.grants()) {
            NameState st = stripes.existing(g.name());
            Holding h = null;
            if (st != null) {
                for (Holding x : st.holders) {
                    if (x.generations[x.indexOf(g.name())] == g.generation()) {
                        h = x;
                        break;
                    }
                }
            }
            if (h == null) {
                throw gone(lease, g, st);
            }
            if (!h.holder.equals(lease.holder())) {
                throw new StaleLeaseException("'" + LeaseNames.printable(g.name()) + "' generation " + g.generation()
                        + " is held by " + h.holder + ", not by " + lease.holder()
                        + ": only the holder may renew, upgrade or release it");
            }
            if (found == null) {
                found = h;
            } else if (found != h) {
                throw new StaleLeaseException("the lease value mixes grants of different leases (" + lease.describe()
                        + "): pass the value the service returned");
            }
        }
        if (found == null) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        int status = found.status();
        if (status == Holding.BROKEN) {
            throw new LeaseBrokenException(found.names[0], lease.describe() + " was broken at "
                    + Micros.toInstant(found.endedAt) + " by an older requester: nothing may be written under it; "
                    + "roll back and start over");
        }
        if (status == Holding.RETAKEN) {
            throw new StaleLeaseException(lease.describe() + " was taken again by the same identity at "
                    + Micros.toInstant(found.endedAt) + ": use the newer lease");
        }
        if (found.deadline <= now) {
            throw expired(lease, found.deadline, now);
        }
        return found;
    }

    private LeaseException gone(Lease lease, LeaseGrant g, NameState st) {
        MetadataEntry e = st == null ? null : st.endingOf(g.generation());
        String what = "'" + LeaseNames.printable(g.name()) + "' generation " + g.generation();
        if (e == null) {
            long now = time.nowMicros();
            if (lease.deadline() != null && Micros.of(lease.deadline()) <= now) {
                // The name's bounded history no longer says how this grant ended, but its deadline has passed: to the
                // caller it is expired (the contract's answer after the deadline), whatever else became of it.
                return expired(lease, Micros.of(lease.deadline()), now);
            }
            return new StaleLeaseException(what + " is not a current grant of this service (" + serviceId
                    + "): it was released or replaced long ago, or never granted here");
        }
        return switch (e.ending()) {
            case EXPIRED -> expired(lease, Micros.of(e.at()), time.nowMicros());
            case BROKEN -> new LeaseBrokenException(g.name(), lease.describe() + " was broken at " + e.at()
                    + " by an older requester: nothing may be written under it; roll back and start over");
            case RELINQUISHED -> new StaleLeaseException(what + " was already released at " + e.at()
                    + ": a lease is released once");
            case RETAKEN -> new StaleLeaseException(what + " was taken again by the same identity at " + e.at()
                    + ": use the newer lease");
            default -> new StaleLeaseException(what + " is not a current grant of this service");
        };
    }

    private static LeaseExpiredException expired(Lease lease, long deadline, long now) {
        Instant d = Micros.toInstant(deadline);
        return new LeaseExpiredException(d, lease.describe() + " expired at " + d
                + " (service time now " + Micros.toInstant(now) + "): the next holder treats it as expired; "
                + "nothing may be written or released under it; renew earlier (about every third of the lease time)");
    }
}
