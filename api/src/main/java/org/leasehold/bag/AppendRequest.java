package org.leasehold.bag;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Messages to append to one log as one frame: all get the same timestamp and become readable together or not at all.
 *
 * <p>The payload arrays are read while the append call runs (also for {@code appendAsync}, which encodes before it
 * returns); do not change them until then.
 *
 * @param log       the log to append to
 * @param leases    the leases the messages are written under (may be empty: no lease rule applies)
 * @param timestamp the timestamp to use, or null to let the store choose {@code max(floor + 1 µs, now)}
 * @param payloads  one or more payloads, one message each
 */
public record AppendRequest(String log, List<LeaseStamp> leases, Instant timestamp, List<byte[]> payloads) {

    public AppendRequest {
        leases = leases == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(leases));
        payloads = payloads == null ? List.of() : Collections.unmodifiableList(new ArrayList<>(payloads));
    }

    /** Messages under {@code leases}, with a timestamp chosen by the store. */
    public static AppendRequest of(String log, List<LeaseStamp> leases, byte[]... payloads) {
        return new AppendRequest(log, leases, null, Arrays.asList(payloads));
    }

    /** The same request with a caller-chosen timestamp. */
    public AppendRequest at(Instant t) {
        return new AppendRequest(log, leases, Objects.requireNonNull(t, "timestamp"), payloads);
    }
}
