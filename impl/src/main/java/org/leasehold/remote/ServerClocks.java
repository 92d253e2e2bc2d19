package org.leasehold.remote;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

import org.leasehold.lease.LeaseException;
import org.leasehold.wire.ProtoCodec;

/**
 * The measured clock offsets of the servers this client uses, and service time: the first server's clock, estimated
 * from the local clock and its offset (asked each time of a server on a test clock).
 */
final class ServerClocks {
    private static final System.Logger LOG = System.getLogger(ServerClocks.class.getName());

    private final Routing routing;

    ServerClocks(Routing routing) {
        this.routing = routing;
    }

    /** Takes a first sample of every server; one that does not answer is retried by later calls. */
    void sampleAll() {
        for (Endpoint e : routing.all()) {
            try {
                e.syncNow();
            } catch (LeaseException ex) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-3001 lease server {0} did not answer the first "
                        + "clock sample ({1}); "
                        + "calls will retry it", e.address, ex.getMessage());
            }
        }
    }

    /** The first server's offset. */
    ClockOffset first() {
        return routing.first().clockOffset();
    }

    ClockOffset of(String address) {
        return routing.endpoint(address).clockOffset();
    }

    /** Every server's offset by address, as last measured. */
    Map<String, ClockOffset> all() {
        Map<String, ClockOffset> all = new LinkedHashMap<>();
        for (Endpoint e : routing.all()) {
            all.put(e.address, e.clockOffset());
        }
        return all;
    }

    /** Measures the offset of the server at {@code address} now. */
    ClockOffset measure(String address) throws LeaseException {
        Endpoint e = routing.endpoint(address);
        e.syncNow();
        return e.clockOffset();
    }

    /** How early a keeper judges a lease expired: the first server's error bound, at most a second. */
    Duration keeperMargin() {
        Duration bound = first().errorBound();
        return bound.compareTo(Duration.ofSeconds(1)) > 0 ? Duration.ofSeconds(1) : bound;
    }

    /** Service time now. */
    Instant now() {
        Endpoint e = routing.first();
        try {
            if (e.testClock()) {
                return ProtoCodec.instant(e.fetchInfo().getNowMicros());
            }
            return e.estimatedNow();
        } catch (LeaseException ex) {
            throw new RemoteCallFailedException("cannot read the time of lease server " + e.address, ex);
        }
    }
}
