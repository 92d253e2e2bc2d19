package org.leasehold.adapter;

import java.nio.charset.StandardCharsets;
import java.security.Principal;
import java.util.Set;

import javax.security.auth.Subject;

import jakarta.resource.spi.ManagedConnectionFactory;
import jakarta.resource.spi.security.PasswordCredential;

import org.leasehold.audit.Witness;

/**
 * The principal a connection is taken for, from the {@link Subject} the container passes with container-managed
 * sign-on ({@code res-auth} Container, JCA's security contract): the user name of the {@link PasswordCredential} it
 * holds for this adapter's connection factory (the resource principal the container mapped the caller to), else its
 * principal if it holds exactly one. Several principals (a caller and its groups, in no order the contract defines)
 * and no Subject (application-managed sign-on, or none configured) give none: the lease's witnesses then name no
 * principal, rather than a guess. A principal longer than a witness holds refuses the connection, saying so.
 */
final class CallerPrincipal {
    private CallerPrincipal() {
    }

    static String of(Subject subject, ManagedConnectionFactory factory) throws jakarta.resource.spi.SecurityException {
        String name = named(subject, factory);
        int bytes = name == null ? 0 : name.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > Witness.MAX_TEXT) {
            throw new jakarta.resource.spi.SecurityException("the principal the container signed this Leasehold "
                    + "connection on as is " + bytes + " bytes of UTF-8; a lease "
                    + "witness names at most " + Witness.MAX_TEXT + ": map callers to a shorter resource principal (the "
                    + "connection pool's security map), or let the application sign on");
        }
        return name;
    }

    private static String named(Subject subject, ManagedConnectionFactory factory) {
        if (subject == null) {
            return null;
        }
        Set<PasswordCredential> credentials;
        try {
            credentials = subject.getPrivateCredentials(PasswordCredential.class);
        } catch (SecurityException e) {
            // A security manager that does not let the adapter read private credentials: the principals still tell.
            credentials = Set.of();
        }
        for (PasswordCredential c : credentials) {
            if ((c.getManagedConnectionFactory() == null || c.getManagedConnectionFactory().equals(factory))
                    && c.getUserName() != null && !c.getUserName().isEmpty()) {
                return c.getUserName();
            }
        }
        Set<Principal> principals = subject.getPrincipals();
        if (principals.size() == 1) {
            String name = principals.iterator().next().getName();
            return name == null || name.isEmpty() ? null : name;
        }
        return null;
    }
}
