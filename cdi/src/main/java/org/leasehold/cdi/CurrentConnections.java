package org.leasehold.cdi;

import java.util.ArrayDeque;
import java.util.Deque;

import org.leasehold.connector.LeaseConnection;

/** The connections of the {@code @Leased} methods running on this thread, innermost first. */
final class CurrentConnections {
    private static final ThreadLocal<Deque<LeaseConnection>> STACK = ThreadLocal.withInitial(ArrayDeque::new);

    private CurrentConnections() {
    }

    static void push(LeaseConnection c) {
        STACK.get().push(c);
    }

    static void pop() {
        Deque<LeaseConnection> d = STACK.get();
        d.pop();
        if (d.isEmpty()) {
            STACK.remove();
        }
    }

    static LeaseConnection current() {
        return STACK.get().peek();
    }
}
