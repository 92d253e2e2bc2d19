package org.leasehold.adapter;

import java.io.PrintWriter;
import java.util.List;
import java.util.Map;
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
    private static final System.Logger LOG = System.getLogger(LeaseholdManagedConnectionFactory.class.getName());

    /** The config-property names, which are also the MicroProfile Config keys after {@code leasehold.}. */
    static final List<String> PROPERTIES = List.of("BagStoreRoot", "Log", "LeaseService", "MaxLeaseMillis",
            "GraceMillis", "MaxClockErrorMillis", "BucketMillis", "FlushPolicy", "WriterId", "ProcessId",
            "DefaultWaitMillis", "MaxNamesPerUnit", "MinTimeLeftAtPrepareMillis", "OwnerTtlMillis", "RemoteOptions",
            "InDoubtHoldMillis", "ViewBuildIntervalMillis", "SigningKeyFile", "SignedTimeBoundMillis",
            "CompactionIntervalMillis", "CompactionHorizonMillis", "RetentionDelayMillis", "ResourcePrincipal");

    // Null until the container sets them: an unset property takes its MicroProfile Config value, else its default
    // (AdapterConfig). The annotations give no defaultValue, since a server sets a property to its annotated default,
    // and a value set so could not be told from one an administrator gave.
    private String bagStoreRoot;
    private String log;
    private String leaseService;
    private Long maxLeaseMillis;
    private Long graceMillis;
    private Long maxClockErrorMillis;
    private Long bucketMillis;
    private String flushPolicy;
    private String writerId;
    private String processId;
    private Long defaultWaitMillis;
    private Integer maxNamesPerUnit;
    private Long minTimeLeftAtPrepareMillis;
    private Long ownerTtlMillis;
    private String remoteOptions;
    private Long inDoubtHoldMillis;
    private Long viewBuildIntervalMillis;
    private String signingKeyFile;
    private Long signedTimeBoundMillis;
    private Long compactionIntervalMillis;
    private Long compactionHorizonMillis;
    private Long retentionDelayMillis;
    private String resourcePrincipal;

    private transient LeaseholdResourceAdapter adapter;
    private transient PrintWriter logWriter;
    /** The MicroProfile Config values of the properties, read once, when the definition is first checked. */
    private transient Map<String, String> microProfile;
    private transient boolean suppliedLogged;
    private transient boolean principalUnusedLogged;

    /**
     * The checked settings: each property as the connection definition sets it, else from MicroProfile Config (see
     * {@link MicroProfileSettings}), else its default. Throws {@link InvalidPropertyException} naming the bad property
     * (and the MicroProfile Config key its value came from).
     */
    AdapterConfig config() throws ResourceException {
        MicroProfileSettings mp = null;
        try {
            mp = new MicroProfileSettings(microProfile());
            AdapterConfig c = AdapterConfig.from(mp.text("BagStoreRoot", bagStoreRoot), mp.text("Log", log),
                    mp.text("LeaseService", leaseService), mp.millis("MaxLeaseMillis", maxLeaseMillis),
                    mp.millis("GraceMillis", graceMillis), mp.millis("MaxClockErrorMillis", maxClockErrorMillis),
                    mp.millis("BucketMillis", bucketMillis), mp.text("FlushPolicy", flushPolicy),
                    mp.text("WriterId", writerId), mp.text("ProcessId", processId),
                    mp.millis("DefaultWaitMillis", defaultWaitMillis), mp.count("MaxNamesPerUnit", maxNamesPerUnit),
                    mp.millis("MinTimeLeftAtPrepareMillis", minTimeLeftAtPrepareMillis),
                    mp.millis("OwnerTtlMillis", ownerTtlMillis), mp.text("RemoteOptions", remoteOptions),
                    mp.millis("InDoubtHoldMillis", inDoubtHoldMillis),
                    mp.millis("ViewBuildIntervalMillis", viewBuildIntervalMillis),
                    mp.text("SigningKeyFile", signingKeyFile),
                    mp.millis("SignedTimeBoundMillis", signedTimeBoundMillis),
                    mp.millis("CompactionIntervalMillis", compactionIntervalMillis),
                    mp.millis("CompactionHorizonMillis", compactionHorizonMillis),
                    mp.millis("RetentionDelayMillis", retentionDelayMillis));
            String principal = definitionPrincipal(mp);
            logSupplied(c, mp.supplied());
            if (principal != null && !c.embedded()) {
                logPrincipalUnused(c);
            }
            return c;
        } catch (IllegalArgumentException e) {
            throw new InvalidPropertyException("Leasehold connection definition: "
                    + (mp == null ? e.getMessage() : mp.explain(e.getMessage())));
        }
    }

    /**
     * The principal this definition's witnesses name when the container signs a connection on with none
     * ({@code ResourcePrincipal}, else its MicroProfile Config value), or null; checked by {@link #config()}.
     */
    String definitionPrincipal() throws ResourceException {
        MicroProfileSettings mp = new MicroProfileSettings(microProfile());
        try {
            return definitionPrincipal(mp);
        } catch (IllegalArgumentException e) {
            throw new InvalidPropertyException("Leasehold connection definition: " + mp.explain(e.getMessage()));
        }
    }

    private String definitionPrincipal(MicroProfileSettings mp) {
        String v = mp.text("ResourcePrincipal", resourcePrincipal);
        if (v == null || v.isBlank()) {
            return null;
        }
        String name = v.trim();
        int bytes = name.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (bytes > org.leasehold.audit.Witness.MAX_TEXT) {
            throw new IllegalArgumentException("ResourcePrincipal is " + bytes + " bytes of UTF-8; a lease witness names "
                    + "at most " + org.leasehold.audit.Witness.MAX_TEXT + ": give a shorter name");
        }
        return name;
    }

    /** For tests: MicroProfile Config values ({@code Property -> value}) instead of the server's. */
    synchronized void useMicroProfile(Map<String, String> values) {
        microProfile = values;
    }

    private synchronized Map<String, String> microProfile() {
        if (microProfile == null) {
            microProfile = MicroProfileSettings.fromServer(PROPERTIES);
        }
        return microProfile;
    }

    /**
     * Says once that {@code ResourcePrincipal} is set on a definition outside embedded mode, where no witness takes it: a
     * lease server names the principal its credentials prove, and the etcd backend signs nothing.
     */
    private synchronized void logPrincipalUnused(AdapterConfig c) {
        if (!principalUnusedLogged) {
            principalUnusedLogged = true;
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-4504 the connection definition for log {0} at {1} sets "
                    + "ResourcePrincipal, which only the embedded lease service writes into witnesses; with LeaseService "
                    + "{2} it is not used (a lease server names the principal its token or client certificate proves; "
                    + "the etcd backend signs nothing): remove it, or give the lease server's credentials instead",
                    c.log(), c.bagStoreRoot(), c.leaseServiceShown());
        }
    }

    /** Says once which properties MicroProfile Config supplied (names only: RemoteOptions may hold a token). */
    private synchronized void logSupplied(AdapterConfig c, Set<String> supplied) {
        if (!supplied.isEmpty() && !suppliedLogged) {
            suppliedLogged = true;
            LOG.log(System.Logger.Level.INFO, "LEASEHOLD-4503 the connection definition for log {0} at {1} takes {2} "
                    + "from MicroProfile Config (leasehold.<Property>)", c.log(), c.bagStoreRoot(), supplied);
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
        return new LeaseholdManagedConnection(this, runtime(), definitionPrincipal());
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

    @ConfigProperty(description = "The log connections append to. Default: default.")
    public void setLog(String v) {
        log = v;
    }

    public String getLeaseService() {
        return leaseService;
    }

    @ConfigProperty(description = "'embedded' (one server owns the log), 'remote:<host:port>[,...]' (a lease server)"
            + " or 'etcd:<host:port>[,...][?options]' (an etcd cluster; deploy leasehold-etcd.rar). Default: embedded.")
    public void setLeaseService(String v) {
        leaseService = v;
    }

    public Long getMaxLeaseMillis() {
        return maxLeaseMillis;
    }

    @ConfigProperty(description = "Maximum lease duration in milliseconds. Default: 10000.")
    public void setMaxLeaseMillis(Long v) {
        maxLeaseMillis = v;
    }

    public Long getGraceMillis() {
        return graceMillis;
    }

    @ConfigProperty(description = "Grace after a bucket's end and after an expiry, in milliseconds. Default: 2000.")
    public void setGraceMillis(Long v) {
        graceMillis = v;
    }

    public Long getMaxClockErrorMillis() {
        return maxClockErrorMillis;
    }

    @ConfigProperty(description = "Bound on clock error between servers, in milliseconds. Default: 500.")
    public void setMaxClockErrorMillis(Long v) {
        maxClockErrorMillis = v;
    }

    public Long getBucketMillis() {
        return bucketMillis;
    }

    @ConfigProperty(description = "Width of a time bucket in milliseconds (divides a day). Default: 1000.")
    public void setBucketMillis(Long v) {
        bucketMillis = v;
    }

    public String getFlushPolicy() {
        return flushPolicy;
    }

    @ConfigProperty(description = "When data files are forced: 'every-batch', 'interval:<millis>' or 'never'."
            + " Default: every-batch.")
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

    @ConfigProperty(description = "How long an acquire waits by default, in milliseconds. Default: 5000.")
    public void setDefaultWaitMillis(Long v) {
        defaultWaitMillis = v;
    }

    public Integer getMaxNamesPerUnit() {
        return maxNamesPerUnit;
    }

    @ConfigProperty(description = "Most lease names one transaction or connection may hold. Default: 100.")
    public void setMaxNamesPerUnit(Integer v) {
        maxNamesPerUnit = v;
    }

    public Long getMinTimeLeftAtPrepareMillis() {
        return minTimeLeftAtPrepareMillis;
    }

    @ConfigProperty(description = "Prepare votes rollback when a lease has less than this left, in milliseconds."
            + " Default: 1000.")
    public void setMinTimeLeftAtPrepareMillis(Long v) {
        minTimeLeftAtPrepareMillis = v;
    }

    public Long getOwnerTtlMillis() {
        return ownerTtlMillis;
    }

    @ConfigProperty(description = "Embedded mode: how long the log's ownership survives without a heartbeat, in milliseconds."
            + " Default: 8000.")
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

    @ConfigProperty(description = "How long, in milliseconds, the leases of a transaction "
            + "that has not completed are held: a prepared branch recovered after a restart, or a committed branch "
            + "whose transaction's other resources are still committing (at least MaxLeaseMillis, at most a day)."
            + " Default: 300000.")
    public void setInDoubtHoldMillis(Long v) {
        inDoubtHoldMillis = v;
    }

    public Long getViewBuildIntervalMillis() {
        return viewBuildIntervalMillis;
    }

    @ConfigProperty(description = "How often, in milliseconds, the adapter publishes a snapshot of each view "
            + "applications registered (0: never; else 1000 to 86400000). Default: 60000.")
    public void setViewBuildIntervalMillis(Long v) {
        viewBuildIntervalMillis = v;
    }

    public String getSigningKeyFile() {
        return signingKeyFile;
    }

    @ConfigProperty(description = "Embedded mode: the PEM file (PKCS #8, Ed25519, as 'openssl genpkey -algorithm "
            + "ed25519' writes it) of the key the engine signs its lease witnesses with. Default: a key generated "
            + "under <BagStoreRoot>/.leasehold/signing/.")
    public void setSigningKeyFile(String v) {
        signingKeyFile = v;
    }

    public Long getSignedTimeBoundMillis() {
        return signedTimeBoundMillis;
    }

    @ConfigProperty(description = "How far, in milliseconds, a message's timestamp may lie from the signed time its "
            + "leases' witnesses carry; an append beyond it is refused (1 to 3600000). Default: 1000.")
    public void setSignedTimeBoundMillis(Long v) {
        signedTimeBoundMillis = v;
    }

    public Long getCompactionIntervalMillis() {
        return compactionIntervalMillis;
    }

    @ConfigProperty(description = "How often, in milliseconds, the adapter compacts the log's sealed buckets older "
            + "than an hour into segments, in the background (0: never; else 1000 to 86400000). Default: 0.")
    public void setCompactionIntervalMillis(Long v) {
        compactionIntervalMillis = v;
    }

    public Long getCompactionHorizonMillis() {
        return compactionHorizonMillis;
    }

    @ConfigProperty(description = "How old, in milliseconds, a bucket's end must be before compaction merges it into a "
            + "segment (more than GraceMillis plus MaxClockErrorMillis, at most 2592000000). Default: 3600000.")
    public void setCompactionHorizonMillis(Long v) {
        compactionHorizonMillis = v;
    }

    public Long getRetentionDelayMillis() {
        return retentionDelayMillis;
    }

    @ConfigProperty(description = "How long, in milliseconds, after a segment is published background compaction "
            + "removes the files of the buckets it holds, verified (0: keep them; else 1000 to 31536000000, longer "
            + "than any read may take; needs CompactionIntervalMillis). Default: 0.")
    public void setRetentionDelayMillis(Long v) {
        retentionDelayMillis = v;
    }

    public String getResourcePrincipal() {
        return resourcePrincipal;
    }

    @ConfigProperty(description = "Embedded mode: the principal the witnesses of this definition's leases name when the "
            + "container signs a connection on with none (no Subject, or an empty user name, as Payara Micro passes: it "
            + "applies no connector security map); a principal the container passes wins. At most 1024 bytes of UTF-8. "
            + "Default: none.")
    public void setResourcePrincipal(String v) {
        resourcePrincipal = v;
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
                && Objects.equals(f.inDoubtHoldMillis, inDoubtHoldMillis)
                && Objects.equals(f.viewBuildIntervalMillis, viewBuildIntervalMillis)
                && Objects.equals(f.signingKeyFile, signingKeyFile)
                && Objects.equals(f.signedTimeBoundMillis, signedTimeBoundMillis)
                && Objects.equals(f.compactionIntervalMillis, compactionIntervalMillis)
                && Objects.equals(f.compactionHorizonMillis, compactionHorizonMillis)
                && Objects.equals(f.retentionDelayMillis, retentionDelayMillis)
                && Objects.equals(f.resourcePrincipal, resourcePrincipal);
    }

    @Override
    public int hashCode() {
        return Objects.hash(bagStoreRoot, log, leaseService, writerId);
    }
}
