/**
 * The remote mode (L12): {@link org.leasehold.remote.RemoteLeaseService}, a {@link org.leasehold.lease.LeaseService}
 * served by standalone lease servers over gRPC, sharded across servers by name (L11), with clock-offset measurement,
 * server-side waiting and migration between server sets. It speaks the protocol of {@code org.leasehold.wire}, which
 * the lease server shares.
 */
package org.leasehold.remote;
