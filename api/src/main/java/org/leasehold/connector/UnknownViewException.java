package org.leasehold.connector;

/** No view is registered under the name asked for; the message lists those that are. */
public class UnknownViewException extends ConnectorException {
    private static final long serialVersionUID = 1L;

    public UnknownViewException(String message) {
        super(message);
    }
}
