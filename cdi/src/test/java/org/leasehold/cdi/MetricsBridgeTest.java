package org.leasehold.cdi;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class MetricsBridgeTest {
    @Test
    void figureNamesBecomeMetricNames() {
        assertEquals("commit_p99_micros", MetricsBridge.snake("CommitP99Micros"));
        assertEquals("heuristic_rollbacks", MetricsBridge.snake("HeuristicRollbacks"));
        assertEquals("acquire_wait_max_micros", MetricsBridge.snake("AcquireWaitMaxMicros"));
    }
}
