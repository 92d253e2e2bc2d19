package org.leasehold.bag;

import java.time.Instant;
import java.util.Objects;
import java.util.Set;

/**
 * What to read from one log: messages with {@code from <= timestamp < to}, optionally only those written under one
 * of {@code leaseNames}.
 *
 * @param log             the log
 * @param from            the first timestamp included, or null for the beginning of the log
 * @param to              the first timestamp excluded, or null for no end
 * @param leaseNames      only messages written under at least one of these names; empty for every message
 * @param skipUnreadable  report corrupt records and unknown versions as {@link ReadProblem}s and skip the rest of
 *                        their data file, instead of failing the read
 * @param includeUnsealed also read buckets that are not sealed yet, marking their messages tentative
 */
public record ReadRequest(String log, Instant from, Instant to, Set<String> leaseNames, boolean skipUnreadable,
        boolean includeUnsealed) {

    public ReadRequest {
        Objects.requireNonNull(log, "ReadRequest.log");
        leaseNames = leaseNames == null ? Set.of() : Set.copyOf(leaseNames);
    }

    /** Everything in {@code log}, sealed and tentative, failing on unreadable records. */
    public static ReadRequest all(String log) {
        return new ReadRequest(log, null, null, Set.of(), false, true);
    }

    /** The same request restricted to {@code [from, to)} (either may be null). */
    public ReadRequest between(Instant from, Instant to) {
        return new ReadRequest(log, from, to, leaseNames, skipUnreadable, includeUnsealed);
    }

    /** The same request restricted to messages under at least one of {@code names}. */
    public ReadRequest underAnyOf(Set<String> names) {
        return new ReadRequest(log, from, to, names, skipUnreadable, includeUnsealed);
    }

    /** The same request skipping (and reporting) unreadable records instead of failing. */
    public ReadRequest skippingUnreadable() {
        return new ReadRequest(log, from, to, leaseNames, true, includeUnsealed);
    }

    /** The same request reading sealed buckets only. */
    public ReadRequest sealedOnly() {
        return new ReadRequest(log, from, to, leaseNames, skipUnreadable, false);
    }
}
