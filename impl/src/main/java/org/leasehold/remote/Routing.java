package org.leasehold.remote;

import java.util.ArrayList;
import java.util.List;

/**
 * Which server serves a name: rendezvous hashing over the current set, and over the old set too while a
 * {@link Migration} is open (the old server first: it stays authoritative for generations and fencing).
 */
final class Routing {
    private final List<Endpoint> current;
    private final List<String> currentAddresses;
    private final List<Endpoint> previous;
    private final List<String> previousAddresses;
    private final Migration migration;

    Routing(List<Endpoint> current, List<String> currentAddresses, List<Endpoint> previous,
            List<String> previousAddresses, Migration migration) {
        this.current = List.copyOf(current);
        this.currentAddresses = List.copyOf(currentAddresses);
        this.previous = List.copyOf(previous);
        this.previousAddresses = List.copyOf(previousAddresses);
        this.migration = migration;
    }

    /** True when every name is served by the one server of the current set, with no migration open. */
    boolean singleServer() {
        return current.size() == 1 && !migration.mayBeOpen();
    }

    /** The first server of the current set (whose clock is service time). */
    Endpoint first() {
        return current.get(0);
    }

    /** The servers of {@code name}, primary first (the old one during a migration). */
    List<Endpoint> route(String name) {
        Endpoint cur = current.get(Rendezvous.pick(currentAddresses, name));
        if (!migration.open()) {
            return List.of(cur);
        }
        Endpoint old = previous.get(Rendezvous.pick(previousAddresses, name));
        return old == cur ? List.of(cur) : List.of(old, cur);
    }

    /** The server that answers for {@code name} now: the old set's during a migration. */
    Endpoint primary(String name) {
        return route(name).get(0);
    }

    /** Every server this client uses: the current set, then the old one. */
    List<Endpoint> all() {
        List<Endpoint> all = new ArrayList<>(current);
        for (Endpoint e : previous) {
            if (!all.contains(e)) {
                all.add(e);
            }
        }
        return all;
    }

    /** The servers whose views count now: both sets during a migration, else the current one. */
    List<Endpoint> serving() {
        return migration.open() ? all() : current;
    }

    /** The server at {@code address}. */
    Endpoint endpoint(String address) {
        for (Endpoint e : all()) {
            if (e.address.equals(address)) {
                return e;
            }
        }
        throw new IllegalArgumentException("no server " + address + " in " + currentAddresses + " " + previousAddresses);
    }
}
