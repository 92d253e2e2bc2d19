/**
 * CDI and EJB integration: {@link org.leasehold.inject.Leased @Leased} declares the leases a method needs, computed
 * from its arguments; an interceptor (in the {@code leasehold-cdi} jar that applications bundle) takes them for the
 * current transaction, and an injected {@link org.leasehold.connector.LeaseLog} appends under them. An injected
 * {@link org.leasehold.inject.LeaseView} reads a materialized view the application defines as a
 * {@code ViewDefinition} bean, chosen by its state type or by {@link org.leasehold.inject.View @View}.
 */
package org.leasehold.inject;
