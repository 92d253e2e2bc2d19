package org.leasehold.server;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** What a test opened (servers, clients, clocks, relays), closed after it in the reverse order. Thread-safe. */
final class Closing {
    private final List<AutoCloseable> open = new ArrayList<>();

    /** Closes {@code c} at {@link #closeAll()}; returns it. */
    synchronized <T extends AutoCloseable> T later(T c) {
        open.add(c);
        return c;
    }

    /** Closes {@code c} at {@link #closeAll()}. */
    void add(AutoCloseable c) {
        later(c);
    }

    /** Closes everything, newest first; a failure to close is passed over (the test has nothing more to check). */
    void closeAll() {
        List<AutoCloseable> reversed;
        synchronized (this) {
            reversed = new ArrayList<>(open);
            open.clear();
        }
        Collections.reverse(reversed);
        for (AutoCloseable c : reversed) {
            try {
                c.close();
            } catch (Exception e) {
                // Closing what a test left open: nothing more to check.
            }
        }
    }
}
