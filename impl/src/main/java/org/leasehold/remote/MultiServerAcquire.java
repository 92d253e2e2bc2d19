package org.leasehold.remote;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.remote.LeaseParts.Part;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

/**
 * A request whose names span servers, taken server by server in canonical order (sorted addresses, names sorted within
 * each), all or nothing, and assembled into one lease: the latest grant time and the earliest deadline of its parts.
 * During a migration a name is taken on both its servers and the parts are kept ({@link LeaseParts}).
 */
final class MultiServerAcquire {
    private final LeaseRequest request;
    private final List<Map.Entry<Endpoint, List<String>>> steps;
    private final Map<String, Endpoint> primaryOf;
    private final boolean dual;
    private final TimeSource local;
    private final SessionCalls calls;
    private final UnwantedGrants unwanted;
    private final LeaseParts parts;
    private final Migration migration;
    private final long startLocal;
    private final List<Part> held = Collections.synchronizedList(new ArrayList<>());
    private final CompletableFuture<Lease> outer = new CompletableFuture<>();
    private final AtomicReference<CompletableFuture<Lease>> step = new AtomicReference<>();

    @SuppressWarnings("checkstyle:ParameterNumber")
    private MultiServerAcquire(LeaseRequest request, List<Map.Entry<Endpoint, List<String>>> steps,
            Map<String, Endpoint> primaryOf, boolean dual, TimeSource local, SessionCalls calls, UnwantedGrants unwanted,
            LeaseParts parts, Migration migration) {
        this.local = local;
        this.calls = calls;
        this.unwanted = unwanted;
        this.parts = parts;
        this.migration = migration;
        this.startLocal = local.nowMicros();
        this.request = request;
        this.steps = steps;
        this.primaryOf = primaryOf;
        this.dual = dual;
    }

    /**
     * Takes {@code names} (canonical) for {@code request}: on their one server directly when they share it, else
     * server by server.
     */
    @SuppressWarnings("checkstyle:ParameterNumber")
    static CompletableFuture<Lease> start(LeaseRequest request, String[] names, boolean callerWaits, Routing routing,
            TimeSource local, SessionCalls calls, UnwantedGrants unwanted, LeaseParts parts, Migration migration) {
        // Group by server, in canonical (sorted address) order; during a migration a name is in two groups.
        TreeMap<String, List<String>> groups = new TreeMap<>();
        Map<String, Endpoint> endpoints = new TreeMap<>();
        Map<String, Endpoint> primaryOf = new TreeMap<>();
        for (String name : names) {
            List<Endpoint> route = routing.route(name);
            primaryOf.put(name, route.get(0));
            for (Endpoint e : route) {
                groups.computeIfAbsent(e.address, k -> new ArrayList<>()).add(name);
                endpoints.put(e.address, e);
            }
        }
        if (groups.size() == 1) {
            Endpoint only = endpoints.values().iterator().next();
            return calls.acquire(only, request, List.of(names), callerWaits);
        }
        boolean dual = primaryOf.size() < names.length || groups.values().stream().mapToInt(List::size).sum() > names.length;
        List<Map.Entry<Endpoint, List<String>>> steps = new ArrayList<>();
        for (Map.Entry<String, List<String>> g : groups.entrySet()) {
            steps.add(Map.entry(endpoints.get(g.getKey()), g.getValue()));
        }
        return new MultiServerAcquire(request, steps, primaryOf, dual, local, calls, unwanted, parts, migration).start();
    }

    private CompletableFuture<Lease> start() {
        outer.whenComplete((l, f) -> {
            if (f instanceof CancellationException) {
                CompletableFuture<Lease> s = step.get();
                if (s != null) {
                    s.cancel(false);
                }
                rollback();
            }
        });
        next(0);
        return outer;
    }

    private void next(int i) {
        if (outer.isDone()) {
            rollback();
            return;
        }
        if (i == steps.size()) {
            Lease combined = combine();
            if (!combined.deadline().isAfter(combined.grantedAt())) {
                // An earlier part ran out while a later one waited: the parts never were all held at once.
                rollback();
                outer.completeExceptionally(new LeaseBusyException(null, null, "the parts of the request on "
                        + "different servers could not be held at once: one ended at " + combined.deadline()
                        + " before the last was granted at " + combined.grantedAt() + "; ask again (with a longer "
                        + "lease time or a shorter wait)"));
                return;
            }
            if (dual) {
                parts.keep(combined, held, migration.over());
            }
            if (!outer.complete(combined)) {
                rollback();
            }
            return;
        }
        Map.Entry<Endpoint, List<String>> s = steps.get(i);
        LeaseRequest part = request;
        if (i > 0 && !request.maxWait().isZero()) {
            long left = Micros.of(request.maxWait()) - (local.nowMicros() - startLocal);
            part = new LeaseRequest(request.holder(), request.names(), request.mode(), request.kind(),
                    request.deadline(), request.leaseTime(), Duration.ofNanos(Math.max(0, left) * 1_000L),
                    request.startedAt(), false, request.principal());
        }
        CompletableFuture<Lease> f = calls.acquire(s.getKey(), part, s.getValue(), false);
        step.set(f);
        f.whenComplete((lease, failure) -> {
            if (failure != null) {
                rollback();
                outer.completeExceptionally(failure instanceof CancellationException
                        ? new LeaseServiceUnavailableException(null, "the request was cancelled") : failure);
            } else {
                held.add(new Part(s.getKey(), lease));
                next(i + 1);
            }
        });
    }

    private void rollback() {
        List<Part> toRelease;
        synchronized (held) {
            toRelease = new ArrayList<>(held);
            held.clear();
        }
        for (Part p : toRelease) {
            unwanted.release(p.endpoint(), p.lease());
        }
    }

    private Lease combine() {
        List<Part> taken;
        synchronized (held) {
            taken = new ArrayList<>(held);
        }
        Instant grantedAt = taken.get(0).lease().grantedAt();
        Instant deadline = taken.get(0).lease().deadline();
        for (Part p : taken) {
            grantedAt = p.lease().grantedAt().isAfter(grantedAt) ? p.lease().grantedAt() : grantedAt;
            deadline = p.lease().deadline().isBefore(deadline) ? p.lease().deadline() : deadline;
        }
        List<LeaseGrant> grants = new ArrayList<>();
        for (Map.Entry<String, Endpoint> en : primaryOf.entrySet()) {
            String name = en.getKey();
            LeaseGrant primary = null;
            Instant floor = null;
            Instant writableFrom = null;
            for (Part p : taken) {
                for (LeaseGrant g : p.lease().grants()) {
                    if (!g.name().equals(name)) {
                        continue;
                    }
                    if (p.endpoint() == en.getValue()) {
                        primary = g;
                    }
                    floor = floor == null || g.floor().isAfter(floor) ? g.floor() : floor;
                    writableFrom = writableFrom == null || g.writableFrom().isAfter(writableFrom)
                            ? g.writableFrom() : writableFrom;
                }
            }
            if (primary == null) {
                throw new IllegalStateException("no grant of " + name + " from its server " + en.getValue().address);
            }
            // The witness of the name's own server: what frames written under the lease carry.
            grants.add(new LeaseGrant(name, primary.generation(), primary.correlationId(), floor, writableFrom,
                    primary.predecessor(), primary.witness()));
        }
        Lease first = taken.get(0).lease();
        return new Lease(first.holder(), first.mode(), first.kind(), grantedAt, deadline, grants);
    }
}
