package org.leasehold.inject;

import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import jakarta.enterprise.util.Nonbinding;
import jakarta.interceptor.InterceptorBinding;

/**
 * The leases a method needs. Each entry of {@link #value()} is a name template in which {@code {0}}, {@code {1}}, ...
 * stand for the method's arguments ({@code String.valueOf}), for example
 * {@code @Leased({"account/{0}", "account/{1}"}) void transfer(String from, String to, long amount)}.
 *
 * <p>The interceptor runs inside the method's transaction (after {@code @Transactional} and the EJB container), takes
 * the leases for it (tentative until the transaction prepares), and makes an injected
 * {@link org.leasehold.connector.LeaseLog} append under them while the method runs.
 */
@Inherited
@InterceptorBinding
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.METHOD, ElementType.TYPE})
public @interface Leased {

    /** Lease name templates; {@code {n}} is replaced by argument n. */
    @Nonbinding
    String[] value() default {};

    /** Take shared leases instead of exclusive ones. */
    @Nonbinding
    boolean shared() default false;

    /** How long to wait for the leases in milliseconds; negative means the adapter's default. */
    @Nonbinding
    long waitMillis() default -1;

    /**
     * The JNDI name of the {@link org.leasehold.connector.LeaseConnectionFactory}; empty means the MicroProfile
     * Config property {@code leasehold.connection-factory} if set, else
     * {@value org.leasehold.connector.LeaseConnectionFactory#DEFAULT_JNDI_NAME}.
     */
    @Nonbinding
    String factory() default "";
}
