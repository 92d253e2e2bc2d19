package org.leasehold.adapter;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

import jakarta.resource.ResourceException;
import jakarta.transaction.TransactionManager;
import jakarta.transaction.TransactionSynchronizationRegistry;

import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.ManualTimeSource;
import org.leasehold.time.TimeSource;

/**
 * The adapter outside a server: a real bag store directory under {@code target/}, the Narayana transaction manager
 * in this JVM, a test bootstrap context and connection manager, and a manual clock.
 */
final class AdapterFixture implements AutoCloseable {
    static final Instant START = Instant.parse("2026-03-01T10:00:00Z");

    static {
        System.setProperty("ObjectStoreEnvironmentBean.objectStoreDir", Path.of("target", "narayana").toString());
        System.setProperty("CoreEnvironmentBean.nodeIdentifier", "leasehold-tests");
    }

    final Path root;
    /** The manual clock, or null when the fixture runs on another time source (the real clock). */
    final ManualTimeSource time;
    private final TimeSource timeSource;
    final TransactionManager tm = com.arjuna.ats.jta.TransactionManager.transactionManager();
    final TransactionSynchronizationRegistry tsr =
            new com.arjuna.ats.internal.jta.transaction.arjunacore.TransactionSynchronizationRegistryImple();
    private final Consumer<LeaseholdManagedConnectionFactory> configure;
    TestBootstrapContext context;
    LeaseholdResourceAdapter adapter;
    LeaseholdManagedConnectionFactory mcf;
    LeaseConnectionFactory factory;

    AdapterFixture(String test, Consumer<LeaseholdManagedConnectionFactory> configure) throws Exception {
        this(freshRoot(test), new ManualTimeSource(START), configure);
    }

    AdapterFixture(Path root, TimeSource time, Consumer<LeaseholdManagedConnectionFactory> configure)
            throws Exception {
        this.root = root;
        this.timeSource = time;
        this.time = time instanceof ManualTimeSource m ? m : null;
        this.configure = configure;
        start();
    }

    static Path freshRoot(String test) throws IOException {
        Path dir = Path.of("target", "adapter-tests", test + "-" + System.nanoTime());
        Files.createDirectories(dir);
        return dir.toAbsolutePath();
    }

    private void start() throws Exception {
        context = new TestBootstrapContext(tsr);
        adapter = new LeaseholdResourceAdapter();
        adapter.useTimeSource(timeSource);
        adapter.start(context);
        mcf = new LeaseholdManagedConnectionFactory();
        mcf.setBagStoreRoot(root.toString());
        mcf.setLog("ledger");
        mcf.setWriterId("writer-a");
        configure.accept(mcf);
        mcf.setResourceAdapter(adapter);
        factory = (LeaseConnectionFactory) mcf.createConnectionFactory(new TestConnectionManager(tm));
    }

    /** Stops the adapter (as an undeploy or a crash between prepare and commit leaves it) and starts a new one. */
    void restart() throws Exception {
        adapter.stop();
        context.close();
        start();
    }

    ResourceManager rm() throws ResourceException {
        return mcf.runtime().resourceManager();
    }

    LeaseConnection connection() throws Exception {
        return factory.getConnection();
    }

    /**
     * Makes the holder of {@code lease} (a transaction's) wait for another lease of the adapter's lease service: it
     * asks for a name a full lease of another holder keeps, and stays queued (its wait never ends on the manual
     * clock). Wound-wait breaks a younger tentative lease only while its holder waits, as a transaction does that
     * asks for a name while it holds another.
     */
    void waitElsewhere(Lease lease) throws Exception {
        LeaseService leases = mcf.runtime().leases();
        String name = "elsewhere/" + lease.holder().owner().replaceAll("[^A-Za-z0-9_.-]", "_");
        leases.acquire(LeaseRequest.builder(new HolderId("elsewhere", name), name).build());
        CompletableFuture<Lease> waiting = leases.acquireAsync(LeaseRequest.builder(lease.holder(), name).tentative()
                .waitFor(Duration.ofHours(1)).build());
        if (waiting.isDone() || leases.inspect(name, 1).get(0).waiters().isEmpty()) {
            throw new IllegalStateException(lease.holder() + " did not queue for " + name + ": " + waiting);
        }
    }

    /** Every message of the log, sealed or not, in order. */
    List<Message> messages() throws Exception {
        List<Message> out = new ArrayList<>();
        try (MessageStream s = mcf.runtime().store().read(ReadRequest.all("ledger"))) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
        } catch (org.leasehold.bag.UnknownLogException e) {
            return out;
        }
        return out;
    }

    @Override
    public void close() {
        try {
            // A test that failed inside a transaction leaves it on this thread: end it, or the next test inherits it.
            if (tm.getTransaction() != null) {
                tm.rollback();
            }
        } catch (jakarta.transaction.SystemException e) {
            throw new IllegalStateException("the transaction left by the test could not be rolled back", e);
        } finally {
            adapter.stop();
            context.close();
        }
    }

    /** Polls {@code c} every 10 ms for up to 10 s of real time (for tests on a real clock); whether it came to hold. */
    static boolean await(java.util.function.BooleanSupplier c) throws InterruptedException {
        for (int i = 0; i < 1_000; i++) {
            if (c.getAsBoolean()) {
                return true;
            }
            Thread.sleep(10);
        }
        return c.getAsBoolean();
    }
}
