package org.leasehold.adapter;

import jakarta.resource.spi.ManagedConnectionMetaData;

/** What the container shows about a managed connection. */
final class LeaseholdManagedConnectionMetaData implements ManagedConnectionMetaData {
    private final LeaseholdRuntime runtime;

    LeaseholdManagedConnectionMetaData(LeaseholdRuntime runtime) {
        this.runtime = runtime;
    }

    @Override
    public String getEISProductName() {
        return "Leasehold";
    }

    @Override
    public String getEISProductVersion() {
        return "0.1";
    }

    @Override
    public int getMaxConnections() {
        return 0;
    }

    @Override
    public String getUserName() {
        return runtime.store().writerId() + " (" + runtime.leases().serviceId() + ")";
    }
}
