package org.leasehold.connector;

/** The connection handle was closed; get a new one from the factory. */
public class ConnectionClosedException extends ConnectorException {
    private static final long serialVersionUID = 1L;

    public ConnectionClosedException(String message) {
        super(message);
    }
}
