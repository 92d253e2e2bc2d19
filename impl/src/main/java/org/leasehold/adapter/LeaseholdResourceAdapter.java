package org.leasehold.adapter;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

import jakarta.resource.NotSupportedException;
import jakarta.resource.ResourceException;
import jakarta.resource.spi.ActivationSpec;
import jakarta.resource.spi.BootstrapContext;
import jakarta.resource.spi.Connector;
import jakarta.resource.spi.ResourceAdapter;
import jakarta.resource.spi.ResourceAdapterInternalException;
import jakarta.resource.spi.TransactionSupport;
import jakarta.resource.spi.endpoint.MessageEndpointFactory;
import jakarta.resource.spi.work.Work;
import jakarta.resource.spi.work.WorkException;
import jakarta.transaction.TransactionSynchronizationRegistry;

import javax.transaction.xa.XAResource;

import org.leasehold.time.SystemTimeSource;
import org.leasehold.time.TimeSource;

/**
 * The Leasehold resource adapter: leases from a lease service as managed connections enlisted in JTA transactions,
 * and messages written to a bag store on a shared file system when the transaction commits.
 *
 * <p>It owns one runtime (lease service, bag store, journal, lease keeper) per distinct configuration of its connection
 * definitions, started on first use and stopped, with everything it owns, when the adapter stops (undeploy).
 * Background work (lease renewal) runs through the container's {@code WorkManager}.
 */
@Connector(displayName = "Leasehold", vendorName = "Leasehold", eisType = "Leasehold leases and bag store",
        version = "0.1", description = "Strict leases enlisted in JTA transactions; committed messages in a bag store "
                + "of single-writer logs on a shared file system.",
        transactionSupport = TransactionSupport.TransactionSupportLevel.XATransaction, reauthenticationSupport = false)
public final class LeaseholdResourceAdapter implements ResourceAdapter {
    private static final System.Logger LOG = System.getLogger(LeaseholdResourceAdapter.class.getName());

    private final Map<String, LeaseholdRuntime> runtimes = new HashMap<>();
    /** Reasons a runtime could not start, each logged once. */
    private final Set<String> startFailures = new HashSet<>();
    /** Configurations whose connection factories were created before the adapter started (WildFly's order). */
    private final Map<String, AdapterConfig> pending = new LinkedHashMap<>();
    private BootstrapContext context;
    /**
     * The context's registry, asked for once: it is a facade over whatever transaction is current, and the container
     * may look it up in JNDI at every call (Payara does), which showed in every transaction's profile.
     */
    private volatile TransactionSynchronizationRegistry registry;
    private TimeSource time;
    private SystemTimeSource ownTime;
    private Executor work;

    /** For tests: run on {@code source} instead of the real clock. Call before {@link #start}. */
    void useTimeSource(TimeSource source) {
        this.time = source;
    }

    @Override
    public synchronized void start(BootstrapContext ctx) throws ResourceAdapterInternalException {
        this.context = ctx;
        if (time == null) {
            ownTime = new SystemTimeSource("leasehold-adapter-timer");
            time = ownTime;
        }
        work = task -> {
            try {
                ctx.getWorkManager().scheduleWork(new Work() {
                    @Override
                    public void run() {
                        task.run();
                    }

                    @Override
                    public void release() {
                        // The task is short and checks its unit's state; nothing to interrupt.
                    }
                });
            } catch (WorkException e) {
                throw new RejectedExecutionException("the work manager refused a Leasehold task: " + e.getMessage(), e);
            }
        };
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4006 Leasehold resource adapter started");
        for (AdapterConfig c : pending.values()) {
            try {
                runtime(c);
            } catch (ResourceException e) {
                // One bad definition must not stop the adapter's other definitions: runtime() logged why
                // (LEASEHOLD-4008), and its first connection retries and reports the same error to the application.
            }
        }
        pending.clear();
    }

    /**
     * Starts the runtime for {@code config} if the adapter is started; otherwise remembers it for {@link #start}
     * (WildFly creates the connection factories of the adapter's own definitions before it starts the adapter).
     */
    synchronized void runtimeOrPending(AdapterConfig config) throws ResourceException {
        if (context == null) {
            pending.putIfAbsent(config.runtimeKey(), config);
        } else {
            runtime(config);
        }
    }

    @Override
    public synchronized void stop() {
        for (LeaseholdRuntime r : runtimes.values()) {
            try {
                r.close();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4014 stopping a runtime failed: {0}", e.toString());
            }
        }
        runtimes.clear();
        pending.clear();
        if (ownTime != null) {
            ownTime.close();
            ownTime = null;
            time = null;
        }
        context = null;
        registry = null;
        LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4007 Leasehold resource adapter stopped");
    }

    /** The runtime for {@code config}, started if this is its first use. */
    synchronized LeaseholdRuntime runtime(AdapterConfig config) throws ResourceException {
        if (context == null) {
            throw new ResourceAdapterInternalException("the Leasehold resource adapter is not started (not yet, or it was "
                    + "stopped): deploy it before applications that use it (transaction recovery that asks while the "
                    + "server is still starting retries on its next pass)");
        }
        LeaseholdRuntime r = runtimes.get(config.runtimeKey());
        if (r == null) {
            try {
                r = LeaseholdRuntime.start(config, time, work);
            } catch (LeaseholdRuntime.RuntimeStartException e) {
                if (startFailures.add(config.runtimeKey() + "|" + e.getMessage())) {
                    // Once per reason: every use tries again, and says why in its exception.
                    LOG.log(System.Logger.Level.ERROR, "LEASEHOLD-4008 the Leasehold connection definition for log {0} "
                            + "at {1} cannot be used: {2}", config.log(), config.bagStoreRoot(), e.getMessage());
                }
                throw new ResourceAdapterInternalException(e.getMessage(), e);
            }
            runtimes.put(config.runtimeKey(), r);
        }
        return r;
    }

    /** The container's transaction synchronization registry, or null outside a container. */
    TransactionSynchronizationRegistry synchronizationRegistry() {
        TransactionSynchronizationRegistry r = registry;
        if (r != null) {
            return r;
        }
        synchronized (this) {
            if (context != null && registry == null) {
                registry = context.getTransactionSynchronizationRegistry();
            }
            return registry;
        }
    }

    @Override
    public void endpointActivation(MessageEndpointFactory factory, ActivationSpec spec) throws ResourceException {
        throw new NotSupportedException("Leasehold has no inbound messaging: use a LeaseConnectionFactory");
    }

    @Override
    public void endpointDeactivation(MessageEndpointFactory factory, ActivationSpec spec) {
        // No endpoints are ever activated.
    }

    @Override
    public XAResource[] getXAResources(ActivationSpec[] specs) {
        // Only for inbound activations, of which there are none; outbound recovery goes through the connection
        // factories' managed connections.
        return new XAResource[0];
    }

    @Override
    public boolean equals(Object o) {
        return this == o;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(this);
    }
}
