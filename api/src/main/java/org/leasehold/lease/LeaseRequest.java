package org.leasehold.lease;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A request for a lease on a set of names, all or nothing. The service validates it and answers a bad one with
 * {@link InvalidLeaseRequestException}; this record only carries it.
 *
 * @param holder    who asks
 * @param names     the names, in any order (the service sorts them); no duplicates
 * @param mode      exclusive (default), shared or semaphore
 * @param kind      full (default) or tentative
 * @param deadline  an absolute deadline, or null to use {@code leaseTime}
 * @param leaseTime the lease time counted from the grant, or null for the service's maximum; ignored when
 *                  {@code deadline} is set. Either way the service clamps to its maximum lease duration, and
 *                  the granted {@link Lease#deadline()} says what was granted.
 * @param maxWait   how long to wait for the names: {@link Duration#ZERO} to try once (default)
 * @param startedAt the requester's age for wound-wait and its place among waiting requests (for a transaction: when
 *                  it began; an older request is queued ahead of younger ones); null means "now" (arrival order)
 * @param onlyLease accepted and carried, but no longer acted on: it said that the holder held no other lease (a
 *                  transaction's first lease), which once spared the lease from wound-wait. The embedded engine and
 *                  the lease server now break a younger tentative lease only while its holder waits for another
 *                  lease (a holder that waits for nothing cannot be in a cycle of waits), which spares every lease
 *                  the flag spared and more; the etcd backend never read it. Kept so that code and clients that
 *                  set it still compile and parse
 * @param principal the authenticated principal the lease is taken for, or null where none is known (default). The
 *                  service names it in the lease's signed witnesses (FORMAT.md, "Witness"), and in those of its
 *                  renewals and upgrade. A client does not send it: the lease server sets it from the caller's
 *                  credentials (bearer token or client certificate), whatever the request said. An application
 *                  that runs the engine embedded may set it with {@link #withPrincipal}
 */
public record LeaseRequest(HolderId holder, List<String> names, LeaseMode mode, LeaseKind kind, Instant deadline,
        Duration leaseTime, Duration maxWait, Instant startedAt, boolean onlyLease, String principal) {

    public LeaseRequest {
        Objects.requireNonNull(holder, "LeaseRequest.holder");
        Objects.requireNonNull(names, "LeaseRequest.names");
        // Nulls inside the list are kept, so that the service can report them as an invalid name.
        names = Collections.unmodifiableList(new ArrayList<>(names));
        mode = mode == null ? LeaseMode.EXCLUSIVE : mode;
        kind = kind == null ? LeaseKind.FULL : kind;
        maxWait = maxWait == null ? Duration.ZERO : maxWait;
    }

    /** A request with no principal. */
    public LeaseRequest(HolderId holder, List<String> names, LeaseMode mode, LeaseKind kind, Instant deadline,
            Duration leaseTime, Duration maxWait, Instant startedAt, boolean onlyLease) {
        this(holder, names, mode, kind, deadline, leaseTime, maxWait, startedAt, onlyLease, null);
    }

    /**
     * A request with {@code onlyLease} false (the flag no service acts on) and no principal.
     */
    public LeaseRequest(HolderId holder, List<String> names, LeaseMode mode, LeaseKind kind, Instant deadline,
            Duration leaseTime, Duration maxWait, Instant startedAt) {
        this(holder, names, mode, kind, deadline, leaseTime, maxWait, startedAt, false, null);
    }

    /** This request with {@code onlyLease} set to {@code only}. */
    public LeaseRequest withOnlyLease(boolean only) {
        return only == onlyLease ? this
                : new LeaseRequest(holder, names, mode, kind, deadline, leaseTime, maxWait, startedAt, only, principal);
    }

    /** This request taken for {@code principal} (null: none known). */
    public LeaseRequest withPrincipal(String principal) {
        return Objects.equals(principal, this.principal) ? this
                : new LeaseRequest(holder, names, mode, kind, deadline, leaseTime, maxWait, startedAt, onlyLease,
                        principal);
    }

    /** Starts a request by {@code holder} for {@code names}. */
    public static Builder builder(HolderId holder, String... names) {
        return new Builder(holder, Arrays.asList(names));
    }

    /** Starts a request by {@code holder} for {@code names}. */
    public static Builder builder(HolderId holder, Collection<String> names) {
        return new Builder(holder, new ArrayList<>(names));
    }

    /** Builds a {@link LeaseRequest}; defaults: exclusive, full, maximum lease time, try once. */
    public static final class Builder {
        private final HolderId holder;
        private final List<String> names;
        private LeaseMode mode = LeaseMode.EXCLUSIVE;
        private LeaseKind kind = LeaseKind.FULL;
        private Instant deadline;
        private Duration leaseTime;
        private Duration wait = Duration.ZERO;
        private Instant startedAt;
        private boolean onlyLease;

        private Builder(HolderId holder, List<String> names) {
            this.holder = holder;
            this.names = names;
        }

        public Builder mode(LeaseMode mode) {
            this.mode = mode;
            return this;
        }

        public Builder shared() {
            return mode(LeaseMode.SHARED);
        }

        public Builder semaphore(int permits) {
            return mode(LeaseMode.semaphore(permits));
        }

        public Builder kind(LeaseKind kind) {
            this.kind = kind;
            return this;
        }

        public Builder tentative() {
            return kind(LeaseKind.TENTATIVE);
        }

        /** An absolute deadline (clamped by the service). */
        public Builder until(Instant deadline) {
            this.deadline = deadline;
            return this;
        }

        /** A lease time counted from the grant (clamped by the service). */
        public Builder leaseFor(Duration leaseTime) {
            this.leaseTime = leaseTime;
            return this;
        }

        /**
         * Wait up to {@code wait} for the names (queued by age: arrival order, or a transaction's start); zero tries
         * once.
         */
        public Builder waitFor(Duration wait) {
            this.wait = wait;
            return this;
        }

        /** The requester's age for wound-wait: older requesters break younger tentative holders. */
        public Builder startedAt(Instant startedAt) {
            this.startedAt = startedAt;
            return this;
        }

        /**
         * Says whether the holder holds no other lease while it asks for this one; no service acts on it any more
         * (see {@link LeaseRequest#onlyLease}): wound-wait spares every holder that waits for nothing.
         */
        public Builder onlyLease(boolean onlyLease) {
            this.onlyLease = onlyLease;
            return this;
        }

        public LeaseRequest build() {
            return new LeaseRequest(holder, names, mode, kind, deadline, leaseTime, wait, startedAt, onlyLease);
        }
    }
}
