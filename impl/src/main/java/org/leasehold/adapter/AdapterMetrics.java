package org.leasehold.adapter;

import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.StandardMBean;

import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.leasehold.audit.AuditSigner;
import org.leasehold.connector.AdapterMetricsMBean;

/**
 * Counters and latency histograms of one adapter runtime (HdrHistogram keeps the percentiles), registered as an MBean
 * while the runtime runs.
 */
public final class AdapterMetrics implements AdapterMetricsMBean {
    private static final System.Logger LOG = System.getLogger(AdapterMetrics.class.getName());
    /** The signer's figures where this adapter signs nothing (remote mode). */
    private static final AuditSigner.Counts NO_SIGNER = new AuditSigner.Counts(0, 0, 0, 0, 0);
    private volatile Supplier<List<String>> prepared = List::of;
    private volatile Supplier<List<String>> heuristic = List::of;
    /** The embedded lease service's signer's counts, or null where this adapter signs nothing. */
    private volatile Supplier<AuditSigner.Counts> signer;

    private final LongAdder acquires = new LongAdder();
    private final LongAdder acquireFailures = new LongAdder();
    private final LongAdder prepares = new LongAdder();
    private final LongAdder commits = new LongAdder();
    private final LongAdder onePhaseCommits = new LongAdder();
    private final LongAdder twoPhaseCommits = new LongAdder();
    private final LongAdder readOnly = new LongAdder();
    private final LongAdder rollbacks = new LongAdder();
    private final LongAdder heuristicRollbacks = new LongAdder();
    private final LongAdder heuristicCommits = new LongAdder();
    private final LongAdder heuristicHazards = new LongAdder();
    private final LongAdder messages = new LongAdder();
    private final LongAdder renewals = new LongAdder();
    private final LongAdder renewalFailures = new LongAdder();
    private final LongAdder leasesLost = new LongAdder();
    private final LongAdder sessionJeopardies = new LongAdder();
    private final LongAdder sessionsSafe = new LongAdder();
    private final LongAdder clockRefusals = new LongAdder();
    private final Histogram acquireWait = new ConcurrentHistogram(3_600_000_000L, 2);
    private final Histogram prepare = new ConcurrentHistogram(3_600_000_000L, 2);
    private final Histogram commit = new ConcurrentHistogram(3_600_000_000L, 2);
    private ObjectName name;

    /** Registers the MBean under {@code org.leasehold:type=Adapter,log=<log>,id=<id>}; failures are only logged. */
    void register(String log, String id) {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName n = new ObjectName("org.leasehold:type=Adapter,log=" + ObjectName.quote(log) + ",id="
                    + ObjectName.quote(id));
            if (!server.isRegistered(n)) {
                server.registerMBean(new StandardMBean(this, AdapterMetricsMBean.class), n);
                name = n;
            }
        } catch (JMException | SecurityException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4013 the adapter's metrics MBean could not be registered: {0}",
                    e.toString());
        }
    }

    void unregister() {
        if (name != null) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(name);
            } catch (JMException | SecurityException e) {
                // Already gone: nothing to do.
            }
            name = null;
        }
    }

    void acquired(long waitMicros) {
        acquires.increment();
        acquireWait.recordValue(Math.max(0, waitMicros));
    }

    void acquireFailed() {
        acquireFailures.increment();
    }

    void prepared(long nanos) {
        prepares.increment();
        prepare.recordValue(Math.max(0, nanos / 1_000));
    }

    void committed(long nanos) {
        commits.increment();
        commit.recordValue(Math.max(0, nanos / 1_000));
    }

    /** A one-phase commit that wrote the unit's frame. */
    void onePhaseCommitted() {
        onePhaseCommits.increment();
    }

    /** A second-phase commit that wrote the branch's frame (or found it written, after a restart). */
    void twoPhaseCommitted() {
        twoPhaseCommits.increment();
    }

    void readOnly() {
        readOnly.increment();
    }

    void rolledBack() {
        rollbacks.increment();
    }

    void heuristicRollback() {
        heuristicRollbacks.increment();
    }

    void heuristicCommit() {
        heuristicCommits.increment();
    }

    void heuristicHazard() {
        heuristicHazards.increment();
    }

    void written(int n) {
        messages.add(n);
    }

    void renewed() {
        renewals.increment();
    }

    void renewalFailed() {
        renewalFailures.increment();
    }

    void leaseLost() {
        leasesLost.increment();
    }

    void sessionJeopardy() {
        sessionJeopardies.increment();
    }

    void sessionSafe() {
        sessionsSafe.increment();
    }

    void clockRefusal() {
        clockRefusals.increment();
    }

    @Override
    public long getAcquires() {
        return acquires.sum();
    }

    @Override
    public long getAcquireFailures() {
        return acquireFailures.sum();
    }

    @Override
    public long getAcquireWaitP50Micros() {
        return acquireWait.getValueAtPercentile(50);
    }

    @Override
    public long getAcquireWaitP99Micros() {
        return acquireWait.getValueAtPercentile(99);
    }

    @Override
    public long getAcquireWaitMaxMicros() {
        return acquireWait.getMaxValue();
    }

    @Override
    public long getPrepares() {
        return prepares.sum();
    }

    @Override
    public long getPrepareP99Micros() {
        return prepare.getValueAtPercentile(99);
    }

    @Override
    public long getCommits() {
        return commits.sum();
    }

    @Override
    public long getOnePhaseCommits() {
        return onePhaseCommits.sum();
    }

    @Override
    public long getTwoPhaseCommits() {
        return twoPhaseCommits.sum();
    }

    @Override
    public long getCommitP50Micros() {
        return commit.getValueAtPercentile(50);
    }

    @Override
    public long getCommitP99Micros() {
        return commit.getValueAtPercentile(99);
    }

    @Override
    public long getReadOnlyBranches() {
        return readOnly.sum();
    }

    @Override
    public long getRollbacks() {
        return rollbacks.sum();
    }

    @Override
    public long getHeuristicRollbacks() {
        return heuristicRollbacks.sum();
    }

    @Override
    public long getHeuristicCommits() {
        return heuristicCommits.sum();
    }

    @Override
    public long getHeuristicHazards() {
        return heuristicHazards.sum();
    }

    @Override
    public long getMessagesWritten() {
        return messages.sum();
    }

    @Override
    public long getRenewals() {
        return renewals.sum();
    }

    @Override
    public long getRenewalFailures() {
        return renewalFailures.sum();
    }

    @Override
    public long getLeasesLost() {
        return leasesLost.sum();
    }

    @Override
    public long getSessionJeopardies() {
        return sessionJeopardies.sum();
    }

    @Override
    public long getSessionsSafe() {
        return sessionsSafe.sum();
    }

    @Override
    public long getClockRefusals() {
        return clockRefusals.sum();
    }

    /** Where the signer's figures come from: the embedded lease service's signer. */
    void signer(Supplier<AuditSigner.Counts> counts) {
        signer = counts;
    }

    private AuditSigner.Counts signerCounts() {
        Supplier<AuditSigner.Counts> s = signer;
        return s == null ? NO_SIGNER : s.get();
    }

    @Override
    public long getSignerBatches() {
        return signerCounts().batches();
    }

    @Override
    public long getSignerStatements() {
        return signerCounts().statements();
    }

    @Override
    public long getSignerHurriedBatches() {
        return signerCounts().hurriedBatches();
    }

    @Override
    public long getSignerQueueFullWaits() {
        return signerCounts().queueFullWaits();
    }

    @Override
    public long getSignerQueued() {
        return signerCounts().queued();
    }

    /** Where the branch lists come from: the resource manager's journal. */
    void branches(Supplier<List<String>> prepared, Supplier<List<String>> heuristic) {
        this.prepared = prepared;
        this.heuristic = heuristic;
    }

    @Override
    public String[] getPreparedBranches() {
        return prepared.get().toArray(new String[0]);
    }

    @Override
    public String[] getHeuristicBranches() {
        return heuristic.get().toArray(new String[0]);
    }
}
