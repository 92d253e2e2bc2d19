package org.leasehold.store;

import java.time.Duration;
import java.util.Objects;

/**
 * When a writer forces its data files to stable storage. Whatever the policy, an append is acknowledged only after
 * its bytes are visible to every other process (forced, or written and closed, which on NFS sends them to the
 * server), so sealing always sees acknowledged messages. The policies differ in what a crash of the machine (or of
 * the NFS server) can take away.
 *
 * <ul>
 *   <li>{@link #everyBatch()} (default): write and force every batch, then acknowledge. An acknowledged message
 *       survives any crash the storage's flush survives. Costs one flush per batch (group commit shares it).
 *   <li>{@link #interval(Duration)}: write and close every batch, acknowledge, and force every {@code interval}.
 *       <strong>A power failure, kernel crash or NFS server crash can lose up to {@code interval} of acknowledged
 *       messages</strong>, and a sealed lock file can then list bytes that no longer exist. A JVM crash loses
 *       nothing.
 *   <li>{@link #never()}: write and close every batch, acknowledge, leave flushing to the operating system.
 *       <strong>A power failure, kernel crash or NFS server crash can lose any amount of acknowledged messages
 *       (typically the last 30 s).</strong> For tests and data you can recompute.
 * </ul>
 *
 * @param mode     the policy
 * @param interval the force interval of {@link Mode#INTERVAL}, else null
 */
public record FlushPolicy(Mode mode, Duration interval) {

    /** The kinds of policy. */
    public enum Mode { EVERY_BATCH, INTERVAL, NEVER }

    public FlushPolicy {
        Objects.requireNonNull(mode, "FlushPolicy.mode");
        if (mode == Mode.INTERVAL) {
            if (interval == null || interval.isNegative() || interval.isZero()) {
                throw new IllegalArgumentException("the flush interval is " + interval
                        + "; give a positive duration such as 100 ms, or use FlushPolicy.everyBatch()");
            }
        } else if (interval != null) {
            throw new IllegalArgumentException("only the INTERVAL flush policy takes an interval; " + mode
                    + " was given " + interval);
        }
    }

    /** Force every batch before acknowledging it (the default, and the only policy that loses nothing on a crash). */
    public static FlushPolicy everyBatch() {
        return new FlushPolicy(Mode.EVERY_BATCH, null);
    }

    /** Acknowledge after write and close; force every {@code interval}. */
    public static FlushPolicy interval(Duration interval) {
        return new FlushPolicy(Mode.INTERVAL, interval);
    }

    /** Acknowledge after write and close; never force. */
    public static FlushPolicy never() {
        return new FlushPolicy(Mode.NEVER, null);
    }

    @Override
    public String toString() {
        return mode == Mode.INTERVAL ? "interval(" + interval + ")" : mode.name().toLowerCase(java.util.Locale.ROOT);
    }
}
