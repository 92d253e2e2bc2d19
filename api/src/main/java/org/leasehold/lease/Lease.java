package org.leasehold.lease;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * A granted lease on one or more names, all or nothing, as a value. Operations on it go through the
 * {@link LeaseService} that granted it; {@link HeldLease} wraps one for try-with-resources.
 *
 * @param holder    who holds it
 * @param mode      exclusive, shared or a semaphore permit, on every name
 * @param kind      tentative or full
 * @param grantedAt when the service granted it, in service time
 * @param deadline  the absolute deadline, as granted (requests are clamped to the service's maximum)
 * @param grants    one grant per name, in canonical (sorted) order
 */
public record Lease(HolderId holder, LeaseMode mode, LeaseKind kind, Instant grantedAt, Instant deadline,
        List<LeaseGrant> grants) {

    public Lease {
        grants = List.copyOf(grants);
    }

    /** The names, in canonical order. */
    public List<String> names() {
        List<String> names = new ArrayList<>(grants.size());
        for (LeaseGrant g : grants) {
            names.add(g.name());
        }
        return Collections.unmodifiableList(names);
    }

    /** The grant for {@code name}, or throws {@link IllegalArgumentException} if this lease does not cover it. */
    public LeaseGrant grant(String name) {
        for (LeaseGrant g : grants) {
            if (g.name().equals(name)) {
                return g;
            }
        }
        throw new IllegalArgumentException("lease " + this.describe() + " does not cover the name '" + name + "'");
    }

    /** The highest floor of all names: messages written under this lease need timestamps strictly above it. */
    public Instant floor() {
        Instant max = grants.get(0).floor();
        for (LeaseGrant g : grants) {
            if (g.floor().isAfter(max)) {
                max = g.floor();
            }
        }
        return max;
    }

    /** The latest {@code writableFrom} of all names: no write under this lease before it. */
    public Instant writableFrom() {
        Instant max = grants.get(0).writableFrom();
        for (LeaseGrant g : grants) {
            if (g.writableFrom().isAfter(max)) {
                max = g.writableFrom();
            }
        }
        return max;
    }

    /** A short description for messages: kind, mode, names with generations, and holder. */
    public String describe() {
        StringBuilder sb = new StringBuilder();
        sb.append(kind.name().toLowerCase(java.util.Locale.ROOT)).append(' ').append(mode).append(" lease on ");
        for (int i = 0; i < grants.size(); i++) {
            if (i > 0) {
                sb.append(", ");
            }
            if (i == 3 && grants.size() > 4) {
                sb.append("... (").append(grants.size()).append(" names)");
                break;
            }
            sb.append('\'').append(grants.get(i).name()).append("' gen ").append(grants.get(i).generation());
        }
        return sb.append(" held by ").append(holder).toString();
    }
}
