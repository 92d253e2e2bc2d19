/**
 * The bag store, as applications see it: {@link org.leasehold.bag.BagStore}, the values it takes and returns, and its
 * exceptions.
 *
 * <p>A bag store is a root directory holding one directory per <em>log</em>. A log is cut into time <em>buckets</em>
 * (one per second by default); in each bucket every writer appends to its own data file. Once a bucket's end plus
 * grace has passed, anyone may <em>seal</em> it; sealed buckets are immutable, and a write that arrives after sealing
 * began is refused. Messages carry the lease names and generations they were written under, and readers deliver them
 * in timestamp order.
 */
package org.leasehold.bag;
