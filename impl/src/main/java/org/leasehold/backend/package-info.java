/**
 * Lease services provided by other modules (the etcd backend), found by scheme through {@link java.util.ServiceLoader}
 * so that the adapter and the lease server need none of their libraries.
 */
package org.leasehold.backend;
