package org.leasehold.connector;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The state of the resource adapter behind one connection factory, for health checks: whether it can serve units of
 * work now (ready), and whether it could ever again without a restart of the server (live).
 *
 * @param log          the log the factory's connections append to
 * @param writer       the writer identity of the adapter's bag store, or null when the adapter could not start it
 * @param leaseService {@code embedded} or {@code remote:<host:port>[,...]}
 * @param checks       the readiness checks, in a fixed order: {@code store}, {@code leases}, {@code clocks};
 *                     or the single check {@code runtime} when the adapter could not start for this factory
 * @param notLive      null while the adapter is live; otherwise why it is not, and what to do
 */
public record AdapterStatus(String log, String writer, String leaseService, List<Check> checks, String notLive) {

    /**
     * The name of the single check reported when the adapter cannot start its runtime for the factory (a bad
     * property, a store root that does not exist, a log another server owns): its detail is the adapter's reason.
     */
    public static final String RUNTIME = "runtime";
    /** The name of the check that the bag store accepts writes. */
    public static final String STORE = "store";
    /** The name of the check that the lease service answers (and, in embedded mode, that this server owns the log). */
    public static final String LEASES = "leases";
    /** The name of the check that every lease server's clock is within {@code MaxClockErrorMillis} of this server's. */
    public static final String CLOCKS = "clocks";

    public AdapterStatus {
        checks = Collections.unmodifiableList(new ArrayList<>(checks));
    }

    /**
     * One readiness check.
     *
     * @param name   {@link #STORE}, {@link #LEASES}, {@link #CLOCKS} or {@link #RUNTIME}
     * @param up     whether it passed
     * @param detail what was found: on success a short description, otherwise the problem and what to do
     */
    public record Check(String name, boolean up, String detail) {
    }

    /** Whether every readiness check passed. */
    public boolean ready() {
        return checks.stream().allMatch(Check::up);
    }

    /** Whether the adapter could serve again without a restart of the server. */
    public boolean live() {
        return notLive == null;
    }
}
