package org.leasehold.adapter;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Appended;
import org.leasehold.bag.BagStore;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseService;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Settles units of work with the lease service and the log: makes their leases full with enough time left before
 * they commit, writes their messages as one frame, and releases their leases (with the frame's timestamp as
 * watermark, or none).
 */
final class Settlement {
    /** Logs as the resource manager it is a part of, under the logger operators know. */
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final LeaseService leases;
    private final BagStore store;
    private final TimeSource time;
    private final AdapterMetrics metrics;
    private final ClockCheck clocks;
    private final Units units;
    private final WriteReadiness readiness;
    private final SignedTimes signedTimes;

    Settlement(AdapterConfig config, LeaseService leases, BagStore store, TimeSource time, AdapterMetrics metrics,
            ClockCheck clocks, Units units, WriteReadiness readiness) {
        this.config = config;
        this.leases = leases;
        this.store = store;
        this.time = time;
        this.metrics = metrics;
        this.clocks = clocks;
        this.units = units;
        this.readiness = readiness;
        this.signedTimes = new SignedTimes(leases, time, Micros.of(config.signedTimeBound()));
    }

    /** The unit's lease stamps as its frame stores them: witnesses with a recent signed time attached. */
    List<LeaseStamp> stamps(UnitOfWork u) {
        return signedTimes.attach(u.stamps());
    }

    /** Upgrades every tentative lease of {@code u} and makes sure enough time is left; null if all is well. */
    String upgradeAll(UnitOfWork u) {
        return upgradeAll(u, true);
    }

    /**
     * As {@link #upgradeAll(UnitOfWork)}; if {@code writes}, also asks for the proofs of the witnesses the unit's frames
     * will carry, so that they are signed while the transaction goes on to commit (an upgrade's are queued anyway; a
     * lease taken full, or renewed here, has witnesses signed only when asked).
     */
    private String upgradeAll(UnitOfWork u, boolean writes) {
        String clockProblem = clocks.problem();
        if (clockProblem != null) {
            return clockProblem;
        }
        List<Lease> held = new ArrayList<>(u.leases());
        held.sort(Comparator.comparing(l -> l.grants().get(0).name()));
        for (Lease l : held) {
            try {
                Lease up = l.kind() == LeaseKind.TENTATIVE ? leases.upgrade(l, null) : l;
                u.replace(l, up);
                Duration left = Duration.between(time.now(), up.deadline());
                if (left.compareTo(config.minTimeLeftAtPrepare()) < 0) {
                    Lease renewed = leases.renew(up, time.now().plus(config.maxLease()), null);
                    u.replace(up, renewed);
                    if (Duration.between(time.now(), renewed.deadline()).compareTo(config.minTimeLeftAtPrepare()) < 0) {
                        return "the lease " + renewed.describe() + " ends at " + renewed.deadline() + ", less than "
                                + config.minTimeLeftAtPrepare().toMillis() + " ms away (MinTimeLeftAtPrepareMillis)";
                    }
                }
            } catch (LeaseBrokenException e) {
                return "a tentative lease was broken by an older transaction (" + e.getMessage() + ")";
            } catch (LeaseExpiredException e) {
                return "a lease expired before prepare (" + e.getMessage() + ")";
            } catch (LeaseException e) {
                return "a lease could not be upgraded (" + e.getMessage() + ")";
            }
        }
        if (writes) {
            askProofs(u.leases());
        }
        return null;
    }

    /**
     * Why a unit that writes nothing to the log cannot commit, or null. One that keeps its leases until its transaction
     * completes guards what the transaction writes elsewhere (a database), so its leases become full like a writer's:
     * a lease broken by an older transaction means another may have read or written that state meanwhile.
     */
    String readOnlyProblem(UnitOfWork u) {
        return u.holdsUntilCompletion() ? upgradeAll(u, false) : null;
    }

    /** Asks for the proofs of the witnesses of {@code leases} (nothing waits here). */
    private static void askProofs(List<Lease> leases) {
        for (Lease l : leases) {
            for (LeaseGrant g : l.grants()) {
                if (g.witness() != null && g.witness().unasked()) {
                    g.witness().sealed();
                }
            }
        }
    }

    /** The reason the unit cannot commit any more (a lost or ended lease), or null. */
    String lostOrLate(UnitOfWork u) {
        if (u.lostReason() != null) {
            return u.lostReason();
        }
        Instant deadline = u.earliestDeadline();
        if (deadline != null && !time.now().isBefore(deadline)) {
            return "its lease ended at " + deadline + " before the commit (the server paused or the transaction "
                    + "manager was slow)";
        }
        return null;
    }

    /**
     * Writes the unit's messages as one frame; the frame's timestamp, or null when the unit had no message to write
     * (its leases are then released). The leases of a written unit are the caller's to release.
     */
    Instant write(UnitOfWork u) throws LeaseholdException {
        List<byte[]> payloads = u.payloads();
        if (payloads.isEmpty()) {
            releaseAll(u, null);
            return null;
        }
        readiness.awaitWritable(u);
        Appended a = store.append(new AppendRequest(config.log(), stamps(u), null, payloads));
        u.written(a.timestamp());
        metrics.written(a.messages());
        return a.timestamp();
    }

    /** Writes the unit's messages as one frame and releases its leases with the frame's timestamp. */
    void writeAndRelease(UnitOfWork u) throws LeaseholdException {
        Instant t = write(u);
        if (t != null) {
            releaseAll(u, t);
        }
    }

    /** Releases every lease of {@code u}, with {@code watermark} where it lies within the lease (full leases). */
    void releaseAll(UnitOfWork u, Instant watermark) {
        for (Lease l : u.leases()) {
            Instant wm = watermark != null && l.kind() == LeaseKind.FULL && !watermark.isBefore(l.floor())
                    && watermark.isBefore(l.deadline()) ? watermark : null;
            releaseQuietly(l, wm);
        }
    }

    /** Releases {@code u}'s leases without a watermark and ends it. */
    void abandon(UnitOfWork u) {
        releaseAll(u, null);
        units.finish(u);
    }

    /** Releases {@code l}; a lease already over is not an error, and a service that cannot be reached is logged. */
    void releaseQuietly(Lease l, Instant watermark) {
        try {
            leases.release(l, watermark, watermark == null ? null : "log=" + config.log());
        } catch (LeaseBrokenException | LeaseExpiredException e) {
            // Already over: nothing to release. An expiry after a successful write is harmless (t < deadline).
        } catch (LeaseServiceUnavailableException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4207 could not release {0}: {1}; it expires at {2}",
                    l.describe(), e.getMessage(), l.deadline());
        } catch (LeaseException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4207 could not release {0}: {1}; it expires at {2}",
                    l.describe(), e.getMessage(), l.deadline());
        }
    }
}
