package org.leasehold.cdi;

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
 * Publishes the session events of the application's connection factory (the one {@code @Leased} uses by default:
 * the MicroProfile Config property {@code leasehold.connection-factory}, else
 * {@link LeaseConnectionFactory#DEFAULT_JNDI_NAME}) as CDI events, so that a bean observes them:
 * {@code void onLeases(@Observes SessionEvent e)}. {@code JEOPARDY} when a renewal of a transaction's leases fails,
 * {@code SAFE} when one succeeds again, {@code EXPIRED} when they are lost. Events are fired on the adapter's renewal
 * thread, where no request or session context is active: observe them in application-scoped or dependent beans, and
 * return quickly. Subscribed when the application starts, unsubscribed when it stops; an application without that
 * connection factory gets no events, and says so once in its log.
 */
@ApplicationScoped
public class SessionEventsBridge {
    private static final System.Logger LOG = System.getLogger(SessionEventsBridge.class.getName());

    @Inject
    Event<SessionEvent> events;

    private LeaseConnectionFactory factory;
    private SessionListener listener;

    void start(@Observes @Initialized(ApplicationScoped.class) Object started) {
        try {
            LeaseConnectionFactory f = FactoryLookup.lookup(null);
            SessionListener l = events::fire;
            f.addSessionListener(l);
            factory = f;
            listener = l;
        } catch (LeaseholdException | RuntimeException e) {
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-5002 the adapter's session events are not published as CDI "
                    + "events in this application: {0}", e.getMessage());
        }
    }

    void stop(@Observes @BeforeDestroyed(ApplicationScoped.class) Object stopping) {
        if (factory == null) {
            return;
        }
        try {
            factory.removeSessionListener(listener);
        } catch (LeaseholdException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5003 the application's session listener could not be "
                    + "removed from the adapter: {0}", e.getMessage());
        }
        factory = null;
    }
}
