package org.leasehold.server;

import java.time.Instant;

import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.wire.ProtoCodec;
import org.leasehold.wire.Protocol;
import org.leasehold.wire.proto.AcquireRequest;
import org.leasehold.wire.proto.LeaseRef;
import org.leasehold.wire.proto.ResetForTestRequest;
import org.leasehold.wire.proto.SessionRequest;

/** Decodes the calls' messages into the engine's values and checks their ids and ranges before anything is done. */
final class RequestChecks {
    private RequestChecks() {
    }

    /** The refusal of a request whose id a waiting acquisition of the same session already has. */
    static InvalidLeaseRequestException duplicateId(long id) {
        return new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.DUPLICATE_REQUEST_ID, "request id "
                + Long.toUnsignedString(id) + " is already taken by a waiting acquisition of this session: nothing was "
                + "done; give every request of a session an id of its own (ids may be reused once answered)");
    }

    /** The refusal of a session message that carries no request this server knows. */
    static InvalidLeaseRequestException unknownRequest(SessionRequest r) {
        return new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                "the session message carries no request this server knows (field " + r.getRequestCase()
                        + "): use a client of protocol version " + Protocol.VERSION);
    }

    /** The acquisition an Acquire message asks for; any field it cannot take is refused. */
    static LeaseRequest acquire(AcquireRequest req) throws InvalidLeaseRequestException {
        try {
            return ProtoCodec.acquire(req);
        } catch (InvalidLeaseRequestException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                    "the Acquire request cannot be decoded: " + e.getMessage());
        }
    }

    /** The held lease a renew, upgrade or release ({@code op}) names. */
    static Lease heldLease(LeaseRef ref, String op) throws InvalidLeaseRequestException {
        try {
            return ProtoCodec.lease(ref, Character.toUpperCase(op.charAt(0)) + op.substring(1));
        } catch (RuntimeException e) {
            throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                    "the " + op + " request cannot be decoded: " + e.getMessage());
        }
    }

    /** The refusal of an Inspect limit below zero, or null when the limit is in range. */
    static InvalidLeaseRequestException inspectLimit(int limit) {
        if (limit >= 0) {
            return null;
        }
        return new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.OUT_OF_RANGE, "the Inspect "
                + "request's limit is " + limit + ", outside its range [0, " + Integer.MAX_VALUE + "]: nothing was "
                + "done; send a value within the range");
    }

    /** The engine settings a ResetForTest asks for, on top of {@code base}. */
    static EngineConfig resetConfig(EngineConfig base, ResetForTestRequest req) throws InvalidLeaseRequestException {
        String type = "ResetForTest";
        InvalidLeaseRequestException.Reason r = InvalidLeaseRequestException.Reason.OUT_OF_RANGE;
        return base.withMaxLeaseDuration(ProtoCodec.durationField(r, type, "max_lease_micros", req.getMaxLeaseMicros()))
                .withGrace(ProtoCodec.durationField(r, type, "grace_micros", req.getGraceMicros()))
                .withQuietPeriod(ProtoCodec.durationField(r, type, "quiet_period_micros", req.getQuietPeriodMicros()))
                .withHistoryPerName(req.getHistoryPerName()).withMaxWaitersPerName(req.getMaxWaitersPerName())
                .validate();
    }

    /** Where a ResetForTest starts the clock, or null to keep it. */
    static Instant resetStart(ResetForTestRequest req) throws InvalidLeaseRequestException {
        return req.hasStartMicros() ? ProtoCodec.instantField("ResetForTest", "start_micros", req.getStartMicros())
                : null;
    }
}
