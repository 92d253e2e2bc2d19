/**
 * What a Jakarta EE application uses through the resource adapter: a {@link org.leasehold.connector.LeaseConnectionFactory}
 * hands out {@link org.leasehold.connector.LeaseConnection}s, which take leases for the current unit of work and append
 * messages under them to a log of the bag store.
 *
 * <p>Inside a JTA transaction, leases are tentative while the transaction runs and upgraded to full at prepare;
 * messages are buffered and written, as one frame with one timestamp, when the transaction commits; the leases are
 * then released with that timestamp as watermark. Outside a transaction, leases are full at once, each append is
 * written at once, and closing the connection releases the leases.
 */
package org.leasehold.connector;
