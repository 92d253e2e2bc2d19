package org.leasehold.lease;

/** Whether a lease may be broken before its deadline. */
public enum LeaseKind {
    /**
     * May be broken at any time by an older requester (wound-wait). The holder must not write under it;
     * it reads, then {@linkplain LeaseService#upgrade upgrades} to {@link #FULL}, which fails cleanly if
     * the lease was broken meanwhile.
     */
    TENTATIVE,
    /** Never broken before its deadline. Writes are allowed under it, with timestamps in {@code (floor, deadline)}. */
    FULL
}
