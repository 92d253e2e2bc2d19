package org.leasehold.cdi;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.BeforeDestroyed;
import jakarta.enterprise.context.Initialized;
import jakarta.enterprise.event.Event;
import jakarta.enterprise.event.Observes;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.SessionEvent;
import org.leasehold.lease.SessionListener;

/**
 * Publishes the session events of the application's connection factories as CDI events, so that a bean observes
 * them: {@code void onLeases(@Observes SessionEvent e)}. {@code JEOPARDY} when a renewal of a transaction's leases
 * fails, {@code SAFE} when one succeeds again, {@code EXPIRED} when they are lost. The factory {@code @Leased} uses by
 * default (the MicroProfile Config property {@code leasehold.connection-factory}, else
 * {@link LeaseConnectionFactory#DEFAULT_JNDI_NAME}) is subscribed when the application starts; a factory named in
 * {@code @Leased(factory = ...)} when a {@code @Leased} method first uses it (its leases exist only from then on).
 * All are unsubscribed when the application stops. The event's lease tells which names it is about. Events are fired
 * on the adapter's renewal thread, where no request or session context is active: observe them in
 * application-scoped or dependent beans, and return quickly. An application without the default factory says so
 * once in its log.
 */
@ApplicationScoped
public class SessionEventsBridge {
    private static final System.Logger LOG = System.getLogger(SessionEventsBridge.class.getName());

    @Inject
    Event<SessionEvent> events;

    /** The factories subscribed, by JNDI name. Guarded by {@code this} for changes. */
    private final Map<String, Subscription> subscribed = new ConcurrentHashMap<>();
    /** JNDI names whose subscription failed, logged once. */
    private final Set<String> refused = ConcurrentHashMap.newKeySet();
    private boolean stopped;

    private record Subscription(LeaseConnectionFactory factory, SessionListener listener) {
    }

    void start(@Observes @Initialized(ApplicationScoped.class) Object started) {
        String name = FactoryLookup.jndiName(null);
        try {
            subscribe(name, FactoryLookup.lookup(name));
        } catch (LeaseholdException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-5002 the session events of the default connection factory are "
                    + "not published as CDI events in this application: {0}; factories named in @Leased(factory=...) "
                    + "are subscribed when first used", e.getMessage());
        }
    }

    /**
     * Publishes the session events of {@code factory} (found at {@code jndiName}) from now on, unless they already are;
     * {@code @Leased} calls it on every use. A failure is logged once per name and does not reach the caller: events
     * are an addition to a {@code @Leased} method, not a condition of it.
     */
    void subscribeQuietly(String jndiName, LeaseConnectionFactory factory) {
        if (subscribed.containsKey(jndiName) || refused.contains(jndiName)) {
            return;
        }
        try {
            subscribe(jndiName, factory);
        } catch (LeaseholdException | RuntimeException e) {
            if (refused.add(jndiName)) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5004 the session events of the connection factory at "
                        + "{0} are not published as CDI events: {1}", jndiName, e.getMessage());
            }
        }
    }

    private synchronized void subscribe(String jndiName, LeaseConnectionFactory factory) throws LeaseholdException {
        if (stopped || subscribed.containsKey(jndiName)) {
            return;
        }
        SessionListener l = events::fire;
        factory.addSessionListener(l);
        subscribed.put(jndiName, new Subscription(factory, l));
    }

    void stop(@Observes @BeforeDestroyed(ApplicationScoped.class) Object stopping) {
        List<Map.Entry<String, Subscription>> all;
        synchronized (this) {
            stopped = true;
            all = new ArrayList<>(subscribed.entrySet());
            subscribed.clear();
        }
        for (Map.Entry<String, Subscription> e : all) {
            try {
                e.getValue().factory().removeSessionListener(e.getValue().listener());
            } catch (LeaseholdException | RuntimeException ex) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5003 the application's session listener could not be "
                        + "removed from the connection factory at {0}: {1}", e.getKey(), ex.getMessage());
            }
        }
    }
}
