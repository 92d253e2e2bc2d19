/**
 * Strict, short leases on logical names: the {@link org.leasehold.lease.LeaseService} contract and
 * its value types.
 *
 * <p>A lease is an exclusive (or shared, or counted) right on a name such as {@code tenant/42} until an
 * absolute deadline. Every grant carries a generation (fencing token) and a floor: the holder must
 * write only timestamps strictly above the floor and strictly below the deadline, and publishes a
 * watermark (the highest timestamp it wrote) when it releases.
 */
package org.leasehold.lease;
