package org.leasehold.it.app;

import java.nio.charset.StandardCharsets;

import jakarta.annotation.Resource;
import jakarta.ejb.SessionContext;
import jakarta.ejb.Stateless;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * The principal test's writer (container-managed transactions, REQUIRED) on a log of its own, {@code principal}, through
 * a connection factory whose pool is configured to sign connections on with a resource principal (a WildFly
 * authentication context; a Payara connector security map, which Payara Micro does not apply): each call is one
 * transaction that takes one exclusive lease and appends one message.
 */
@Stateless
public class PrincipalWriterEjb {
    public static final String FACTORY = "eis/leasehold/principal";

    @Resource(lookup = FACTORY)
    private LeaseConnectionFactory leases;
    @Resource
    private SessionContext context;

    /** Takes an exclusive lease on {@code name} and appends {@code text} under it; returns the caller's name. */
    public String record(String name, String text) throws LeaseholdException {
        try (LeaseConnection c = leases.getConnection()) {
            c.acquire(name);
            c.append(text.getBytes(StandardCharsets.UTF_8));
        }
        return context.getCallerPrincipal().getName();
    }
}
