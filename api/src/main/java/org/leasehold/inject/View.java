package org.leasehold.inject;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import jakarta.enterprise.util.AnnotationLiteral;
import jakarta.enterprise.util.Nonbinding;
import jakarta.inject.Qualifier;

/**
 * Chooses the view an injected {@link LeaseView} reads by its name ({@link org.leasehold.bag.ViewDefinition#name()}):
 * {@code @Inject @View("balances") LeaseView<TreeMap<String, Long>> balances;}. Without it, the view is the one
 * {@code ViewDefinition} bean whose state type is the {@code LeaseView}'s.
 */
@Qualifier
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.FIELD, ElementType.PARAMETER, ElementType.METHOD, ElementType.TYPE})
public @interface View {

    /** The view's name. */
    @Nonbinding
    String value();

    /** {@code @View} in code, for producers and programmatic lookup. */
    final class Literal extends AnnotationLiteral<View> implements View {
        private static final long serialVersionUID = 1L;
        private final String value;

        private Literal(String value) {
            this.value = value;
        }

        public static Literal of(String value) {
            return new Literal(value);
        }

        @Override
        public String value() {
            return value;
        }
    }
}
