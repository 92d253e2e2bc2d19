package org.leasehold.connector;

/** An append needs at least one lease held for the current unit of work; acquire first. Nothing was appended. */
public class NoLeaseHeldException extends ConnectorException {
    private static final long serialVersionUID = 1L;

    public NoLeaseHeldException(String message) {
        super(message);
    }
}
