package org.leasehold.engine;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.LeaseServiceContract;

/** The lease service contract, run against the embedded engine on a manual clock. */
class EmbeddedLeaseServiceContractTest extends LeaseServiceContract {
    @Override
    protected LeaseFixture start(LeaseFixture.Settings settings) {
        return new EmbeddedFixture(settings);
    }
}
