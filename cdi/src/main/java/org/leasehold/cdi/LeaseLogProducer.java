package org.leasehold.cdi;

import java.util.List;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Dependent;
import jakarta.enterprise.inject.Produces;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.ConnectorException;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseLog;
import org.leasehold.lease.Lease;

/** Makes {@link LeaseLog} injectable: it acts on the connection of the innermost running {@code @Leased} method. */
@ApplicationScoped
public class LeaseLogProducer {

    @Produces
    @Dependent
    public LeaseLog leaseLog() {
        return new CurrentLeaseLog();
    }

    /** Delegates every call to the current {@code @Leased} method's connection. */
    static final class CurrentLeaseLog implements LeaseLog {
        private static LeaseConnection current() throws ConnectorException {
            LeaseConnection c = CurrentConnections.current();
            if (c == null) {
                throw new ConnectorException("no @Leased method is running on this thread: annotate the method that "
                        + "appends with @Leased(...), or use a LeaseConnectionFactory directly");
            }
            return c;
        }

        @Override
        public String log() {
            LeaseConnection c = CurrentConnections.current();
            return c == null ? null : c.log();
        }

        @Override
        public void append(byte[]... payloads) throws LeaseholdException {
            current().append(payloads);
        }

        @Override
        public List<Lease> leases() throws LeaseholdException {
            return current().leases();
        }

        @Override
        public MessageStream read(ReadRequest request) throws LeaseholdException {
            return current().read(request);
        }

        @Override
        public <S> ViewState<S> view(ViewDefinition<S> definition) throws LeaseholdException {
            return current().view(definition);
        }
    }
}
