package org.leasehold.cdi;

import java.io.Serializable;
import java.time.Duration;
import java.util.List;

import jakarta.annotation.Priority;
import jakarta.inject.Inject;
import jakarta.interceptor.AroundInvoke;
import jakarta.interceptor.Interceptor;
import jakarta.interceptor.InvocationContext;

import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.connector.LeaseOptions;
import org.leasehold.inject.Leased;
import org.leasehold.lease.LeaseMode;

/**
 * Applies {@link Leased}: takes the method's leases on a connection enlisted in the current transaction, runs the
 * method with that connection as the one an injected {@link org.leasehold.connector.LeaseLog} uses, and closes the
 * handle afterwards (inside a transaction the leases and buffered messages stay with it until it completes).
 *
 * <p>Its priority ({@code LIBRARY_BEFORE}) places it inside {@code @Transactional} and the EJB container's
 * transaction, so the leases belong to the method's transaction.
 */
@Leased
@Interceptor
@Priority(Interceptor.Priority.LIBRARY_BEFORE)
public class LeasedInterceptor implements Serializable {
    private static final long serialVersionUID = 1L;

    @Inject
    SessionEventsBridge sessionEvents;

    @AroundInvoke
    public Object around(InvocationContext ic) throws Exception {
        Leased spec = binding(ic);
        List<String> names = NameTemplates.expand(spec.value(), ic.getParameters(), ic.getMethod());
        LeaseOptions options = LeaseOptions.of(names).mode(spec.shared() ? LeaseMode.SHARED : LeaseMode.EXCLUSIVE);
        if (spec.waitMillis() >= 0) {
            options = options.waitFor(Duration.ofMillis(spec.waitMillis()));
        }
        String jndiName = FactoryLookup.jndiName(spec.factory());
        LeaseConnectionFactory factory = FactoryLookup.lookup(jndiName);
        // Its session events as CDI events: the default factory's from the application's start, any other's from here.
        sessionEvents.subscribeQuietly(jndiName, factory);
        LeaseConnection c = factory.getConnection();
        CurrentConnections.push(c);
        try {
            c.acquire(options);
            return ic.proceed();
        } finally {
            CurrentConnections.pop();
            c.close();
        }
    }

    private static Leased binding(InvocationContext ic) {
        Leased onMethod = ic.getMethod() == null ? null : ic.getMethod().getAnnotation(Leased.class);
        if (onMethod != null) {
            return onMethod;
        }
        for (Class<?> c = ic.getTarget().getClass(); c != null; c = c.getSuperclass()) {
            Leased onClass = c.getAnnotation(Leased.class);
            if (onClass != null) {
                return onClass;
            }
        }
        throw new IllegalStateException("the @Leased interceptor ran on " + ic.getMethod() + " without finding @Leased");
    }
}
