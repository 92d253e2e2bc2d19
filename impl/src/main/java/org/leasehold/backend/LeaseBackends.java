package org.leasehold.backend;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.ServiceLoader;
import java.util.regex.Pattern;

import org.leasehold.lease.LeaseService;
import org.leasehold.time.TimeSource;

/** Finds the {@link LeaseBackend} of a service specification's scheme on a class loader, and opens it. */
public final class LeaseBackends {
    private static final Pattern SCHEME = Pattern.compile("[a-z][a-z0-9+.-]*:.*", Pattern.DOTALL);

    private LeaseBackends() {
    }

    /** True if {@code spec} starts with a scheme ({@code etcd:...}) that a backend may serve. */
    public static boolean hasScheme(String spec) {
        return spec != null && SCHEME.matcher(spec.trim().toLowerCase(Locale.ROOT)).matches();
    }

    /** The scheme of {@code spec}, in lower case. */
    public static String scheme(String spec) {
        String s = spec.trim();
        return s.substring(0, s.indexOf(':')).toLowerCase(Locale.ROOT);
    }

    /**
     * Opens the lease service {@code spec} names with the backend for its scheme found on {@code loader}.
     *
     * @throws IllegalArgumentException no backend serves the scheme (the message says which jars to add), or the
     *                                  backend refused the specification
     */
    public static LeaseService open(String spec, LeaseBackend.Settings settings, TimeSource time, ClassLoader loader) {
        String scheme = scheme(spec);
        List<String> found = new ArrayList<>();
        for (LeaseBackend b : ServiceLoader.load(LeaseBackend.class, loader)) {
            if (b.scheme().equalsIgnoreCase(scheme)) {
                return b.open(spec.trim(), settings, time);
            }
            found.add(b.scheme());
        }
        throw new IllegalArgumentException("no lease backend for '" + scheme + ":' is on the class path (found "
                + (found.isEmpty() ? "none" : String.join(", ", found)) + "): add the leasehold-" + scheme
                + " jar and its dependencies (for etcd see docs/ETCD.md, \"Adding the backend\")");
    }
}
