package org.leasehold.wire;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import com.google.protobuf.UnsafeByteOperations;


import org.leasehold.lease.CorrelationId;
import org.leasehold.lease.Ending;
import org.leasehold.lease.GrantWitness;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.HolderStatus;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.InvalidLeaseRequestException.Reason;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseServiceUnavailableException;
import org.leasehold.lease.MetadataEntry;
import org.leasehold.lease.NameStatus;
import org.leasehold.lease.Predecessor;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.lease.WaiterStatus;
import org.leasehold.time.Micros;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.LeaseError;
import org.leasehold.wire.proto.LeaseRef;

/**
 * Converts between the API's values and the wire protocol's messages, both ways, for the client and the server.
 * Instants travel as microseconds since the epoch (the engine's own resolution, so nothing is lost).
 */
public final class ProtoCodec {
    /** The earliest instant a request may carry: the epoch. */
    public static final long MIN_INSTANT_MICROS = 0;
    /** The latest instant a request may carry, 9999-12-31T23:59:59.999999Z, in microseconds since the epoch. */
    public static final long MAX_INSTANT_MICROS = 253_402_300_799_999_999L;
    /** The longest duration a request may carry, in microseconds: what a {@code Duration} of long nanoseconds holds. */
    public static final long MAX_DURATION_MICROS = Long.MAX_VALUE / 1_000L;
    /** The most permits a semaphore request may carry (the least is 1). */
    public static final int MAX_PERMITS = Integer.MAX_VALUE;

    private ProtoCodec() {
    }

    // ------------------------------------------------------------------------------------------------ scalars

    public static long micros(Instant t) {
        return Micros.of(t);
    }

    public static Instant instant(long micros) {
        return Micros.toInstant(micros);
    }

    public static org.leasehold.wire.proto.Holder holder(HolderId h) {
        return org.leasehold.wire.proto.Holder.newBuilder().setProcess(h.process()).setOwner(h.owner()).build();
    }

    public static HolderId holder(org.leasehold.wire.proto.Holder h) {
        return new HolderId(h.getProcess(), h.getOwner());
    }

    public static org.leasehold.wire.proto.Mode mode(LeaseMode m) {
        org.leasehold.wire.proto.Mode.Type t = switch (m.type()) {
            case EXCLUSIVE -> org.leasehold.wire.proto.Mode.Type.EXCLUSIVE;
            case SHARED -> org.leasehold.wire.proto.Mode.Type.SHARED;
            case SEMAPHORE -> org.leasehold.wire.proto.Mode.Type.SEMAPHORE;
        };
        return org.leasehold.wire.proto.Mode.newBuilder().setType(t).setPermits(m.permits()).build();
    }

    public static LeaseMode mode(org.leasehold.wire.proto.Mode m) {
        return switch (m.getType()) {
            case EXCLUSIVE -> LeaseMode.EXCLUSIVE;
            case SHARED -> LeaseMode.SHARED;
            case SEMAPHORE -> LeaseMode.semaphore(m.getPermits());
            default -> throw new IllegalArgumentException("unknown lease mode on the wire: " + m.getTypeValue());
        };
    }

    public static org.leasehold.wire.proto.Kind kind(LeaseKind k) {
        return k == LeaseKind.TENTATIVE ? org.leasehold.wire.proto.Kind.TENTATIVE : org.leasehold.wire.proto.Kind.FULL;
    }

    public static LeaseKind kind(org.leasehold.wire.proto.Kind k) {
        return switch (k) {
            case TENTATIVE -> LeaseKind.TENTATIVE;
            case FULL -> LeaseKind.FULL;
            default -> throw new IllegalArgumentException("unknown lease kind on the wire: " + k);
        };
    }

    public static org.leasehold.wire.proto.Ending ending(Ending e) {
        return switch (e) {
            case UNKNOWN -> org.leasehold.wire.proto.Ending.UNKNOWN;
            case RELINQUISHED -> org.leasehold.wire.proto.Ending.RELINQUISHED;
            case EXPIRED -> org.leasehold.wire.proto.Ending.EXPIRED;
            case BROKEN -> org.leasehold.wire.proto.Ending.BROKEN;
            case RETAKEN -> org.leasehold.wire.proto.Ending.RETAKEN;
        };
    }

    public static Ending ending(org.leasehold.wire.proto.Ending e) {
        return switch (e) {
            case UNKNOWN -> Ending.UNKNOWN;
            case RELINQUISHED -> Ending.RELINQUISHED;
            case EXPIRED -> Ending.EXPIRED;
            case BROKEN -> Ending.BROKEN;
            case RETAKEN -> Ending.RETAKEN;
            default -> throw new IllegalArgumentException("unknown ending on the wire: " + e);
        };
    }

    public static org.leasehold.wire.proto.CorrelationId id(CorrelationId id) {
        return org.leasehold.wire.proto.CorrelationId.newBuilder().setHigh(id.high()).setLow(id.low()).build();
    }

    public static CorrelationId id(org.leasehold.wire.proto.CorrelationId id) {
        return new CorrelationId(id.getHigh(), id.getLow());
    }

    // ------------------------------------------------------------------------------------------------ requests

    /** The request on the wire; {@code names} replaces the request's own (a shard's part of it). */
    public static AcquireRequest acquire(LeaseRequest r, List<String> names) {
        AcquireRequest.Builder b = AcquireRequest.newBuilder().setHolder(holder(r.holder())).addAllNames(names)
                .setMode(mode(r.mode())).setKind(kind(r.kind())).setWaitMicros(Micros.of(r.maxWait()));
        if (r.deadline() != null) {
            b.setDeadlineMicros(Micros.of(r.deadline()));
        }
        if (r.leaseTime() != null) {
            b.setLeaseTimeMicros(Micros.of(r.leaseTime()));
        }
        if (r.startedAt() != null) {
            b.setStartedAtMicros(Micros.of(r.startedAt()));
        }
        if (r.onlyLease()) {
            b.setOnlyLease(true);
        }
        return b.build();
    }

    /**
     * The request an {@code AcquireRequest} carries, every number checked against its range first (see
     * {@link #instantField}, {@link #durationField}, {@link #modeField}).
     *
     * @throws InvalidLeaseRequestException a number is out of range (naming the field and its range; reason
     *                                      {@code OUT_OF_RANGE}, or the field's own: {@code INVALID_WAIT},
     *                                      {@code INVALID_LEASE_TIME}, {@code INVALID_PERMITS})
     */
    public static LeaseRequest acquire(AcquireRequest r) throws InvalidLeaseRequestException {
        String type = "Acquire";
        Instant deadline = r.hasDeadlineMicros() ? instantField(type, "deadline_micros", r.getDeadlineMicros()) : null;
        java.time.Duration leaseTime = r.hasLeaseTimeMicros()
                ? durationField(Reason.INVALID_LEASE_TIME, type, "lease_time_micros", r.getLeaseTimeMicros()) : null;
        java.time.Duration wait = durationField(Reason.INVALID_WAIT, type, "wait_micros", r.getWaitMicros());
        Instant startedAt = r.hasStartedAtMicros() ? instantField(type, "started_at_micros", r.getStartedAtMicros()) : null;
        return new LeaseRequest(holder(r.getHolder()), r.getNamesList(), modeField(type, r.getMode()),
                kindField(type, r.getKind()), deadline, leaseTime, wait, startedAt, r.getOnlyLease());
    }

    /**
     * An instant field of a request: microseconds since the epoch within [{@link #MIN_INSTANT_MICROS},
     * {@link #MAX_INSTANT_MICROS}], so that every computation on it stays within a long.
     */
    public static Instant instantField(String type, String field, long micros) throws InvalidLeaseRequestException {
        return instantField(Reason.OUT_OF_RANGE, type, field, micros);
    }

    private static Instant instantField(Reason reason, String type, String field,
            long micros) throws InvalidLeaseRequestException {
        if (micros < MIN_INSTANT_MICROS || micros > MAX_INSTANT_MICROS) {
            throw outOfRange(reason, type, field, Long.toString(micros), "[" + MIN_INSTANT_MICROS + ", "
                    + MAX_INSTANT_MICROS + "] (" + Micros.toInstant(MIN_INSTANT_MICROS) + " to " + Micros.toInstant(MAX_INSTANT_MICROS)
                    + "), microseconds since the epoch");
        }
        return Micros.toInstant(micros);
    }

    /**
     * A duration field of a request: microseconds within [0, {@link #MAX_DURATION_MICROS}]; refused with
     * {@code reason}.
     */
    public static java.time.Duration durationField(Reason reason, String type, String field,
            long micros) throws InvalidLeaseRequestException {
        if (micros < 0 || micros > MAX_DURATION_MICROS) {
            throw outOfRange(reason, type, field, Long.toString(micros), "[0, " + MAX_DURATION_MICROS + "] microseconds");
        }
        return java.time.Duration.ofNanos(micros * 1_000L);
    }

    /**
     * The mode of a request: a semaphore's permits within [1, {@link #MAX_PERMITS}]; for exclusive and shared the
     * permits field is 0 or the mode's own value (1 and 0).
     */
    public static LeaseMode modeField(String type, org.leasehold.wire.proto.Mode m) throws InvalidLeaseRequestException {
        int p = m.getPermits();
        switch (m.getType()) {
            case EXCLUSIVE -> {
                if (p != 0 && p != LeaseMode.EXCLUSIVE.permits()) {
                    throw outOfRange(type, "mode.permits", Integer.toString(p), "0 or 1 for an exclusive lease");
                }
                return LeaseMode.EXCLUSIVE;
            }
            case SHARED -> {
                if (p != 0) {
                    throw outOfRange(type, "mode.permits", Integer.toString(p), "0 for a shared lease");
                }
                return LeaseMode.SHARED;
            }
            case SEMAPHORE -> {
                if (p < 1) {
                    throw outOfRange(Reason.INVALID_PERMITS, type, "mode.permits",
                            Integer.toString(p), "[1, " + MAX_PERMITS + "] for a semaphore");
                }
                return LeaseMode.semaphore(p);
            }
            default -> throw outOfRange(type, "mode.type", Integer.toString(m.getTypeValue()),
                    "0 (exclusive), 1 (shared) or 2 (semaphore)");
        }
    }

    private static LeaseKind kindField(String type, org.leasehold.wire.proto.Kind k) throws InvalidLeaseRequestException {
        return switch (k) {
            case FULL -> LeaseKind.FULL;
            case TENTATIVE -> LeaseKind.TENTATIVE;
            default -> throw outOfRange(type, "kind", k.toString(), "0 (full) or 1 (tentative)");
        };
    }

    private static InvalidLeaseRequestException outOfRange(String type, String field, String value, String range) {
        return outOfRange(Reason.OUT_OF_RANGE, type, field, value, range);
    }

    private static InvalidLeaseRequestException outOfRange(Reason reason, String type,
            String field, String value, String range) {
        return new InvalidLeaseRequestException(reason, "the " + type + " request's " + field + " is " + value
                + ", outside its range " + range + ": nothing was done; send a value within the range");
    }

    /** The new deadline a {@code RenewRequest} asks for, range-checked. */
    public static Instant renewDeadline(org.leasehold.wire.proto.RenewRequest r) throws InvalidLeaseRequestException {
        return instantField("Renew", "deadline_micros", r.getDeadlineMicros());
    }

    /** Until when a {@code RenewRequest} asks to hold the lease in doubt (null if it does not), range-checked. */
    public static Instant renewHoldInDoubtUntil(org.leasehold.wire.proto.RenewRequest r)
            throws InvalidLeaseRequestException {
        return r.hasHoldInDoubtUntilMicros()
                ? instantField("Renew", "hold_in_doubt_until_micros", r.getHoldInDoubtUntilMicros()) : null;
    }

    /** The new deadline an {@code UpgradeRequest} asks for (null to keep the lease's), range-checked. */
    public static Instant upgradeDeadline(org.leasehold.wire.proto.UpgradeRequest r)
            throws InvalidLeaseRequestException {
        return r.hasDeadlineMicros() ? instantField("Upgrade", "deadline_micros", r.getDeadlineMicros()) : null;
    }

    /** The watermark a {@code ReleaseRequest} publishes (null if none), range-checked. */
    public static Instant releaseWatermark(org.leasehold.wire.proto.ReleaseRequest r)
            throws InvalidLeaseRequestException {
        return r.hasWatermarkMicros()
                ? instantField(Reason.WATERMARK_OUT_OF_RANGE, "Release", "watermark_micros", r.getWatermarkMicros())
                : null;
    }

    /** Names a held lease (its holder, mode, kind and each name's generation). */
    public static LeaseRef ref(Lease lease) {
        LeaseRef.Builder b = LeaseRef.newBuilder().setHolder(holder(lease.holder())).setMode(mode(lease.mode()))
                .setKind(kind(lease.kind()));
        if (lease.deadline() != null) {
            b.setDeadlineMicros(Micros.of(lease.deadline()));
        }
        for (LeaseGrant g : lease.grants()) {
            b.addNames(g.name()).addGenerations(g.generation());
        }
        return b.build();
    }

    /**
     * The lease a reference names, as the engine needs it to find the holding: holder, each name's generation and the
     * deadline the holder knows. The other fields are placeholders; the engine answers with its own record.
     */
    public static Lease lease(LeaseRef ref) throws InvalidLeaseRequestException {
        return lease(ref, "lease reference");
    }

    /**
     * As {@link #lease(LeaseRef)}, naming the request the reference came in ({@code type}) in a refusal. Generations
     * may be any value (one the service never granted is answered as stale); the deadline is an instant field.
     *
     * @throws IllegalArgumentException the reference does not carry one generation per name
     */
    public static Lease lease(LeaseRef ref, String type) throws InvalidLeaseRequestException {
        if (ref.getNamesCount() != ref.getGenerationsCount()) {
            throw new IllegalArgumentException("the lease reference has " + ref.getNamesCount() + " names but "
                    + ref.getGenerationsCount() + " generations: send one generation per name");
        }
        Instant deadline = instantField(type, "lease.deadline_micros", ref.getDeadlineMicros());
        LeaseMode mode = modeField(type, ref.getMode());
        LeaseKind kind = kindField(type, ref.getKind());
        List<LeaseGrant> grants = new ArrayList<>(ref.getNamesCount());
        Predecessor none = new Predecessor(CorrelationId.NONE, Ending.UNKNOWN, Instant.EPOCH, null, null);
        for (int i = 0; i < ref.getNamesCount(); i++) {
            grants.add(new LeaseGrant(ref.getNames(i), ref.getGenerations(i), CorrelationId.NONE, Instant.EPOCH,
                    Instant.EPOCH, none));
        }
        return new Lease(holder(ref.getHolder()), mode, kind, Instant.EPOCH, deadline, grants);
    }

    // ------------------------------------------------------------------------------------------------ leases

    public static org.leasehold.wire.proto.Lease lease(Lease l) {
        return lease(l, false);
    }

    /**
     * {@code l} on the wire; with {@code proofsFollow}, each witness whose proof the answer does not carry is marked
     * {@code proof_follows} (the session pushes it without being asked).
     */
    public static org.leasehold.wire.proto.Lease lease(Lease l, boolean proofsFollow) {
        org.leasehold.wire.proto.Lease.Builder b = org.leasehold.wire.proto.Lease.newBuilder()
                .setHolder(holder(l.holder())).setMode(mode(l.mode())).setKind(kind(l.kind()))
                .setGrantedAtMicros(Micros.of(l.grantedAt())).setDeadlineMicros(Micros.of(l.deadline()));
        for (LeaseGrant g : l.grants()) {
            b.addGrants(grant(g, proofsFollow));
        }
        return b.build();
    }

    /** How a client makes the {@link GrantWitness} of a grant it received. */
    public interface WitnessReader {
        /**
         * The witness of {@code statement}: sealed at once with {@code frameWitness} if that is not empty, otherwise
         * completed when the session brings the proof ({@code WitnessSeals}): by itself if {@code proofFollows}, else
         * once asked for, where the server signs on request.
         */
        GrantWitness witness(byte[] statement, byte[] frameWitness, boolean proofFollows);
    }

    /** A lease received without a session to bring proofs: witnesses only where the answer carried the proof. */
    public static Lease lease(org.leasehold.wire.proto.Lease l) {
        return lease(l, (statement, frame, follows) -> frame.length == 0 ? null
                : new GrantWitness(statement, CompletableFuture.completedFuture(frame)));
    }

    /** A lease received, its grants' witnesses made by {@code witnesses} (none for a grant that carries none). */
    public static Lease lease(org.leasehold.wire.proto.Lease l, WitnessReader witnesses) {
        List<LeaseGrant> grants = new ArrayList<>(l.getGrantsCount());
        for (org.leasehold.wire.proto.Grant g : l.getGrantsList()) {
            LeaseGrant grant = grant(g);
            if (!g.getWitness().isEmpty()) {
                GrantWitness w = witnesses.witness(g.getWitness().toByteArray(), g.getFrameWitness().toByteArray(),
                        g.getProofFollows());
                if (w != null) {
                    grant = grant.withWitness(w);
                }
            }
            grants.add(grant);
        }
        return new Lease(holder(l.getHolder()), mode(l.getMode()), kind(l.getKind()), instant(l.getGrantedAtMicros()),
                instant(l.getDeadlineMicros()), grants);
    }

    private static org.leasehold.wire.proto.Grant grant(LeaseGrant g, boolean proofFollows) {
        Predecessor p = g.predecessor();
        org.leasehold.wire.proto.Predecessor.Builder pb = org.leasehold.wire.proto.Predecessor.newBuilder()
                .setCorrelationId(id(p.correlationId())).setEnding(ending(p.ending()))
                .setEndedAtMicros(Micros.of(p.endedAt()));
        if (p.watermark() != null) {
            pb.setWatermarkMicros(Micros.of(p.watermark()));
        }
        if (p.metadata() != null) {
            pb.setMetadata(p.metadata());
        }
        org.leasehold.wire.proto.Grant.Builder b = org.leasehold.wire.proto.Grant.newBuilder().setName(g.name())
                .setGeneration(g.generation()).setCorrelationId(id(g.correlationId()))
                .setFloorMicros(Micros.of(g.floor())).setWritableFromMicros(Micros.of(g.writableFrom()))
                .setPredecessor(pb);
        GrantWitness w = g.witness();
        if (w != null) {
            // Both are copies made for this call, so the message may wrap them rather than copy them again.
            b.setWitness(UnsafeByteOperations.unsafeWrap(w.statement()));
            byte[] sealed = w.sealedNow();
            if (sealed != null) {
                b.setFrameWitness(UnsafeByteOperations.unsafeWrap(sealed));
            } else if (proofFollows) {
                b.setProofFollows(true);
            }
        }
        return b.build();
    }

    private static LeaseGrant grant(org.leasehold.wire.proto.Grant g) {
        org.leasehold.wire.proto.Predecessor p = g.getPredecessor();
        Predecessor pred = new Predecessor(id(p.getCorrelationId()), ending(p.getEnding()), instant(p.getEndedAtMicros()),
                p.hasWatermarkMicros() ? instant(p.getWatermarkMicros()) : null, p.hasMetadata() ? p.getMetadata() : null);
        return new LeaseGrant(g.getName(), g.getGeneration(), id(g.getCorrelationId()), instant(g.getFloorMicros()),
                instant(g.getWritableFromMicros()), pred);
    }

    // ------------------------------------------------------------------------------------------------ admin view

    public static org.leasehold.wire.proto.NameStatus status(NameStatus s) {
        org.leasehold.wire.proto.NameStatus.Builder b = org.leasehold.wire.proto.NameStatus.newBuilder()
                .setName(s.name()).setGeneration(s.generation()).setFloorMicros(Micros.of(s.floor()))
                .setWritableFromMicros(Micros.of(s.writableFrom()));
        for (HolderStatus h : s.holders()) {
            org.leasehold.wire.proto.HolderStatus.Builder hb = org.leasehold.wire.proto.HolderStatus.newBuilder()
                    .setHolder(holder(h.holder())).setMode(mode(h.mode())).setKind(kind(h.kind()))
                    .setGeneration(h.generation()).setCorrelationId(id(h.correlationId()))
                    .setGrantedAtMicros(Micros.of(h.grantedAt())).setDeadlineMicros(Micros.of(h.deadline()));
            if (h.inDoubtUntil() != null) {
                hb.setInDoubtUntilMicros(Micros.of(h.inDoubtUntil()));
            }
            b.addHolders(hb);
        }
        for (WaiterStatus w : s.waiters()) {
            b.addWaiters(org.leasehold.wire.proto.WaiterStatus.newBuilder().setHolder(holder(w.holder()))
                    .setMode(mode(w.mode())).setKind(kind(w.kind())).addAllNames(w.names())
                    .setSinceMicros(Micros.of(w.since())).setWaitUntilMicros(Micros.of(w.waitUntil())));
        }
        for (MetadataEntry e : s.history()) {
            org.leasehold.wire.proto.MetadataEntry.Builder eb = org.leasehold.wire.proto.MetadataEntry.newBuilder()
                    .setCorrelationId(id(e.correlationId())).setGeneration(e.generation()).setHolder(holder(e.holder()))
                    .setAtMicros(Micros.of(e.at()));
            if (e.ending() != null) {
                eb.setEnding(ending(e.ending()));
            }
            if (e.watermark() != null) {
                eb.setWatermarkMicros(Micros.of(e.watermark()));
            }
            if (e.metadata() != null) {
                eb.setMetadata(e.metadata());
            }
            b.addHistory(eb);
        }
        return b.build();
    }

    public static NameStatus status(org.leasehold.wire.proto.NameStatus s) {
        List<HolderStatus> holders = new ArrayList<>(s.getHoldersCount());
        for (org.leasehold.wire.proto.HolderStatus h : s.getHoldersList()) {
            holders.add(new HolderStatus(holder(h.getHolder()), mode(h.getMode()), kind(h.getKind()), h.getGeneration(),
                    id(h.getCorrelationId()), instant(h.getGrantedAtMicros()), instant(h.getDeadlineMicros()),
                    h.hasInDoubtUntilMicros() ? instant(h.getInDoubtUntilMicros()) : null));
        }
        List<WaiterStatus> waiters = new ArrayList<>(s.getWaitersCount());
        for (org.leasehold.wire.proto.WaiterStatus w : s.getWaitersList()) {
            waiters.add(new WaiterStatus(holder(w.getHolder()), mode(w.getMode()), kind(w.getKind()),
                    List.copyOf(w.getNamesList()), instant(w.getSinceMicros()), instant(w.getWaitUntilMicros())));
        }
        List<MetadataEntry> history = new ArrayList<>(s.getHistoryCount());
        for (org.leasehold.wire.proto.MetadataEntry e : s.getHistoryList()) {
            history.add(new MetadataEntry(id(e.getCorrelationId()), e.getGeneration(), holder(e.getHolder()),
                    e.hasEnding() ? ending(e.getEnding()) : null, instant(e.getAtMicros()),
                    e.hasWatermarkMicros() ? instant(e.getWatermarkMicros()) : null,
                    e.hasMetadata() ? e.getMetadata() : null));
        }
        return new NameStatus(s.getName(), s.getGeneration(), instant(s.getFloorMicros()),
                instant(s.getWritableFromMicros()), holders, waiters, history);
    }

    // ------------------------------------------------------------------------------------------------ errors

    /** The error on the wire for a refused call; the subclass decides the kind and its fields. */
    public static LeaseError error(LeaseException e) {
        LeaseError.Builder b = LeaseError.newBuilder().setMessage(e.getMessage() == null ? e.toString() : e.getMessage());
        if (e instanceof InvalidLeaseRequestException x) {
            b.setKind(LeaseError.Kind.INVALID).setReason(x.reason() == null ? "" : x.reason().name());
        } else if (e instanceof LeaseBusyException x) {
            b.setKind(LeaseError.Kind.BUSY).setName(nullToEmpty(x.name()));
            if (x.heldUntil() != null) {
                b.setHeldUntilMicros(Micros.of(x.heldUntil()));
            }
        } else if (e instanceof LeaseBrokenException x) {
            b.setKind(LeaseError.Kind.BROKEN).setName(nullToEmpty(x.name()));
        } else if (e instanceof LeaseExpiredException x) {
            b.setKind(LeaseError.Kind.EXPIRED);
            if (x.deadline() != null) {
                b.setDeadlineMicros(Micros.of(x.deadline()));
            }
        } else if (e instanceof StaleLeaseException) {
            b.setKind(LeaseError.Kind.STALE);
        } else if (e instanceof LeaseServiceUnavailableException x) {
            b.setKind(LeaseError.Kind.UNAVAILABLE);
            if (x.availableAt() != null) {
                b.setAvailableAtMicros(Micros.of(x.availableAt()));
            }
        } else if (e instanceof LeasePermissionDeniedException x) {
            b.setKind(LeaseError.Kind.PERMISSION_DENIED).setPrincipal(nullToEmpty(x.principal()))
                    .setName(nullToEmpty(x.name())).setPermission(nullToEmpty(x.permission()));
        } else {
            throw new IllegalArgumentException("no wire form for " + e.getClass().getName() + ": " + e.getMessage());
        }
        return b.build();
    }

    /** The exception a wire error stands for, with the server's message (prefixed by where it came from). */
    public static LeaseException exception(LeaseError e, String server) {
        String message = e.getMessage() + " [server " + server + "]";
        return switch (e.getKind()) {
            case INVALID -> invalid(e, message);
            case BUSY -> new LeaseBusyException(emptyToNull(e.getName()),
                    e.hasHeldUntilMicros() ? instant(e.getHeldUntilMicros()) : null, message);
            case BROKEN -> new LeaseBrokenException(emptyToNull(e.getName()), message);
            case EXPIRED -> new LeaseExpiredException(e.hasDeadlineMicros() ? instant(e.getDeadlineMicros()) : null, message);
            case STALE -> new StaleLeaseException(message);
            case UNAVAILABLE -> new LeaseServiceUnavailableException(
                    e.hasAvailableAtMicros() ? instant(e.getAvailableAtMicros()) : null, message);
            case PERMISSION_DENIED -> new LeasePermissionDeniedException(emptyToNull(e.getPrincipal()),
                    emptyToNull(e.getName()), emptyToNull(e.getPermission()), message);
            default -> new LeaseException("the server answered with an error kind this client does not know ("
                    + e.getKindValue() + "): " + message);
        };
    }

    private static LeaseException invalid(LeaseError e, String message) {
        Reason reason;
        try {
            reason = Reason.valueOf(e.getReason());
        } catch (IllegalArgumentException unknown) {
            return new LeaseException("the server refused the request for a reason this client does not know ("
                    + e.getReason() + "): " + message);
        }
        return new InvalidLeaseRequestException(reason, message);
    }

    private static String nullToEmpty(String s) {
        return s == null ? "" : s;
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
