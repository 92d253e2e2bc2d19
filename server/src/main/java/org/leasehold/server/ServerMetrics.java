package org.leasehold.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.DoubleSupplier;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

import io.prometheus.metrics.core.datapoints.CounterDataPoint;
import io.prometheus.metrics.core.datapoints.DistributionDataPoint;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import org.leasehold.audit.AuditSigner;

/**
 * The server's metrics, kept by the Prometheus Java client and written in its text format: lease operations by
 * outcome, their latency, how long granted waiters waited, waiting acquisitions, connections and refused calls.
 */
final class ServerMetrics {
    private static final double[] LATENCY_BOUNDS = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
        0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

    final PrometheusRegistry registry = new PrometheusRegistry();
    /** Every lease operation, by operation and outcome (granted, busy, invalid, unavailable, denied, ...). */
    final Counter ops = Counter.builder().name("leasehold_ops_total")
            .help("Lease operations answered, by operation and outcome").labelNames("op", "outcome").register(registry);
    final Histogram latency = Histogram.builder().name("leasehold_op_duration_seconds")
            .help("Time from receiving a lease operation to answering it (including any wait)").labelNames("op")
            .classicOnly().classicUpperBounds(LATENCY_BOUNDS).register(registry);
    final Histogram waits = Histogram.builder().name("leasehold_acquire_wait_seconds")
            .help("How long acquisitions that had to wait waited, by outcome").labelNames("outcome")
            .classicOnly().classicUpperBounds(LATENCY_BOUNDS).register(registry);
    /** Where {@code leasehold_waiting_acquisitions} reads the waiting acquisitions: the counter the limit checks. */
    private volatile IntSupplier waitingNow = () -> 0;
    final GaugeWithCallback waiting = GaugeWithCallback.builder().name("leasehold_waiting_acquisitions")
            .help("Acquisitions waiting on the server now").callback(c -> c.call(waitingNow.getAsInt())).register(registry);
    final Gauge connections = Gauge.builder().name("leasehold_connections")
            .help("Client connections (sessions) open now").register(registry);
    final Counter socketConnections = Counter.builder().name("leasehold_socket_connections_opened")
            .help("Connections accepted on the socket transport (--socket-listen)").register(registry);
    final Counter refused = Counter.builder().name("leasehold_refused_calls_total")
            .help("Calls refused before reaching the lease engine, by reason").labelNames("reason").register(registry);
    final Counter spinWaits = Counter.builder().name("leasehold_socket_spin_waits_total")
            .help("Active waits of socket-transport connection threads for the next request (--socket-spin-wait), by "
                    + "outcome: hit (it came while waiting), miss (the wait ended and the thread blocked), busy (no wait: the "
                    + "last read brought several requests' frames, so the thread blocked at once)")
            .labelNames("outcome").register(registry);
    /** The data points of {@link #spinWaits}, looked up once. */
    final CounterDataPoint spinHits = spinWaits.labelValues("hit");
    final CounterDataPoint spinMisses = spinWaits.labelValues("miss");
    final CounterDataPoint spinSkips = spinWaits.labelValues("busy");
    final Gauge quiet = Gauge.builder().name("leasehold_quiet_period")
            .help("1 while the server grants nothing after its start (quiet period), else 0").register(registry);

    private final PrometheusTextFormatWriter writer = new PrometheusTextFormatWriter(false);
    /** The data points of {@link #ops} and {@link #latency} by label, looked up without allocating on every call. */
    private final Map<String, Map<String, CounterDataPoint>> opCounts = new ConcurrentHashMap<>();
    private final Map<String, DistributionDataPoint> opLatencies = new ConcurrentHashMap<>();

    /**
     * Registers {@code leasehold_clock_behind_seconds}, read from {@code seconds} at each scrape: how far the clock is
     * behind the time mark the server's last incarnation recorded (0 once it has caught up).
     */
    void clockBehind(DoubleSupplier seconds) {
        GaugeWithCallback.builder().name("leasehold_clock_behind_seconds")
                .help("How far the clock is behind the time mark of the server's last incarnation (a clock that "
                        + "stepped back across a restart); grants wait until it has passed the mark, then 0")
                .callback(cb -> cb.call(seconds.getAsDouble())).register(registry);
    }

    /**
     * Registers the signer's metrics, read from {@code counts} at each scrape (only a server that signs has them):
     * {@code leasehold_signer_batches_total}, {@code leasehold_signer_statements_total} (witnesses and signed times),
     * {@code leasehold_signer_hurried_batches_total} (signed before their linger ended because a caller waited),
     * {@code leasehold_signer_queue_full_waits_total} (grants that waited for room in the signer's queue) and the
     * gauge {@code leasehold_signer_queued} (statements waiting to be signed now).
     */
    void signer(Supplier<AuditSigner.Counts> counts) {
        CounterWithCallback.builder().name("leasehold_signer_batches")
                .help("Merkle batches of statements signed (one Ed25519 signature each)")
                .callback(cb -> cb.call(counts.get().batches())).register(registry);
        CounterWithCallback.builder().name("leasehold_signer_statements")
                .help("Statements signed: lease witnesses and signed times")
                .callback(cb -> cb.call(counts.get().statements())).register(registry);
        CounterWithCallback.builder().name("leasehold_signer_hurried_batches")
                .help("Batches signed before the end of their linger because a caller waited for a proof")
                .callback(cb -> cb.call(counts.get().hurriedBatches())).register(registry);
        CounterWithCallback.builder().name("leasehold_signer_queue_full_waits")
                .help("Submissions that found the signer's queue full and waited for room (signing falls behind)")
                .callback(cb -> cb.call(counts.get().queueFullWaits())).register(registry);
        GaugeWithCallback.builder().name("leasehold_signer_queued")
                .help("Statements waiting to be signed now")
                .callback(cb -> cb.call(counts.get().queued())).register(registry);
    }

    /** Makes {@code leasehold_waiting_acquisitions} read {@code now} (the count that {@code --max-waiters} limits). */
    void waitingFrom(IntSupplier now) {
        waitingNow = now;
    }

    /** Counts one answered operation and its latency. */
    void answered(String op, String outcome, double seconds) {
        Map<String, CounterDataPoint> byOutcome = opCounts.get(op);
        if (byOutcome == null) {
            byOutcome = opCounts.computeIfAbsent(op, k -> new ConcurrentHashMap<>());
        }
        CounterDataPoint count = byOutcome.get(outcome);
        if (count == null) {
            count = byOutcome.computeIfAbsent(outcome, o -> ops.labelValues(op, o));
        }
        count.inc();
        DistributionDataPoint l = opLatencies.get(op);
        if (l == null) {
            l = opLatencies.computeIfAbsent(op, o -> latency.labelValues(o));
        }
        l.observe(seconds);
    }

    /** The current metrics in the Prometheus text format. */
    byte[] scrape() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(8192);
        writer.write(out, registry.scrape());
        return out.toByteArray();
    }

    String contentType() {
        return PrometheusTextFormatWriter.CONTENT_TYPE;
    }
}
