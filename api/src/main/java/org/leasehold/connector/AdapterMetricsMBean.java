package org.leasehold.connector;

/**
 * The resource adapter's figures, an MBean per log ({@code org.leasehold:type=Adapter,log=<log>,id=<writer>}); the
 * CDI integration also publishes them as MicroProfile Metrics where the server has them. Counts and latency
 * percentiles (microseconds) cover the time since the adapter started.
 */
public interface AdapterMetricsMBean {

    /** The MBean name pattern that matches every adapter's figures. */
    String OBJECT_NAME_PATTERN = "org.leasehold:type=Adapter,*";

    long getAcquires();

    long getAcquireFailures();

    long getAcquireWaitP50Micros();

    long getAcquireWaitP99Micros();

    long getAcquireWaitMaxMicros();

    long getPrepares();

    long getPrepareP99Micros();

    /** Commit calls on branches, whatever their outcome (the latency figures below are theirs). */
    long getCommits();

    /** One-phase commits that wrote their frame: the adapter was the transaction's only resource. */
    long getOnePhaseCommits();

    /** Second-phase commits that wrote their frame (or, after a restart, found it written). */
    long getTwoPhaseCommits();

    long getCommitP50Micros();

    long getCommitP99Micros();

    /** Branches that wrote nothing to the log: read-only at prepare, or a one-phase commit with no message. */
    long getReadOnlyBranches();

    long getRollbacks();

    long getHeuristicRollbacks();

    long getHeuristicCommits();

    long getHeuristicHazards();

    long getMessagesWritten();

    long getRenewals();

    long getRenewalFailures();

    long getLeasesLost();

    /** Units of work whose renewal failed (each told {@code JEOPARDY} once until it recovers or is lost). */
    long getSessionJeopardies();

    /** Units of work whose renewal succeeded again after a failure ({@code SAFE}). */
    long getSessionsSafe();

    /**
     * Acquisitions and prepares refused because a lease server's clock was measured further from this server's than
     * {@code MaxClockErrorMillis} (remote mode; log id {@code LEASEHOLD-4401}).
     */
    long getClockRefusals();

    /**
     * Merkle batches the embedded lease service's signer signed (one Ed25519 signature each), every key since the
     * start together; 0 where this adapter signs nothing (remote mode: the lease server signs, and its metrics say
     * so).
     */
    long getSignerBatches();

    /** Statements (lease witnesses and signed times) the embedded lease service's signer signed; 0 as above. */
    long getSignerStatements();

    /** Batches signed before the end of their linger because a caller (a commit, a time request) waited; 0 as above. */
    long getSignerHurriedBatches();

    /**
     * Grants that found the signer's queue full (32 768 statements) and waited for room: signing falls behind the
     * grants; 0 as above.
     */
    long getSignerQueueFullWaits();

    /** Statements waiting to be signed now; 0 as above. */
    long getSignerQueued();

    /**
     * The branches prepared and not yet decided by the transaction manager, each with when it was prepared and, for
     * one recovered after a restart, whether its leases are held again (embedded mode) or gone.
     */
    String[] getPreparedBranches();

    /**
     * The branches that ended with a heuristic outcome (log ids {@code LEASEHOLD-4201}, {@code -4202}, {@code -4203},
     * {@code -4205}), listed until the transaction manager forgets them.
     */
    String[] getHeuristicBranches();
}
