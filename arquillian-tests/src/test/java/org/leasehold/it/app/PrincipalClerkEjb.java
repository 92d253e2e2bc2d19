package org.leasehold.it.app;

import jakarta.annotation.security.DeclareRoles;
import jakarta.annotation.security.PermitAll;
import jakarta.annotation.security.RunAs;
import jakarta.ejb.EJB;
import jakarta.ejb.Stateless;

import org.leasehold.LeaseholdException;

/**
 * Calls {@link PrincipalWriterEjb} as the role {@code ledger-clerk} ({@code @RunAs}), whose principal the test's
 * {@code glassfish-ejb-jar.xml} names ({@code alice}) on Payara: the writer's caller is then an authenticated
 * principal, the one a connector security map would map. Anyone may call it ({@code @PermitAll}: WildFly refuses
 * unauthenticated callers of a bean with security metadata otherwise).
 */
@Stateless
@DeclareRoles(PrincipalClerkEjb.ROLE)
@RunAs(PrincipalClerkEjb.ROLE)
@PermitAll
public class PrincipalClerkEjb {
    public static final String ROLE = "ledger-clerk";

    @EJB
    private PrincipalWriterEjb writer;

    /** {@link PrincipalWriterEjb#record} as the clerk; returns the writer's caller name. */
    public String record(String name, String text) throws LeaseholdException {
        return writer.record(name, text);
    }
}
