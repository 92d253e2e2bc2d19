package org.leasehold.remote;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * A lease value's per-server parts: split by {@link Routing}, or, for a lease taken on both sets of a migration, the
 * parts it was taken as, kept until it is released or over (renew, upgrade and release go to both sets even after the
 * migration's end).
 */
final class LeaseParts {
    /** One server's part of a lease. */
    record Part(Endpoint endpoint, Lease lease) {
    }

    /** The parts of a lease taken on both sets during a migration, and when it ends (local micros). */
    private record Kept(List<Part> parts, long expiresLocal) {
    }

    /** Identifies a lease value across renewals: holder, names and generations. */
    private record LeaseKey(HolderId holder, List<String> names, List<Long> generations) {
        static LeaseKey of(Lease l) {
            List<String> names = new ArrayList<>(l.grants().size());
            List<Long> gens = new ArrayList<>(l.grants().size());
            for (LeaseGrant g : l.grants()) {
                names.add(g.name());
                gens.add(g.generation());
            }
            return new LeaseKey(l.holder(), names, gens);
        }
    }

    private final Routing routing;
    private final TimeSource local;
    private final BooleanSupplier closed;
    private final Map<LeaseKey, Kept> kept = new ConcurrentHashMap<>();

    LeaseParts(Routing routing, TimeSource local, BooleanSupplier closed) {
        this.routing = routing;
        this.local = local;
        this.closed = closed;
    }

    /** Splits a lease value into its servers' parts, in canonical server order. */
    List<Part> of(Lease lease) throws LeaseException {
        if (lease == null) {
            throw new InvalidLeaseRequestException(Reason.NULL_ARGUMENT, "the lease is null");
        }
        if (lease.grants().isEmpty()) {
            throw new InvalidLeaseRequestException(Reason.NO_NAMES, "the lease value names no lease");
        }
        if (!kept.isEmpty()) {
            Kept stored = kept.get(LeaseKey.of(lease));
            if (stored != null) {
                List<Part> out = new ArrayList<>(stored.parts.size());
                for (Part p : stored.parts) {
                    out.add(new Part(p.endpoint, withKind(p.lease, lease)));
                }
                return out;
            }
        }
        if (routing.singleServer()) {
            return List.of(new Part(routing.first(), lease));
        }
        TreeMap<String, List<LeaseGrant>> byServer = new TreeMap<>();
        Map<String, Endpoint> endpoints = new TreeMap<>();
        for (LeaseGrant g : lease.grants()) {
            if (g.name() == null) {
                throw new InvalidLeaseRequestException(Reason.EMPTY_NAME, "the lease value has a null name");
            }
            Endpoint e = routing.primary(g.name());
            byServer.computeIfAbsent(e.address, k -> new ArrayList<>()).add(g);
            endpoints.put(e.address, e);
        }
        List<Part> parts = new ArrayList<>(byServer.size());
        for (Map.Entry<String, List<LeaseGrant>> en : byServer.entrySet()) {
            parts.add(new Part(endpoints.get(en.getKey()), new Lease(lease.holder(), lease.mode(), lease.kind(),
                    lease.grantedAt(), lease.deadline(), en.getValue())));
        }
        return parts;
    }

    private static Lease withKind(Lease part, Lease whole) {
        if (part.kind() == whole.kind()) {
            return part;
        }
        return new Lease(part.holder(), part.mode(), whole.kind(), part.grantedAt(), part.deadline(), part.grants());
    }

    /** Keeps the parts of {@code combined}, a lease just taken on both sets of a migration. */
    void keep(Lease combined, List<Part> parts, boolean migrationOver) {
        long remaining = Micros.of(Duration.between(combined.grantedAt(), combined.deadline()));
        kept.put(LeaseKey.of(combined), new Kept(List.copyOf(parts), local.nowMicros() + remaining + 60_000_000L));
        sweepIfLarge();
        if (migrationOver) {
            // Taken across the window's end: the sweep after the migration may have looked already.
            sweepLeftovers();
        }
    }

    /** The whole lease after an upgrade or renewal of its parts: the earliest deadline, the caller's grants. */
    Lease merge(Lease original, List<Part> before, List<Part> after) {
        if (after.size() == 1 && before.size() == 1 && before.get(0).lease == original) {
            return after.get(0).lease;
        }
        Instant deadline = after.get(0).lease.deadline();
        for (Part p : after) {
            deadline = p.lease.deadline().isBefore(deadline) ? p.lease.deadline() : deadline;
        }
        Lease merged = new Lease(original.holder(), original.mode(), after.get(0).lease.kind(), original.grantedAt(),
                deadline, witnessedAfter(original.grants(), after));
        LeaseKey key = LeaseKey.of(original);
        Kept stored = kept.get(key);
        if (stored != null) {
            // A renewal moves the deadline: keep the parts at least as long past it as when they were taken.
            long remaining = Math.max(0, Micros.of(Duration.between(merged.grantedAt(), merged.deadline())));
            kept.put(key, new Kept(List.copyOf(after), Math.max(stored.expiresLocal,
                    local.nowMicros() + remaining + 60_000_000L)));
        }
        return merged;
    }

    /**
     * The caller's grants, each with the witness of the renewal or upgrade that {@code after} brought for its name and
     * generation (the new deadline and kind, which frames written from now on must carry), or its own if none came.
     */
    private static List<LeaseGrant> witnessedAfter(List<LeaseGrant> grants, List<Part> after) {
        List<LeaseGrant> out = new ArrayList<>(grants.size());
        for (LeaseGrant g : grants) {
            LeaseGrant now = g;
            for (Part p : after) {
                for (LeaseGrant a : p.lease.grants()) {
                    if (a.witness() != null && a.name().equals(g.name()) && a.generation() == g.generation()) {
                        now = g.withWitness(a.witness());
                    }
                }
            }
            out.add(now);
        }
        return out;
    }

    /** Forgets the parts of a released lease. */
    void released(Lease lease) {
        kept.remove(LeaseKey.of(lease));
    }

    /** Leases whose parts are kept now. */
    int size() {
        return kept.size();
    }

    /**
     * After the migration: leases taken on both sets before its end keep their parts until they end. Those never
     * released are forgotten here once they are over, and the sweep comes back when the next one will be.
     */
    void sweepLeftovers() {
        if (closed.getAsBoolean()) {
            return;
        }
        long now = local.nowMicros();
        kept.values().removeIf(p -> p.expiresLocal < now);
        long next = Long.MAX_VALUE;
        for (Kept p : kept.values()) {
            next = Math.min(next, p.expiresLocal);
        }
        if (next != Long.MAX_VALUE) {
            local.schedule(next + 1, this::sweepLeftovers);
        }
    }

    private void sweepIfLarge() {
        if (kept.size() < 1_024) {
            return;
        }
        long now = local.nowMicros();
        kept.values().removeIf(p -> p.expiresLocal < now);
    }
}
