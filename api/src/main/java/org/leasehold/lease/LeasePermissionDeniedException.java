package org.leasehold.lease;

/**
 * The lease service refused the call for who is asking: the caller could not be authenticated, or the access
 * control list gives its principal no right to do this to that name. Nothing was granted or changed. Retrying with
 * the same identity fails again: fix the credentials or the ACL.
 */
public class LeasePermissionDeniedException extends LeaseException {
    private static final long serialVersionUID = 1L;

    private final String principal;
    private final String name;
    private final String permission;

    public LeasePermissionDeniedException(String principal, String name, String permission, String message) {
        super(message);
        this.principal = principal;
        this.name = name;
        this.permission = permission;
    }

    /** Who the service took the caller for, or null if it could not authenticate the caller. */
    public String principal() {
        return principal;
    }

    /** The lease name (or prefix, for the admin view) the call concerned, or null. */
    public String name() {
        return name;
    }

    /** The missing permission ({@code lease}, {@code check}, {@code inspect}), or null if unauthenticated. */
    public String permission() {
        return permission;
    }
}
