package org.leasehold.adapter;

import java.io.PrintWriter;
import java.util.Objects;
import java.util.Set;

import javax.security.auth.Subject;

import jakarta.resource.ResourceException;
import jakarta.resource.spi.ConfigProperty;
import jakarta.resource.spi.ConnectionDefinition;
import jakarta.resource.spi.ConnectionManager;
import jakarta.resource.spi.ConnectionRequestInfo;
import jakarta.resource.spi.InvalidPropertyException;
import jakarta.resource.spi.ManagedConnection;
import jakarta.resource.spi.ManagedConnectionFactory;
import jakarta.resource.spi.ResourceAdapter;
import jakarta.resource.spi.ResourceAdapterAssociation;
import jakarta.resource.spi.TransactionSupport;

import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * A connection definition: which bag store and log, which lease service, and the timing settings. Every property is
 * checked when the container creates the connection factory, so a bad value fails the deployment with a message
 * that names the property.
 */
@ConnectionDefinition(connectionFactory = LeaseConnectionFactory.class,
        connectionFactoryImpl = LeaseConnectionFactoryImpl.class, connection = LeaseConnection.class,
        connectionImpl = LeaseConnectionImpl.class)
public final class LeaseholdManagedConnectionFactory
        implements ManagedConnectionFactory, ResourceAdapterAssociation, TransactionSupport {
    private static final long serialVersionUID = 1L;

    private String bagStoreRoot;
    private String log = "default";
    private String leaseService = "embedded";
    private Long maxLeaseMillis = 10_000L;
    private Long graceMillis = 2_000L;
    private Long maxClockErrorMillis = 500L;
    private Long bucketMillis = 1_000L;
    private String flushPolicy = "every-batch";
    private String writerId = "";
    private String processId = "";
    private Long defaultWaitMillis = 5_000L;
    private Integer maxNamesPerUnit = 100;
    private Long minTimeLeftAtPrepareMillis = 1_000L;
    private Long ownerTtlMillis = 8_000L;
    private String remoteOptions = "";
    private Long inDoubtHoldMillis = 300_000L;

    private transient LeaseholdResourceAdapter adapter;
    private transient PrintWriter logWriter;

    /** The checked settings; throws {@link InvalidPropertyException} naming the bad property. */
    AdapterConfig config() throws ResourceException {
        try {
            return AdapterConfig.from(bagStoreRoot, log, leaseService, maxLeaseMillis, graceMillis, maxClockErrorMillis,
                    bucketMillis, flushPolicy, writerId, processId, defaultWaitMillis, maxNamesPerUnit,
                    minTimeLeftAtPrepareMillis, ownerTtlMillis, remoteOptions, inDoubtHoldMillis);
        } catch (IllegalArgumentException e) {
            throw new InvalidPropertyException("Leasehold connection definition: " + e.getMessage());
        }
    }

    LeaseholdRuntime runtime() throws ResourceException {
        if (adapter == null) {
            throw new ResourceException("this Leasehold connection factory is not associated with the resource adapter: "
                    + "define it with resourceAdapter set to the deployed Leasehold adapter");
        }
        return adapter.runtime(config());
    }

    LeaseholdResourceAdapter adapter() {
        return adapter;
    }

    /**
     * Checks the properties and starts this definition's runtime. Payara creates connection factories on a started
     * adapter, so a runtime that cannot start (a log owned by another server) fails the definition at once. WildFly
     * (IronJacamar) creates the connection factories of the adapter's own definitions before it starts the adapter:
     * then the adapter starts the runtime when it starts, and a failure is logged there and reported by the first
     * connection.
     */
    @Override
    public Object createConnectionFactory(ConnectionManager manager) throws ResourceException {
        AdapterConfig c = config();
        if (adapter == null) {
            runtime(); // throws: not associated with the resource adapter
        }
        adapter.runtimeOrPending(c);
        return new LeaseConnectionFactoryImpl(this, manager);
    }

    @Override
    public Object createConnectionFactory() throws ResourceException {
        throw new jakarta.resource.NotSupportedException("Leasehold connections need a container's connection manager "
                + "(transactions enlist through it): deploy the adapter and define a connection factory");
    }

    @Override
    public ManagedConnection createManagedConnection(Subject subject, ConnectionRequestInfo info) throws ResourceException {
        return new LeaseholdManagedConnection(this, runtime());
    }

    @Override
    @SuppressWarnings("rawtypes")
    public ManagedConnection matchManagedConnections(Set connections, Subject subject, ConnectionRequestInfo info) {
        for (Object o : connections) {
            if (o instanceof LeaseholdManagedConnection mc && mc.factory().equals(this)) {
                return mc;
            }
        }
        return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {
        this.logWriter = out;
    }

    @Override
    public PrintWriter getLogWriter() {
        return logWriter;
    }

    @Override
    public ResourceAdapter getResourceAdapter() {
        return adapter;
    }

    @Override
    public void setResourceAdapter(ResourceAdapter ra) throws ResourceException {
        if (!(ra instanceof LeaseholdResourceAdapter l)) {
            throw new ResourceException("a Leasehold connection definition needs the Leasehold resource adapter, not "
                    + ra);
        }
        this.adapter = l;
    }

    @Override
    public TransactionSupportLevel getTransactionSupport() {
        return TransactionSupportLevel.XATransaction;
    }

    // ------------------------------------------------------------------------------------------------ properties
    // The annotations are on the setters, not the fields: servers name a field's property after the field
    // ("maxLeaseMillis") but a setter's after the JavaBean property ("MaxLeaseMillis"), the name pools use. With
    // field annotations, Payara kept the annotation's default under the lower-case name beside the pool's value and
    // applied both in no particular order, so pool values were silently lost.

    public String getBagStoreRoot() {
        return bagStoreRoot;
    }

    @ConfigProperty(description = "Root directory of the bag store: a shared file system mount for a fleet. Required.")
    public void setBagStoreRoot(String v) {
        bagStoreRoot = v;
    }

    public String getLog() {
        return log;
    }

    @ConfigProperty(defaultValue = "default", description = "The log connections append to.")
    public void setLog(String v) {
        log = v;
    }

    public String getLeaseService() {
        return leaseService;
    }

    @ConfigProperty(defaultValue = "embedded",
            description = "'embedded' (one server owns the log) or 'remote:<host:port>[,...]' (a lease server).")
    public void setLeaseService(String v) {
        leaseService = v;
    }

    public Long getMaxLeaseMillis() {
        return maxLeaseMillis;
    }

    @ConfigProperty(defaultValue = "10000", description = "Maximum lease duration in milliseconds.")
    public void setMaxLeaseMillis(Long v) {
        maxLeaseMillis = v;
    }

    public Long getGraceMillis() {
        return graceMillis;
    }

    @ConfigProperty(defaultValue = "2000", description = "Grace after a bucket's end and after an expiry, in milliseconds.")
    public void setGraceMillis(Long v) {
        graceMillis = v;
    }

    public Long getMaxClockErrorMillis() {
        return maxClockErrorMillis;
    }

    @ConfigProperty(defaultValue = "500", description = "Bound on clock error between servers, in milliseconds.")
    public void setMaxClockErrorMillis(Long v) {
        maxClockErrorMillis = v;
    }

    public Long getBucketMillis() {
        return bucketMillis;
    }

    @ConfigProperty(defaultValue = "1000", description = "Width of a time bucket in milliseconds (divides a day).")
    public void setBucketMillis(Long v) {
        bucketMillis = v;
    }

    public String getFlushPolicy() {
        return flushPolicy;
    }

    @ConfigProperty(defaultValue = "every-batch",
            description = "When data files are forced: 'every-batch', 'interval:<millis>' or 'never'.")
    public void setFlushPolicy(String v) {
        flushPolicy = v;
    }

    public String getWriterId() {
        return writerId;
    }

    @ConfigProperty(description = "Writer identity; empty for <host>-<instance>.")
    public void setWriterId(String v) {
        writerId = v;
    }

    public String getProcessId() {
        return processId;
    }

    @ConfigProperty(description = "Process part of lease holder identities; empty for the writer identity.")
    public void setProcessId(String v) {
        processId = v;
    }

    public Long getDefaultWaitMillis() {
        return defaultWaitMillis;
    }

    @ConfigProperty(defaultValue = "5000", description = "How long an acquire waits by default, in milliseconds.")
    public void setDefaultWaitMillis(Long v) {
        defaultWaitMillis = v;
    }

    public Integer getMaxNamesPerUnit() {
        return maxNamesPerUnit;
    }

    @ConfigProperty(defaultValue = "100", description = "Most lease names one transaction or connection may hold.")
    public void setMaxNamesPerUnit(Integer v) {
        maxNamesPerUnit = v;
    }

    public Long getMinTimeLeftAtPrepareMillis() {
        return minTimeLeftAtPrepareMillis;
    }

    @ConfigProperty(defaultValue = "1000",
            description = "Prepare votes rollback when a lease has less than this left, in milliseconds.")
    public void setMinTimeLeftAtPrepareMillis(Long v) {
        minTimeLeftAtPrepareMillis = v;
    }

    public Long getOwnerTtlMillis() {
        return ownerTtlMillis;
    }

    @ConfigProperty(defaultValue = "8000",
            description = "Embedded mode: how long the log's ownership survives without a heartbeat, in milliseconds.")
    public void setOwnerTtlMillis(Long v) {
        ownerTtlMillis = v;
    }

    public String getRemoteOptions() {
        return remoteOptions;
    }

    @ConfigProperty(description = "Remote mode: the lease client's options as key=value;key=value (token, tokenFile, "
            + "tlsTrustFile, tlsCertFile, tlsKeyFile, tlsAuthority, callTimeout, previousServers, migrationStartedAt).")
    public void setRemoteOptions(String v) {
        remoteOptions = v;
    }

    public Long getInDoubtHoldMillis() {
        return inDoubtHoldMillis;
    }

    @ConfigProperty(defaultValue = "300000", description = "How long, in milliseconds, the leases of a transaction "
            + "that has not completed are held: a prepared branch recovered after a restart, or a committed branch "
            + "whose transaction's other resources are still committing (at least MaxLeaseMillis, at most a day).")
    public void setInDoubtHoldMillis(Long v) {
        inDoubtHoldMillis = v;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LeaseholdManagedConnectionFactory f && Objects.equals(f.bagStoreRoot, bagStoreRoot)
                && Objects.equals(f.log, log) && Objects.equals(f.leaseService, leaseService)
                && Objects.equals(f.maxLeaseMillis, maxLeaseMillis) && Objects.equals(f.graceMillis, graceMillis)
                && Objects.equals(f.maxClockErrorMillis, maxClockErrorMillis)
                && Objects.equals(f.bucketMillis, bucketMillis) && Objects.equals(f.flushPolicy, flushPolicy)
                && Objects.equals(f.writerId, writerId) && Objects.equals(f.processId, processId)
                && Objects.equals(f.defaultWaitMillis, defaultWaitMillis)
                && Objects.equals(f.maxNamesPerUnit, maxNamesPerUnit)
                && Objects.equals(f.minTimeLeftAtPrepareMillis, minTimeLeftAtPrepareMillis)
                && Objects.equals(f.ownerTtlMillis, ownerTtlMillis) && Objects.equals(f.remoteOptions, remoteOptions)
                && Objects.equals(f.inDoubtHoldMillis, inDoubtHoldMillis);
    }

    @Override
    public int hashCode() {
        return Objects.hash(bagStoreRoot, log, leaseService, writerId);
    }
}
