package org.leasehold.etcd;

import org.leasehold.backend.LeaseBackend;
import org.leasehold.lease.LeaseService;
import org.leasehold.time.TimeSource;

/**
 * The etcd backend for {@link java.util.ServiceLoader}: {@code LeaseService=etcd:<host:port>,...[?options]} in the
 * resource adapter, {@code --backend etcd://<host:port>,...[?options]} in the lease server (see
 * {@link EtcdConfig#parse(String)} for the options).
 */
public final class EtcdLeaseBackend implements LeaseBackend {

    @Override
    public String scheme() {
        return "etcd";
    }

    @Override
    public LeaseService open(String spec, Settings settings, TimeSource time) {
        EtcdConfig config = EtcdConfig.parse(spec, settings.maxLease(), settings.grace(), settings.clockErrorBound());
        if (config.serviceId() == null && settings.serviceId() != null) {
            config = config.withServiceId("etcd/" + settings.serviceId());
        }
        return new EtcdLeaseService(config, time);
    }
}
