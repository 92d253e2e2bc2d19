package org.leasehold.connector;

import java.io.Serializable;

import jakarta.resource.Referenceable;

import org.leasehold.LeaseholdException;

/**
 * Hands out {@link LeaseConnection}s of the resource adapter; look it up or inject it by its JNDI name (for example
 * {@code @Resource(lookup = "java:app/leasehold/Leases")}).
 */
public interface LeaseConnectionFactory extends Serializable, Referenceable {

    /** The JNDI name the CDI integration looks up when none is configured. */
    String DEFAULT_JNDI_NAME = "java:app/leasehold/Leases";

    /**
     * A connection for the current unit of work: inside a transaction, it is enlisted in it.
     *
     * @throws ConnectorException the adapter could not provide one (the cause says why)
     */
    LeaseConnection getConnection() throws LeaseholdException;
}
