package org.leasehold.etcd;

import org.leasehold.contract.LeaseFixture;
import org.leasehold.contract.LeaseServiceContract;

/** The lease service contract, against a real one-member etcd, on a manual clock. */
class EtcdLeaseServiceContractTest extends LeaseServiceContract {
    @Override
    protected LeaseFixture start(LeaseFixture.Settings settings) {
        return EtcdFixture.onSingleMember(settings);
    }

    @Override
    protected boolean keepsStateAcrossRestarts() {
        return true;
    }
}
