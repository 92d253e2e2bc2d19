package org.leasehold.adapter;

import java.time.Instant;

import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.TransactionSynchronizationRegistry;

import org.leasehold.lease.LeaseLostException;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * Holds the leases of a transaction branch until its whole JTA transaction has completed (every other resource's
 * branch included), or until {@code InDoubtHoldMillis} have passed, and releases them then.
 */
final class Completion {
    /** Logs as the resource manager it is a part of, under the logger operators know. */
    private static final System.Logger LOG = System.getLogger(ResourceManager.class.getName());

    private final AdapterConfig config;
    private final TimeSource time;
    private final Units units;
    private final Settlement settlement;

    Completion(AdapterConfig config, TimeSource time, Units units, Settlement settlement) {
        this.config = config;
        this.time = time;
        this.units = units;
        this.settlement = settlement;
    }

    /**
     * Ties the leases of {@code u}, a branch of the JTA transaction running on this thread, to the end of that whole
     * transaction: an interposed synchronization checks the leases before the two phases begin and releases them
     * after the transaction completed (every resource's branch), so no other holder takes a name while another
     * resource of the transaction, a database say, may still be committing what was done under it. Done once per
     * unit; without a registry (outside a container) or a transaction to register with, leases end with the branch.
     */
    void holdUntilCompletion(UnitOfWork u, TransactionSynchronizationRegistry tsr) {
        if (u.xid == null || tsr == null || u.holdsUntilCompletion()) {
            return;
        }
        try {
            tsr.registerInterposedSynchronization(new End(u, tsr));
            u.completionRegistered();
        } catch (IllegalStateException | UnsupportedOperationException e) {
            LOG.log(System.Logger.Level.DEBUG, "LEASEHOLD-4010 {0}: no synchronization with the transaction ({1}); "
                    + "its leases end with its branch", u, e.toString());
        }
    }

    /** The end of a unit's whole transaction, as the transaction manager tells it. */
    private final class End implements Synchronization {
        private final UnitOfWork u;
        private final TransactionSynchronizationRegistry tsr;

        End(UnitOfWork u, TransactionSynchronizationRegistry tsr) {
            this.u = u;
            this.tsr = tsr;
        }

        /**
         * Before the two phases: the unit's leases become full now, so a lease broken by an older transaction rolls
         * this one back with the reason, in the server log and in the exception the application gets, instead of as
         * a bare vote at prepare.
         */
        @Override
        public void beforeCompletion() {
            if (u.state() != UnitOfWork.State.ACTIVE || u.leases().isEmpty()) {
                return;
            }
            String problem = u.lostReason() != null ? u.lostReason() : settlement.upgradeAll(u);
            if (problem == null) {
                return;
            }
            u.lost(problem);
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4208 the transaction of {0} rolls back: {1}", u, problem);
            try {
                tsr.setRollbackOnly();
            } catch (IllegalStateException e) {
                // Already completing: the exception below and the vote at prepare roll it back.
            }
            throw new IllegalStateException(new LeaseLostException("the transaction rolls back: " + u + " lost a "
                    + "lease: " + problem + ". Nothing was written; start the transaction over"));
        }

        @Override
        public void afterCompletion(int status) {
            completed(u, status);
        }
    }

    /** The whole transaction of {@code u} completed with {@code status} ({@link Status}): release what it held. */
    void completed(UnitOfWork u, int status) {
        TimeSource.Timer timer = u.completionTimer();
        if (timer != null) {
            timer.cancel();
        }
        if (u.endIf(UnitOfWork.State.COMPLETING)) {
            units.stopKeeping(u);
            settlement.releaseAll(u, u.lastWritten());
        } else if (u.state() == UnitOfWork.State.ACTIVE) {
            // The transaction ended without the transaction manager ending this branch (it never reached the two
            // phases): nothing was written under the leases, which are released.
            if (status == Status.STATUS_COMMITTED && !u.payloads().isEmpty()) {
                LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4215 the transaction of {0} committed without committing "
                        + "this branch: its {1} message(s) were not written", u, u.payloads().size());
            }
            settlement.abandon(u);
        }
        // PREPARED: the transaction manager has not decided this branch yet (it will, or recovery will); ENDED: the
        // branch released its leases when it ended (rolled back).
    }

    /**
     * After a branch's frame was written at {@code writtenAt} (null: it had nothing to write, and its leases are
     * released): keeps its leases until its transaction completes, if it will be told, else releases them now.
     */
    void written(UnitOfWork u, Instant writtenAt) {
        if (writtenAt != null && !holdUntilCompleted(u)) {
            settlement.releaseAll(u, writtenAt);
        }
    }

    /**
     * A unit that writes nothing ends now, or, when its transaction will say that it completed, keeps its leases until
     * then: the transaction may have written under them elsewhere (a database), and the next holder must see that.
     */
    void endWithoutWriting(UnitOfWork u) {
        if (!holdUntilCompleted(u)) {
            settlement.releaseAll(u, null);
        }
        units.finish(u);
    }

    /**
     * If {@code u}'s transaction will tell it when it has completed, marks it as completing and keeps its leases (the
     * keeper goes on renewing them) until then, or until {@code InDoubtHoldMillis} have passed; true if so.
     */
    private boolean holdUntilCompleted(UnitOfWork u) {
        if (!u.holdsUntilCompletion()) {
            return false;
        }
        u.state(UnitOfWork.State.COMPLETING);
        u.completionTimer(time.schedule(Micros.plus(time.nowMicros(), Micros.of(config.inDoubtHold())), () -> {
            if (u.endIf(UnitOfWork.State.COMPLETING)) {
                units.stopKeeping(u);
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4209 the transaction of {0} did not complete within "
                        + "{1} ms (InDoubtHoldMillis) of this branch's commit; its leases are released now", u,
                        config.inDoubtHold().toMillis());
                settlement.releaseAll(u, u.lastWritten());
            }
        }));
        return true;
    }
}
