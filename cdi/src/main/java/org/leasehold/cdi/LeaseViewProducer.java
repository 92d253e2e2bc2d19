package org.leasehold.cdi;

import java.lang.annotation.Annotation;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.time.Instant;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.Dependent;
import jakarta.enterprise.inject.Produces;
import jakarta.enterprise.inject.spi.InjectionPoint;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.LeaseConnectionFactory;
import org.leasehold.inject.LeaseView;
import org.leasehold.inject.View;

/**
 * Makes {@link LeaseView} injectable: {@code @Inject LeaseView<S>} is the view of the one {@code ViewDefinition<S>}
 * bean of the application, {@code @Inject @View("name") LeaseView<S>} the view of that name. A view that no
 * definition bean defines, or that several do, fails the deployment ({@link ViewExtension}) and, if asked for by
 * programmatic lookup, the lookup, with a message that lists the application's views.
 */
@ApplicationScoped
public class LeaseViewProducer {

    @Inject
    ViewRegistry registry;

    @Produces
    @Dependent
    public <S> LeaseView<S> byStateType(InjectionPoint ip) {
        return produce(ip);
    }

    @Produces
    @Dependent
    @View("")
    public <S> LeaseView<S> byName(InjectionPoint ip) {
        return produce(ip);
    }

    @SuppressWarnings("unchecked")
    private <S> LeaseView<S> produce(InjectionPoint ip) {
        ViewDefinition<?> d = ViewRegistry.resolve(registry.defined(), viewName(ip), stateType(ip.getType()), where(ip));
        return new InjectedView<>((ViewDefinition<S>) d);
    }

    /** The name in the injection point's {@code @View}, or null. */
    static String viewName(InjectionPoint ip) {
        for (Annotation a : ip.getQualifiers()) {
            if (a instanceof View v) {
                return v.value();
            }
        }
        return null;
    }

    /** The {@code S} of {@code LeaseView<S>}, or {@code Object} for a raw {@code LeaseView}. */
    static Type stateType(Type leaseView) {
        return leaseView instanceof ParameterizedType p ? p.getActualTypeArguments()[0] : Object.class;
    }

    static String where(InjectionPoint ip) {
        return ip.getMember() == null ? String.valueOf(ip) : ip.getMember().getDeclaringClass().getName() + "."
                + ip.getMember().getName();
    }

    /** Reads on the current {@code @Leased} method's connection, else on a connection of the default factory. */
    static final class InjectedView<S> implements LeaseView<S> {
        private final ViewDefinition<S> definition;

        InjectedView(ViewDefinition<S> definition) {
            this.definition = definition;
        }

        @Override
        public ViewDefinition<S> definition() {
            return definition;
        }

        @Override
        public ViewState<S> read() throws LeaseholdException {
            LeaseConnection current = CurrentConnections.current();
            if (current != null) {
                return current.view(definition);
            }
            try (LeaseConnection c = ViewRegistry.factory().getConnection()) {
                return c.view(definition);
            }
        }

        @Override
        public Instant build() throws LeaseholdException {
            LeaseConnectionFactory f = ViewRegistry.factory();
            // Registered at the application's start, unless the factory could not be had then.
            f.registerView(definition);
            return f.buildView(definition.name());
        }

        @Override
        public String toString() {
            return "LeaseView '" + definition.name() + "'";
        }
    }
}
