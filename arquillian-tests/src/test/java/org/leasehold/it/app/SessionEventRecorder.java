package org.leasehold.it.app;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.event.Observes;

import org.leasehold.lease.SessionEvent;

/** An application bean that observes the adapter's session events as CDI events (published by leasehold-cdi). */
@ApplicationScoped
public class SessionEventRecorder {
    private final List<SessionEvent> heard = new CopyOnWriteArrayList<>();

    void on(@Observes SessionEvent event) {
        heard.add(event);
    }

    /** The events heard so far for leases on {@code name}. */
    public List<SessionEvent> about(String name) {
        return heard.stream().filter(e -> e.lease().names().contains(name)).toList();
    }
}
