/**
 * Leasehold's application-facing API: the exception family shared by every part. Leases live in
 * {@link org.leasehold.lease}.
 */
package org.leasehold;
