package org.leasehold.adapter;

import java.util.List;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.ConnectionClosedException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.lease.Lease;

/**
 * The handle an application holds: thin, it delegates to its managed connection, fails once closed, and tells the
 * container when it is closed. Outside a transaction its calls have their own unit of work, ended when it closes.
 */
final class LeaseConnectionImpl implements LeaseConnection {
    private volatile LeaseholdManagedConnection mc;
    private volatile boolean closed;
    /** The principal the container signed this handle on as ({@link CallerPrincipal}), or null. */
    private final String principal;

    LeaseConnectionImpl(LeaseholdManagedConnection mc, String principal) {
        this.mc = mc;
        this.principal = principal;
    }

    String principal() {
        return principal;
    }

    LeaseholdManagedConnection managedConnection() {
        return mc;
    }

    void associate(LeaseholdManagedConnection to) {
        this.mc = to;
    }

    /** The container took the connection back: the handle is dead, and its own unit ends. */
    void invalidate() {
        endOwnUnit();
        closed = true;
    }

    private LeaseholdManagedConnection open() throws ConnectionClosedException {
        LeaseholdManagedConnection m = mc;
        if (closed || m == null) {
            throw new ConnectionClosedException("this Leasehold connection is closed: get a new one from the factory");
        }
        return m;
    }

    @Override
    public String log() {
        return mc.log();
    }

    @Override
    public Lease acquire(String... names) throws LeaseholdException {
        return acquire(LeaseOptions.of(names));
    }

    @Override
    public Lease acquire(LeaseOptions options) throws LeaseholdException {
        return open().acquire(this, options);
    }

    @Override
    public void append(byte[]... payloads) throws LeaseholdException {
        open().append(this, payloads);
    }

    @Override
    public List<Lease> leases() throws LeaseholdException {
        return open().leases(this);
    }

    @Override
    public MessageStream read(ReadRequest request) throws LeaseholdException {
        return open().read(request);
    }

    @Override
    public <S> ViewState<S> view(ViewDefinition<S> definition) throws LeaseholdException {
        return open().view(definition);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        endOwnUnit();
        closed = true;
        LeaseholdManagedConnection m = mc;
        if (m != null) {
            m.closed(this);
        }
    }

    private void endOwnUnit() {
        LeaseholdManagedConnection m = mc;
        if (m != null) {
            m.endOwnUnit(this);
        }
    }
}
