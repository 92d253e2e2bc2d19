/**
 * Session events (L13) for any {@link org.leasehold.lease.LeaseService}: {@link org.leasehold.session.LeaseKeeper}
 * renews leases on the application's behalf and reports jeopardy, safe and expired to a
 * {@link org.leasehold.lease.SessionListener}.
 */
package org.leasehold.session;
