package org.leasehold.backend;

import java.time.Duration;

import org.leasehold.lease.LeaseService;
import org.leasehold.time.TimeSource;

/**
 * A lease service kept outside this code base's modules, found with {@link java.util.ServiceLoader}: a jar that
 * provides one (the etcd backend, module {@code leasehold-etcd}) lists its class in
 * {@code META-INF/services/org.leasehold.backend.LeaseBackend}. The resource adapter's {@code LeaseService} property and
 * the lease server's {@code --backend} name it by its scheme ({@code etcd:...}), so neither depends on the backend's
 * libraries.
 */
public interface LeaseBackend {

    /** The scheme it serves: the text before the first {@code :} of a service specification, such as {@code etcd}. */
    String scheme();

    /**
     * Opens a lease service for {@code spec} (the whole specification, scheme included).
     *
     * @throws IllegalArgumentException the specification is wrong (the message names the part and the fix)
     */
    LeaseService open(String spec, Settings settings, TimeSource time);

    /**
     * What the caller decides rather than the specification: the lease rules it runs with.
     *
     * @param maxLease        the longest lease
     * @param grace           the wait after an unreleased lease's deadline before its successor writes
     * @param clockErrorBound the bound on clock differences between the processes that use the service
     * @param serviceId       an identity for logs and metrics, or null
     */
    record Settings(Duration maxLease, Duration grace, Duration clockErrorBound, String serviceId) {
    }
}
