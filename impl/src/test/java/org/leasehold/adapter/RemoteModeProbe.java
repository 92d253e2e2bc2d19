package org.leasehold.adapter;

import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

import javax.transaction.xa.Xid;

import jakarta.transaction.TransactionManager;

import org.leasehold.bag.Message;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.TimeSource;

/**
 * The adapter outside a server ({@link AdapterFixture}) for tests in other packages, such as the remote-mode tests
 * beside the lease server: what they start, call and look at, and nothing of the adapter's insides beyond that.
 */
public final class RemoteModeProbe implements AutoCloseable {
    private final AdapterFixture fixture;

    private RemoteModeProbe(AdapterFixture fixture) {
        this.fixture = fixture;
    }

    /** Starts an adapter on the bag store under {@code root}, on {@code time}, configured by {@code configure}. */
    public static RemoteModeProbe start(Path root, TimeSource time, Consumer<LeaseholdManagedConnectionFactory> configure)
            throws Exception {
        return new RemoteModeProbe(new AdapterFixture(root, time, configure));
    }

    /** A fresh bag store directory under {@code target/} for {@code test}. */
    public static Path freshRoot(String test) throws java.io.IOException {
        return AdapterFixture.freshRoot(test);
    }

    /** The transaction manager of this JVM (Narayana). */
    public TransactionManager tm() {
        return fixture.tm;
    }

    public LeaseholdManagedConnectionFactory mcf() {
        return fixture.mcf;
    }

    /** A connection from the adapter's connection factory (enlisted in the current transaction). */
    public LeaseConnection connection() throws Exception {
        return fixture.connection();
    }

    /** Every message of the log, sealed or not, in order. */
    public List<Message> messages() throws Exception {
        return fixture.messages();
    }

    /** The lease service the adapter uses. */
    public LeaseService leases() throws Exception {
        return fixture.mcf.runtime().leases();
    }

    /** The adapter's metrics (as its MBean shows them). */
    public AdapterMetrics metrics() throws Exception {
        return fixture.mcf.runtime().metrics();
    }

    /** The generation of the first lease the prepared branch {@code xid} journaled. */
    public long preparedGeneration(Xid xid) throws Exception {
        return fixture.rm().journalEntry(XidKey.of(xid)).leases().get(0).generation();
    }

    /** Stops the adapter (as an undeploy or a crash between prepare and commit leaves it) and starts a new one. */
    public void restart() throws Exception {
        fixture.restart();
    }

    @Override
    public void close() {
        fixture.close();
    }
}
