package org.leasehold.lease;

/** The request itself is wrong; retrying it unchanged will fail again. Nothing was granted or changed. */
public class InvalidLeaseRequestException extends LeaseException {
    private static final long serialVersionUID = 1L;

    /** What was wrong, for programs (the message is for people). */
    public enum Reason {
        NO_NAMES,
        EMPTY_NAME,
        NAME_TOO_LONG,
        NAME_HAS_CONTROL_CHARACTER,
        NAME_HAS_BAD_SEGMENT,
        NAME_INVALID_UNICODE,
        DUPLICATE_NAME,
        TOO_MANY_NAMES,
        DEADLINE_IN_PAST,
        INVALID_LEASE_TIME,
        INVALID_WAIT,
        INVALID_PERMITS,
        PERMITS_MISMATCH,
        WATERMARK_OUT_OF_RANGE,
        METADATA_TOO_LONG,
        WATERMARK_ON_TENTATIVE,
        WRONG_SERVICE,
        NULL_ARGUMENT,
        /** A number of a request on the wire is outside the range its field accepts (the message names both). */
        OUT_OF_RANGE,
        /** A request on a lease server's session reuses the id of a request of that session still open. */
        DUPLICATE_REQUEST_ID,
        /** The operation needs a full lease (one that may be written under), and the lease is tentative. */
        NOT_FULL,
        /**
         * The holder's process or owner, or the request's principal, is longer than a lease's witness holds (1,024
         * bytes of UTF-8 each).
         */
        IDENTITY_TOO_LONG
    }

    private final Reason reason;

    public InvalidLeaseRequestException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
