package org.leasehold.adapter;

import java.security.Principal;
import java.util.Set;

import javax.security.auth.Subject;

import jakarta.resource.spi.ManagedConnectionFactory;
import jakarta.resource.spi.security.PasswordCredential;

/**
 * The principal a connection is taken for, from the {@link Subject} the container passes with container-managed
 * sign-on ({@code res-auth} Container, JCA's security contract): the user name of the {@link PasswordCredential} it
 * holds for this adapter's connection factory (the resource principal the container mapped the caller to), else its
 * principal if it holds exactly one. Several principals (a caller and its groups, in no order the contract defines)
 * and no Subject (application-managed sign-on, or none configured) give none: the lease's witnesses then name no
 * principal, rather than a guess.
 */
final class CallerPrincipal {
    private CallerPrincipal() {
    }

    static String of(Subject subject, ManagedConnectionFactory factory) {
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
