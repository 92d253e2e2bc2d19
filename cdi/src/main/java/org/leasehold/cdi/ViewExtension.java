package org.leasehold.cdi;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;

import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.spi.AfterDeploymentValidation;
import jakarta.enterprise.inject.spi.BeanManager;
import jakarta.enterprise.inject.spi.Extension;
import jakarta.enterprise.inject.spi.InjectionPoint;
import jakarta.enterprise.inject.spi.ProcessInjectionPoint;

import org.leasehold.inject.LeaseView;

/**
 * Fails the deployment of an application that injects a {@link LeaseView} no {@code ViewDefinition} bean defines (or
 * that several define), with the message {@link ViewRegistry#resolve} gives, rather than at the view's first use.
 */
public class ViewExtension implements Extension {
    private final List<InjectionPoint> points = new ArrayList<>();

    void collect(@Observes ProcessInjectionPoint<?, ?> pip) {
        InjectionPoint ip = pip.getInjectionPoint();
        Type t = ip.getType();
        Type raw = t instanceof ParameterizedType p ? p.getRawType() : t;
        if (raw == LeaseView.class) {
            points.add(ip);
        }
    }

    void check(@Observes AfterDeploymentValidation adv, BeanManager bm) {
        if (points.isEmpty()) {
            return;
        }
        List<ViewRegistry.Defined> defined;
        try {
            defined = bm.createInstance().select(ViewRegistry.class).get().defined();
        } catch (RuntimeException e) {
            adv.addDeploymentProblem(e);
            return;
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
    }
}
