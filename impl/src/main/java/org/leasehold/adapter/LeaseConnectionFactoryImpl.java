package org.leasehold.adapter;

import java.time.Instant;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

import javax.naming.NamingException;
import javax.naming.Reference;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ConnectionManager;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.connector.AdapterStatus;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.InvalidLeaseRequestException;
import org.leasehold.lease.SessionListener;

/** The connection factory an application looks up; connections come from the container's connection manager. */
public final class LeaseConnectionFactoryImpl implements LeaseConnectionFactory {
    private static final long serialVersionUID = 1L;

    private final LeaseholdManagedConnectionFactory mcf;
    private final transient ConnectionManager manager;
    private Reference reference;

    LeaseConnectionFactoryImpl(LeaseholdManagedConnectionFactory mcf, ConnectionManager manager) {
        this.mcf = mcf;
        this.manager = manager;
    }

    @Override
    public LeaseConnection getConnection() throws LeaseholdException {
        try {
            return (LeaseConnection) manager.allocateConnection(mcf, null);
        } catch (ResourceException e) {
            Throwable cause = e.getCause() instanceof LeaseholdException ? e.getCause() : e;
            if (cause instanceof LeaseholdException le) {
                throw le;
            }
            String reason = adapterReason(e);
            throw new ConnectorException("no Leasehold connection could be allocated: " + reason
                    + (reason.equals(e.getMessage()) ? "" : " (" + e.getMessage() + ")"), e);
        }
    }

    /**
     * The innermost explanation in {@code e}'s chain. A container wraps the adapter's own exception (a runtime that
     * could not start, because another server owns the log, say) in one of its own ("IJ000453: Unable to get managed
     * connection for ..."); the adapter's is the one that says what happened and what to do.
     */
    private static String adapterReason(ResourceException e) {
        String found = String.valueOf(e.getMessage());
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        for (Throwable t = e.getCause(); t != null && seen.add(t); t = t.getCause()) {
            if (t instanceof ResourceException && t.getMessage() != null) {
                found = t.getMessage();
            }
        }
        return found;
    }

    @Override
    public void addSessionListener(SessionListener listener) throws LeaseholdException {
        if (listener == null) {
            throw new InvalidLeaseRequestException(InvalidLeaseRequestException.Reason.NULL_ARGUMENT,
                    "addSessionListener needs a listener, not null");
        }
        events().add(listener);
    }

    @Override
    public boolean removeSessionListener(SessionListener listener) throws LeaseholdException {
        return listener != null && events().remove(listener);
    }

    private SessionEvents events() throws ConnectorException {
        try {
            return mcf.runtime().sessionEvents();
        } catch (ResourceException e) {
            throw new ConnectorException("the Leasehold adapter is not running for this connection factory, so there "
                    + "are no session events to subscribe to: " + e.getMessage(), e);
        }
    }

    @Override
    public void registerView(ViewDefinition<?> definition) throws LeaseholdException {
        if (definition == null) {
            throw new IllegalArgumentException("registerView needs a view definition, not null");
        }
        views("register view '" + definition.name() + "'").register(definition);
    }

    @Override
    public boolean unregisterView(ViewDefinition<?> definition) throws LeaseholdException {
        return definition != null && views("unregister view '" + definition.name() + "'").unregister(definition);
    }

    @Override
    public Instant buildView(String name) throws LeaseholdException {
        return views("build view '" + name + "'").build(name);
    }

    private AdapterViews views(String what) throws ConnectorException {
        try {
            return mcf.runtime().views();
        } catch (ResourceException e) {
            throw new ConnectorException("cannot " + what + ": the Leasehold adapter is not running for this connection "
                    + "factory: " + adapterReason(e), e);
        }
    }

    @Override
    public AdapterStatus status() {
        String log = mcf.getLog();
        String service = AdapterConfig.shown(mcf.getLeaseService());
        try {
            AdapterConfig c = mcf.config();
            log = c.log();
            service = c.leaseServiceShown();
            return mcf.runtime().status();
        } catch (ResourceException | RuntimeException e) {
            String reason = e instanceof ResourceException re ? adapterReason(re) : e.toString();
            return new AdapterStatus(log, null, service,
                    List.of(new AdapterStatus.Check(AdapterStatus.RUNTIME, false, "the adapter cannot serve this "
                            + "connection factory: " + reason)), null);
        }
    }

    @Override
    public void setReference(Reference reference) {
        this.reference = reference;
    }

    @Override
    public Reference getReference() throws NamingException {
        return reference;
    }
}
