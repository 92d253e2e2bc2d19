/**
 * The remote mode (L12): {@link org.leasehold.remote.RemoteLeaseService}, a {@link org.leasehold.lease.LeaseService}
 * served by standalone lease servers over gRPC, sharded across servers by name (L11), with clock-offset measurement,
 * server-side waiting and migration between server sets. The wire protocol is {@code leasehold/v1/leasehold.proto};
 * {@link org.leasehold.remote.ProtoCodec} converts between it and the API's values for client and server alike.
 */
package org.leasehold.remote;
