package org.leasehold.adapter;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.leasehold.lease.LeaseException;
import org.leasehold.remote.ClockOffset;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.time.TimeSource;

/**
 * In remote mode, holds the adapter to the bound it was configured with: every lease server's clock within
 * {@code MaxClockErrorMillis} of this server's. Lease deadlines and floors are in the lease server's time, while this
 * server stamps its messages and judges deadlines by its own clock; the grace period covers a disagreement up to that
 * bound and no more. So while a server's measured offset, plus the error of the measurement, is beyond the bound, the
 * adapter takes no lease and votes no transaction through: it says so instead, naming the server, the offset and what
 * to do. A disagreement is measured once more before it refuses (at most once a second per server, so that an
 * unreachable server does not cost every acquisition a round of calls), so one slow sample does not stop work.
 *
 * <p>In embedded mode the lease service reads this server's clock, and there is nothing to check.
 */
final class ClockCheck {
    private static final System.Logger LOG = System.getLogger(ClockCheck.class.getName());

    /** How often a server whose clock is out of bounds is measured again, at most. */
    private static final long REMEASURE_MICROS = 1_000_000L;

    private final RemoteLeaseService remote;
    private final Duration bound;
    private final AdapterMetrics metrics;
    private final TimeSource time;
    private final AtomicBoolean refusing = new AtomicBoolean();
    private final Map<String, Long> measuredAgainAt = new ConcurrentHashMap<>();

    private ClockCheck(RemoteLeaseService remote, Duration bound, AdapterMetrics metrics, TimeSource time) {
        this.remote = remote;
        this.bound = bound;
        this.metrics = metrics;
        this.time = time;
    }

    /** Nothing to check: the embedded lease service runs on this server's clock. */
    static ClockCheck none() {
        return new ClockCheck(null, Duration.ZERO, null, null);
    }

    /** Checks the servers of {@code remote} against {@code maxClockError}, measuring again on {@code time}. */
    static ClockCheck of(RemoteLeaseService remote, Duration maxClockError, AdapterMetrics metrics, TimeSource time) {
        return new ClockCheck(remote, maxClockError, metrics, time);
    }

    /**
     * Null while every lease server's clock is within the bound of this server's; otherwise why not, and what to do,
     * for the operator. May measure a server's clock once more (one call) before answering.
     */
    String problem() {
        if (remote == null) {
            return null;
        }
        String problem = null;
        for (Map.Entry<String, ClockOffset> e : remote.clockOffsets().entrySet()) {
            if (!within(e.getValue())) {
                problem = remeasured(e.getKey(), e.getValue());
                if (problem != null) {
                    break;
                }
            }
        }
        if (problem == null) {
            if (refusing.compareAndSet(true, false)) {
                LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4402 every lease server''s clock is within {0} ms of this "
                        + "server''s again: leases are taken again", bound.toMillis());
            }
            return null;
        }
        metrics.clockRefusal();
        if (refusing.compareAndSet(false, true)) {
            LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4401 {0}", problem);
        }
        return problem;
    }

    /**
     * Like {@link #problem()} for a health check: null while every lease server's clock, as last measured, is within
     * the bound; otherwise why not. Measures nothing, counts no refusal and logs nothing.
     */
    String status() {
        if (remote == null) {
            return null;
        }
        for (Map.Entry<String, ClockOffset> e : remote.clockOffsets().entrySet()) {
            if (!within(e.getValue())) {
                return beyond(e.getKey(), e.getValue());
            }
        }
        return null;
    }

    private boolean within(ClockOffset o) {
        return o.offset().abs().plus(o.errorBound()).compareTo(bound) <= 0;
    }

    private String remeasured(String address, ClockOffset last) {
        long now = time.nowMicros();
        Long previous = measuredAgainAt.get(address);
        if (previous != null && now - previous < REMEASURE_MICROS) {
            return beyond(address, last);
        }
        measuredAgainAt.put(address, now);
        ClockOffset o;
        try {
            o = remote.measureClockOffset(address);
        } catch (LeaseException e) {
            return "the clock of lease server " + address + " cannot be measured (" + e.getMessage() + "), and its last "
                    + "measurement (" + describe(last) + ") does not show it within MaxClockErrorMillis ("
                    + bound.toMillis() + " ms) of this server's clock: no lease is taken and no transaction is prepared "
                    + "until it answers";
        }
        return within(o) ? null : beyond(address, o);
    }

    private String beyond(String address, ClockOffset o) {
        if (unmeasured(o)) {
            return "the clock of lease server " + address + " is not measured yet (the server has not answered): no "
                    + "lease is taken and no transaction is prepared until it answers";
        }
        return "the clock of lease server " + address + " is " + describe(o) + ", beyond MaxClockErrorMillis ("
                + bound.toMillis() + " ms): its lease deadlines and this server's time stamps could disagree by more "
                + "than the grace period covers, so no lease is taken and no transaction is prepared. Synchronize the "
                + "clocks of both machines (NTP), or raise MaxClockErrorMillis (and GraceMillis above it, on the lease "
                + "server too) if the disagreement is expected";
    }

    private static boolean unmeasured(ClockOffset o) {
        return o.errorBound().compareTo(Duration.ofDays(365)) > 0;
    }

    private static String describe(ClockOffset o) {
        if (unmeasured(o)) {
            return "not measured yet";
        }
        long micros = o.offset().toNanos() / 1_000L;
        return String.format(java.util.Locale.ROOT, "%.3f ms %s this server's (measured ± %.3f ms, at %s)",
                Math.abs(micros) / 1000.0, micros >= 0 ? "ahead of" : "behind", o.errorBound().toNanos() / 1e6,
                o.measuredAt());
    }
}
