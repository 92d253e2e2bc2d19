package org.leasehold.time;

import java.io.IOException;
import java.util.concurrent.Executor;

/**
 * A persisted high-water mark of time: where a lease engine records, ahead of time, a bound on everything it grants,
 * so that its next incarnation never goes back below it, even when the clock stepped back across the restart.
 *
 * <p>The engine records a {@link Recorded} every few seconds and grants, renews and upgrades nothing at or after the
 * horizon of its last durable record; the next incarnation reads the last durable record with {@link #previous()}.
 * Implementations keep only what {@link #record} made durable before returning.
 */
public interface TimeMark {

    /**
     * One record, in microseconds since the epoch.
     *
     * @param horizon   the engine grants, renews and upgrades nothing at or after this time; the time part of every
     *                  generation it issues is below it
     * @param bound     above every deadline and floor the engine has granted or reported (at least
     *                  {@code horizon + maxLease})
     * @param writtenAt the engine's clock when it recorded this: a later start whose clock reads less has seen its
     *                  clock step back
     */
    record Recorded(long horizon, long bound, long writtenAt) {
    }

    /** The last record an earlier incarnation made durable, or null if there is none. */
    Recorded previous();

    /**
     * Makes {@code r} durable before returning. May block on the disk; called by one thread at a time, on
     * {@link #executor()} (never on a time source's timer thread).
     *
     * @throws IOException it could not be made durable; the engine keeps its previous horizon and tries again
     */
    void record(Recorded r) throws IOException;

    /** Where the engine calls {@link #record}: a thread of the mark's own, or the caller's thread for tests. */
    Executor executor();
}
