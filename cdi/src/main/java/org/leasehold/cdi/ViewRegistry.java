package org.leasehold.cdi;

import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;

import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.context.BeforeDestroyed;
import jakarta.enterprise.context.Initialized;
import jakarta.enterprise.event.Observes;
import jakarta.enterprise.inject.AmbiguousResolutionException;
import jakarta.enterprise.inject.Any;
import jakarta.enterprise.inject.Instance;
import jakarta.enterprise.inject.UnsatisfiedResolutionException;
import jakarta.enterprise.util.TypeLiteral;
import jakarta.inject.Inject;

import org.leasehold.LeaseholdException;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.connector.LeaseConnectionFactory;

/**
 * The application's {@link ViewDefinition} beans: registered with the connection factory {@code @Leased} uses by
 * default when the application starts (the adapter then builds their snapshots in the background), unregistered when
 * it stops, and found for an injected {@link org.leasehold.inject.LeaseView} by name or by state type. A factory that
 * cannot be found is logged once ({@code LEASEHOLD-5005}); the views can still be read, from whatever snapshots exist.
 */
@ApplicationScoped
public class ViewRegistry {
    private static final System.Logger LOG = System.getLogger(ViewRegistry.class.getName());
    @Inject
    @Any
    Instance<Object> beans;

    /** One definition bean: the instance and the state type its bean type declares (null if it declares none). */
    record Defined(ViewDefinition<?> definition, Type state) {
    }

    /** Guarded by {@code this}; null until first asked for. */
    private List<Defined> defined;
    /** The factory the definitions were registered with, or null. Guarded by {@code this}. */
    private LeaseConnectionFactory registeredWith;

    /** The application's definition beans, each one instance (its contextual reference), found once. */
    synchronized List<Defined> defined() {
        if (defined == null) {
            List<Defined> found = new ArrayList<>();
            Instance<ViewDefinition<?>> all = beans.select(new TypeLiteral<ViewDefinition<?>>() { });
            for (Instance.Handle<ViewDefinition<?>> h : all.handles()) {
                found.add(new Defined(h.get(), stateType(h.getBean().getTypes())));
            }
            defined = List.copyOf(found);
        }
        return defined;
    }

    /** The state type of the {@code ViewDefinition<S>} among {@code types}, or null. */
    static Type stateType(Iterable<Type> types) {
        for (Type t : types) {
            if (t instanceof ParameterizedType p && p.getRawType() == ViewDefinition.class) {
                return p.getActualTypeArguments()[0];
            }
        }
        return null;
    }

    /**
     * The definition an injection point asks for: by name ({@code @View("...")}, {@code name} not null), else the one
     * whose state type is {@code state}. The exceptions say what was asked for, where, and which views exist.
     */
    static ViewDefinition<?> resolve(List<Defined> defined, String name, Type state, Object where) {
        List<Defined> matching = new ArrayList<>();
        for (Defined d : defined) {
            if (name != null ? name.equals(d.definition().name()) : state.equals(d.state())) {
                matching.add(d);
            }
        }
        if (matching.size() == 1) {
            return matching.get(0).definition();
        }
        TreeMap<String, String> views = new TreeMap<>();
        for (Defined d : defined) {
            views.put(d.definition().name(), d.state() == null ? "?" : d.state().getTypeName());
        }
        String asked = name != null ? "the view named '" + name + "'" : "a view whose state is " + state.getTypeName();
        if (matching.isEmpty()) {
            throw new UnsatisfiedResolutionException("the LeaseView injected at " + where + " asks for " + asked
                    + ", and no ViewDefinition bean of the application defines it (the application's views, name=state: "
                    + views + "): declare the definition as a bean (for example an @ApplicationScoped class "
                    + "implementing ViewDefinition<S>), or name an existing view with @View(\"...\")");
        }
        throw new AmbiguousResolutionException("the LeaseView injected at " + where + " asks for " + asked + ", and "
                + matching.size() + " ViewDefinition beans define one (" + String.join(", ", names(matching)) + "): choose one with "
                + "@View(\"...\")" + (name != null ? " after giving each view its own name" : ""));
    }

    private static List<String> names(List<Defined> ds) {
        List<String> out = new ArrayList<>();
        for (Defined d : ds) {
            out.add(d.definition().name() + " (" + d.definition().getClass().getName() + ")");
        }
        return out;
    }

    void start(@Observes @Initialized(ApplicationScoped.class) Object started) {
        List<Defined> all = defined();
        if (all.isEmpty()) {
            return;
        }
        String jndi = FactoryLookup.jndiName(null);
        try {
            LeaseConnectionFactory f = FactoryLookup.lookup(jndi);
            for (Defined d : all) {
                f.registerView(d.definition());
            }
            synchronized (this) {
                registeredWith = f;
            }
        } catch (LeaseholdException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5005 the views of this application are not registered with "
                    + "the connection factory at {0}, so the adapter builds no snapshot of them: {1}; they can still be "
                    + "read, from the snapshots that exist", jndi, e.getMessage());
        }
    }

    void stop(@Observes @BeforeDestroyed(ApplicationScoped.class) Object stopping) {
        LeaseConnectionFactory f;
        synchronized (this) {
            f = registeredWith;
            registeredWith = null;
        }
        if (f == null) {
            return;
        }
        for (Defined d : defined()) {
            try {
                f.unregisterView(d.definition());
            } catch (LeaseholdException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "LEASEHOLD-5006 view ''{0}'' could not be unregistered from the "
                        + "connection factory: {1}", d.definition().name(), e.getMessage());
            }
        }
    }

    /** The factory an injected view reads and builds through outside a {@code @Leased} method. */
    static LeaseConnectionFactory factory() throws LeaseholdException {
        return FactoryLookup.lookup(null);
    }
}
