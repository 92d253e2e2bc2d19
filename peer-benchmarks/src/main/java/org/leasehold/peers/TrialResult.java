package org.leasehold.peers;

import org.HdrHistogram.Histogram;

/**
 * One measured run of one system under one workload.
 *
 * @param system     the system's label
 * @param workload   the workload's label
 * @param run        1-based run number
 * @param cycles     acquire + release cycles completed inside the measured window
 * @param seconds    the measured window
 * @param acquire    acquire latencies of those cycles, in nanoseconds
 * @param errors     failed acquisitions or releases (not counted as cycles)
 * @param firstError the first failure's description, or null
 */
public record TrialResult(String system, String workload, int run, long cycles, double seconds, Histogram acquire,
                          long errors, String firstError) {

    public double cyclesPerSecond() {
        return seconds > 0 ? cycles / seconds : 0;
    }

    /** An acquire latency percentile in microseconds (NaN without samples). */
    public double acquireMicros(double percentile) {
        return micros(acquire, percentile);
    }

    static double micros(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }
}
