package org.leasehold.connector;

import org.leasehold.LeaseholdException;

/** The resource adapter could not do what was asked (no connection, bad configuration, a container failure). */
public class ConnectorException extends LeaseholdException {
    private static final long serialVersionUID = 1L;

    public ConnectorException(String message) {
        super(message);
    }

    public ConnectorException(String message, Throwable cause) {
        super(message, cause);
    }
}
