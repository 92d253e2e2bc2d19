package org.leasehold.server;

import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseNames;
import org.leasehold.lease.LeasePermissionDeniedException;
import org.leasehold.server.AccessControl.Permission;
import org.leasehold.wire.proto.LeaseRef;

/**
 * Decides what a principal may do, from the access control list and the principal each grant was granted to, and
 * words every refusal so that it says which rule is missing.
 */
final class LeaseAccess {
    private final AccessControl acl;
    private final GrantOwners owners;

    /**
     * A held lease's reference as decoded and allowed: the lease, and the principal it was granted to when that is
     * another one whose lease an admin releases (else null).
     */
    record Held(Lease lease, String otherOwner) {
    }

    LeaseAccess(AccessControl acl, GrantOwners owners) {
        this.acl = acl;
        this.owners = owners;
    }

    /** The first of {@code names} on which {@code principal} lacks {@code what}, or null if it has it on all. */
    String firstDenied(String principal, Permission what, Iterable<String> names) {
        return acl.firstDenied(principal, what, names);
    }

    boolean allowed(String principal, Permission what, String name) {
        return acl.allowed(principal, what, name);
    }

    /** Whether {@code principal} may inspect every name under {@code prefix}. */
    boolean mayInspectAll(String principal, String prefix) {
        return acl.mayInspectAll(principal, prefix);
    }

    /** Whether {@code principal} may inspect at least some names under {@code prefix}. */
    boolean mayInspectSomeUnder(String principal, String prefix) {
        return acl.mayInspectSomeUnder(principal, prefix);
    }

    LeasePermissionDeniedException denied(String principal, Permission what, String name) {
        return new LeasePermissionDeniedException(principal, name, what.word(), "principal '" + principal
                + "' may not " + what.word() + " '" + LeaseNames.printable(name) + "': no rule of the access control list "
                + acl.source() + " gives it '" + what.word() + "' on that name; ask the operator to add one");
    }

    /** The refusal of {@code op} on a grant that belongs to another principal ({@code owner}). */
    private static LeasePermissionDeniedException notYours(String principal, String op, LeaseGrant g, String owner) {
        String name = LeaseNames.printable(g.name());
        return new LeasePermissionDeniedException(principal, g.name(), op.equals("release") ? "admin" : "lease",
                "principal '" + principal + "' may not " + op + " '" + name + "' generation " + g.generation()
                + ": that lease was granted to principal '" + owner + "', and only the principal a lease was granted "
                + "to may renew, upgrade or release it, whatever holder identity the request names"
                + (op.equals("release") ? " (or a principal with 'admin' permission on every name of the lease may "
                + "release it; ask the operator)" : ""));
    }

    /**
     * A busy answer as {@code principal} may see it: the holders of the name only if it may inspect the name;
     * otherwise "held by another holder" with the latest deadline.
     */
    LeaseException shownTo(String principal, LeaseException e) {
        if (!(e instanceof LeaseBusyException b) || b.name() == null || e.getMessage() == null
                || acl.allowed(principal, Permission.INSPECT, b.name())) {
            return e;
        }
        String name = LeaseNames.printable(b.name());
        String m = e.getMessage();
        if (!m.startsWith("'" + name + "' is held (")) {
            return e;
        }
        int tail = Math.max(m.lastIndexOf("; waited "), m.lastIndexOf("; not waiting"));
        return new LeaseBusyException(b.name(), b.heldUntil(), "'" + name + "' is held by another holder"
                + (b.heldUntil() != null ? " until " + b.heldUntil() : "") + " (the holders are told only to principals "
                + "who may inspect the name)" + (tail >= 0 ? m.substring(tail) : ": retry later, or wait longer"));
    }

    /**
     * Decodes a held lease's reference and checks that {@code principal} may {@code op} it: the ACL gives it
     * {@code lease} on every name, and the lease was granted to it; or, for a release only, the ACL gives it
     * {@code admin} on every name (then it may release another principal's lease).
     */
    Held held(String principal, LeaseRef ref, String op) throws LeaseException {
        Lease lease = RequestChecks.heldLease(ref, op);
        boolean admin = op.equals("release") && !lease.names().isEmpty()
                && acl.firstDenied(principal, Permission.ADMIN, lease.names()) == null;
        if (!admin) {
            String deniedName = acl.firstDenied(principal, Permission.LEASE, lease.names());
            if (deniedName != null) {
                throw denied(principal, Permission.LEASE, deniedName);
            }
        }
        for (LeaseGrant g : lease.grants()) {
            String owner = owners.principalOf(g.name(), g.generation());
            if (owner != null && !owner.equals(principal)) {
                if (!admin) {
                    throw notYours(principal, op, g, owner);
                }
                return new Held(lease, owner);
            }
        }
        return new Held(lease, null);
    }
}
