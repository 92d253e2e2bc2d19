package org.leasehold.lease;

import java.time.Instant;
import java.util.List;

/**
 * What the service knows of one name, for operators (the admin view).
 *
 * @param name         the lease name
 * @param generation   the last generation granted
 * @param floor        the floor a new holder would get now
 * @param writableFrom when a new holder could write, after an unrelinquished expiry
 * @param holders      current holders
 * @param waiters      queued requesters, in queue order
 * @param history      recent entries, oldest first
 */
public record NameStatus(String name, long generation, Instant floor, Instant writableFrom, List<HolderStatus> holders,
        List<WaiterStatus> waiters, List<MetadataEntry> history) {
}
