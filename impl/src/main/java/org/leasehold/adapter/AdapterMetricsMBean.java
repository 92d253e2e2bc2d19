package org.leasehold.adapter;

/**
 * The adapter's figures over JMX ({@code org.leasehold:type=Adapter,log=<log>}); the CDI integration also publishes
 * them as MicroProfile Metrics where the server has them. Latencies are in microseconds since the adapter started.
 */
public interface AdapterMetricsMBean {
    long getAcquires();

    long getAcquireFailures();

    long getAcquireWaitP50Micros();

    long getAcquireWaitP99Micros();

    long getAcquireWaitMaxMicros();

    long getPrepares();

    long getPrepareP99Micros();

    long getCommits();

    long getCommitP50Micros();

    long getCommitP99Micros();

    long getReadOnlyBranches();

    long getRollbacks();

    long getHeuristicRollbacks();

    long getHeuristicCommits();

    long getHeuristicHazards();

    long getMessagesWritten();

    long getRenewals();

    long getRenewalFailures();

    long getLeasesLost();
}
