/**
 * The CDI integration applications bundle: {@link org.leasehold.cdi.LeasedInterceptor} applies
 * {@link org.leasehold.inject.Leased @Leased}, and {@link org.leasehold.cdi.LeaseLogProducer} makes
 * {@link org.leasehold.connector.LeaseLog} injectable.
 */
package org.leasehold.cdi;
