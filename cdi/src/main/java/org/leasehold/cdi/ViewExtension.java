package org.leasehold.cdi;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.spi.AfterDeploymentValidation;
import jakarta.enterprise.inject.spi.Bean;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.enterprise.inject.spi.Extension;
import jakarta.enterprise.inject.spi.InjectionPoint;
import jakarta.enterprise.inject.spi.ProcessBean;
import jakarta.enterprise.inject.spi.ProcessInjectionPoint;

import org.leasehold.bag.ViewDefinition;
import org.leasehold.inject.LeaseView;

/**
 * Fails the deployment of an application that injects a {@link LeaseView} no {@code ViewDefinition} bean defines (or
 * that several define), with the message {@link ViewRegistry#resolve} gives, rather than at the view's first use. It
 * keeps the definition beans it sees being discovered and asks each for its name once the deployment is validated.
 */
public class ViewExtension implements Extension {
    private final List<InjectionPoint> points = new ArrayList<>();
    private final List<Bean<?>> definitions = new ArrayList<>();

    void collect(@Observes ProcessInjectionPoint<?, ?> pip) {
        InjectionPoint ip = pip.getInjectionPoint();
        Type t = ip.getType();
        Type raw = t instanceof ParameterizedType p ? p.getRawType() : t;
        if (raw == LeaseView.class) {
            points.add(ip);
        }
    }

    void definition(@Observes ProcessBean<?> pb) {
        if (definitionType(pb.getBean()) != null) {
            definitions.add(pb.getBean());
        }
    }

    /** The bean's {@code ViewDefinition<S>} type, or null. */
    private static Type definitionType(Bean<?> b) {
        for (Type t : b.getTypes()) {
            if (t instanceof ParameterizedType p && p.getRawType() == ViewDefinition.class) {
                return t;
            }
        }
        return null;
    }

    void check(@Observes AfterDeploymentValidation adv, BeanManager bm) {
        if (points.isEmpty()) {
            return;
        }
        List<ViewRegistry.Defined> defined = new ArrayList<>();
        for (Bean<?> b : definitions) {
            Type type = definitionType(b);
            try {
                ViewDefinition<?> d = (ViewDefinition<?>) bm.getReference(b, type, bm.createCreationalContext(b));
                defined.add(new ViewRegistry.Defined(d, ViewRegistry.stateType(b.getTypes())));
            } catch (RuntimeException e) {
                adv.addDeploymentProblem(e);
                return;
            }
        }
        for (InjectionPoint ip : points) {
            try {
                ViewRegistry.resolve(defined, LeaseViewProducer.viewName(ip), LeaseViewProducer.stateType(ip.getType()),
                        LeaseViewProducer.where(ip));
            } catch (RuntimeException e) {
                adv.addDeploymentProblem(e);
            }
        }
        points.clear();
        definitions.clear();
    }
}
