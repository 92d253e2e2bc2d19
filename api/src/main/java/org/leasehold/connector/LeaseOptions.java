package org.leasehold.connector;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

import org.leasehold.lease.LeaseMode;

/**
 * What a unit of work asks for: names, mode, how long to wait, for how long.
 *
 * @param names     the lease names
 * @param mode      exclusive (default), shared or a semaphore permit
 * @param maxWait   how long to wait, or null for the adapter's default
 * @param leaseTime the lease time, or null for the adapter's default (its maximum lease duration)
 */
public record LeaseOptions(List<String> names, LeaseMode mode, Duration maxWait, Duration leaseTime) {

    public LeaseOptions {
        names = Collections.unmodifiableList(new ArrayList<>(names));
        mode = mode == null ? LeaseMode.EXCLUSIVE : mode;
    }

    /** Exclusive leases on {@code names}, default wait and lease time. */
    public static LeaseOptions of(String... names) {
        return new LeaseOptions(Arrays.asList(names), LeaseMode.EXCLUSIVE, null, null);
    }

    /** Exclusive leases on {@code names}, default wait and lease time. */
    public static LeaseOptions of(Collection<String> names) {
        return new LeaseOptions(new ArrayList<>(names), LeaseMode.EXCLUSIVE, null, null);
    }

    public LeaseOptions mode(LeaseMode m) {
        return new LeaseOptions(names, m, maxWait, leaseTime);
    }

    public LeaseOptions waitFor(Duration d) {
        return new LeaseOptions(names, mode, d, leaseTime);
    }

    public LeaseOptions leaseFor(Duration d) {
        return new LeaseOptions(names, mode, maxWait, d);
    }
}
