package org.leasehold.cdi;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;

/** Expands {@code @Leased} name templates: {@code {n}} becomes {@code String.valueOf(argument n)}. */
final class NameTemplates {
    private NameTemplates() {
    }

    static List<String> expand(String[] templates, Object[] args, Method where) {
        if (templates.length == 0) {
            throw new IllegalArgumentException("@Leased on " + describe(where) + " names no lease: give at least one "
                    + "name template, for example @Leased(\"account/{0}\")");
        }
        List<String> names = new ArrayList<>(templates.length);
        for (String t : templates) {
            StringBuilder sb = new StringBuilder(t.length() + 16);
            int i = 0;
            while (i < t.length()) {
                char c = t.charAt(i);
                if (c != '{') {
                    sb.append(c);
                    i++;
                    continue;
                }
                int close = t.indexOf('}', i);
                if (close < 0) {
                    throw new IllegalArgumentException("@Leased template '" + t + "' on " + describe(where)
                            + " has an unclosed '{': write {0}, {1}, ... for the method's arguments");
                }
                String index = t.substring(i + 1, close);
                int n;
                try {
                    n = Integer.parseInt(index);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("@Leased template '" + t + "' on " + describe(where) + " has '{"
                            + index + "}': placeholders are argument numbers, {0} for the first");
                }
                Object[] a = args == null ? new Object[0] : args;
                if (n < 0 || n >= a.length) {
                    throw new IllegalArgumentException("@Leased template '" + t + "' on " + describe(where) + " uses {"
                            + n + "}, but the method has " + a.length + " argument(s)");
                }
                if (a[n] == null) {
                    throw new IllegalArgumentException("@Leased template '" + t + "' on " + describe(where)
                            + ": argument " + n + " is null, so the lease name cannot be formed");
                }
                sb.append(a[n]);
                i = close + 1;
            }
            names.add(sb.toString());
        }
        return names;
    }

    private static String describe(Method m) {
        return m == null ? "the method" : m.getDeclaringClass().getSimpleName() + "." + m.getName();
    }
}
