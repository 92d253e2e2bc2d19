package org.leasehold.audit;

import org.leasehold.LeaseholdException;

/** Bytes that should hold an audit record (witness, signed time, proof, key file) do not decode as one. */
public final class AuditFormatException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    public AuditFormatException(String message) {
        super(message);
    }

    public AuditFormatException(String message, Throwable cause) {
        super(message, cause);
    }
}
