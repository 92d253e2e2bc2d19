/**
 * The embedded lease engine: {@link org.leasehold.engine.EmbeddedLeaseService}, an in-memory, internally sharded
 * implementation of {@link org.leasehold.lease.LeaseService}. It is the default for one application server and the
 * reference that the remote server and other backends are tested against.
 */
package org.leasehold.engine;
