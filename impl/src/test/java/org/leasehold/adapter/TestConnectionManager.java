package org.leasehold.adapter;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ConnectionEvent;
import jakarta.resource.spi.ConnectionEventListener;
import jakarta.resource.spi.ConnectionManager;
import jakarta.resource.spi.ConnectionRequestInfo;
import jakarta.resource.spi.ManagedConnection;
import jakarta.resource.spi.ManagedConnectionFactory;
import jakarta.transaction.Status;
import jakarta.transaction.Synchronization;
import jakarta.transaction.Transaction;
import jakarta.transaction.TransactionManager;

/**
 * The part of a container's connection manager the adapter relies on: inside a JTA transaction, one managed
 * connection per transaction, its XAResource enlisted once, handles shared; outside one, a managed connection per
 * handle, destroyed when the handle closes.
 */
final class TestConnectionManager implements ConnectionManager {
    private static final long serialVersionUID = 1L;

    private final transient TransactionManager tm;
    private final transient Map<Transaction, ManagedConnection> enlisted = new ConcurrentHashMap<>();

    TestConnectionManager(TransactionManager tm) {
        this.tm = tm;
    }

    @Override
    public Object allocateConnection(ManagedConnectionFactory mcf, ConnectionRequestInfo info) throws ResourceException {
        try {
            Transaction tx = tm.getTransaction();
            if (tx != null && tx.getStatus() == Status.STATUS_ACTIVE) {
                ManagedConnection mc = enlisted.get(tx);
                if (mc == null) {
                    ManagedConnection created = mcf.createManagedConnection(null, info);
                    tx.enlistResource(created.getXAResource());
                    enlisted.put(tx, created);
                    tx.registerSynchronization(new Synchronization() {
                        @Override
                        public void beforeCompletion() {
                            // Nothing before completion.
                        }

                        @Override
                        public void afterCompletion(int status) {
                            enlisted.remove(tx);
                            try {
                                created.destroy();
                            } catch (ResourceException e) {
                                throw new IllegalStateException(e);
                            }
                        }
                    });
                    mc = created;
                }
                return mc.getConnection(null, info);
            }
            ManagedConnection mc = mcf.createManagedConnection(null, info);
            mc.addConnectionEventListener(new ConnectionEventListener() {
                @Override
                public void connectionClosed(ConnectionEvent event) {
                    try {
                        mc.destroy();
                    } catch (ResourceException e) {
                        throw new IllegalStateException(e);
                    }
                }

                @Override
                public void localTransactionStarted(ConnectionEvent event) {
                    // Not used.
                }

                @Override
                public void localTransactionCommitted(ConnectionEvent event) {
                    // Not used.
                }

                @Override
                public void localTransactionRolledback(ConnectionEvent event) {
                    // Not used.
                }

                @Override
                public void connectionErrorOccurred(ConnectionEvent event) {
                    // Not used.
                }
            });
            return mc.getConnection(null, info);
        } catch (ResourceException e) {
            throw e;
        } catch (Exception e) {
            throw new ResourceException("could not allocate a connection: " + e, e);
        }
    }
}
