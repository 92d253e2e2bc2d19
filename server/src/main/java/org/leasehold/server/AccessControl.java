package org.leasehold.server;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Per-namespace access control: which principal may do what to which names. Read from a file with one rule per line:
 *
 * <pre>
 * # principal   names       permissions
 * billing       tenant/*    lease,check
 * ops           *           inspect,check
 * *             public/*    lease
 * </pre>
 *
 * A principal of {@code *} means every authenticated caller. A name pattern is an exact name, a prefix ending in
 * {@code *} ({@code tenant/*} covers {@code tenant/42} and {@code tenant/42/x}), or {@code *} for every name.
 * Permissions: {@code lease} (acquire, upgrade, renew, release), {@code check} (fencing), {@code inspect} (admin view),
 * {@code all} (those three), and {@code admin} (release any principal's lease; never implied by {@code all}). A call
 * is allowed when some rule gives the caller the permission on every name it names; anything else is denied, and the
 * answer says who, which name and which permission.
 */
final class AccessControl {

    /** What a rule can permit. */
    enum Permission {
        LEASE, CHECK, INSPECT,
        /** Ends (releases) a lease granted to another principal. Only named explicitly: {@code all} does not give it. */
        ADMIN;

        /** What {@code all} gives. */
        static final Set<Permission> ALL = Set.copyOf(EnumSet.of(LEASE, CHECK, INSPECT));

        String word() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private record Rule(String principal, String pattern, Set<Permission> permissions, int line) {
        boolean appliesTo(String who) {
            return principal.equals("*") || principal.equals(who);
        }

        boolean covers(String name) {
            if (pattern.equals("*")) {
                return true;
            }
            if (pattern.endsWith("*")) {
                return name.startsWith(pattern.substring(0, pattern.length() - 1));
            }
            return name.equals(pattern);
        }

        /** True if some name starting with {@code prefix} may be covered. */
        boolean mayCoverSomeUnder(String prefix) {
            if (pattern.endsWith("*")) {
                String p = pattern.substring(0, pattern.length() - 1);
                return prefix.startsWith(p) || p.startsWith(prefix);
            }
            return pattern.startsWith(prefix);
        }

        /** True if every name starting with {@code prefix} is covered. */
        boolean coversPrefix(String prefix) {
            if (pattern.equals("*")) {
                return true;
            }
            return pattern.endsWith("*") && prefix.startsWith(pattern.substring(0, pattern.length() - 1));
        }
    }

    private final List<Rule> rules;
    private final String source;

    private AccessControl(List<Rule> rules, String source) {
        this.rules = rules;
        this.source = source;
    }

    /** Everything but {@code admin} allowed to every authenticated caller (no ACL file). */
    static AccessControl allowAll() {
        return new AccessControl(List.of(new Rule("*", "*", EnumSet.copyOf(Permission.ALL), 0)), "(no ACL file)");
    }

    static AccessControl read(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        List<Rule> rules = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length != 3) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + ": expected '<principal> <names> "
                        + "<permissions>', for example 'billing tenant/* lease,check'; got " + f.length + " field(s)");
            }
            String pattern = f[1];
            if (pattern.indexOf('*') >= 0 && pattern.indexOf('*') != pattern.length() - 1) {
                throw new IllegalArgumentException(file + " line " + (i + 1) + ": the names pattern '" + pattern
                        + "' may have '*' only at its end ('tenant/*', or '*' for every name)");
            }
            Set<Permission> perms = EnumSet.noneOf(Permission.class);
            for (String p : f[2].split(",")) {
                String w = p.strip().toLowerCase(Locale.ROOT);
                if (w.equals("all")) {
                    perms.addAll(Permission.ALL);
                    continue;
                }
                try {
                    perms.add(Permission.valueOf(w.toUpperCase(Locale.ROOT)));
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException(file + " line " + (i + 1) + ": unknown permission '" + p
                            + "'; use lease, check, inspect, all or admin", e);
                }
            }
            rules.add(new Rule(f[0], pattern, perms, i + 1));
        }
        return new AccessControl(List.copyOf(rules), file.toString());
    }

    /** Null if {@code who} may do {@code what} to every name; otherwise the first name it may not. */
    String firstDenied(String who, Permission what, Iterable<String> names) {
        for (String name : names) {
            if (!allowed(who, what, name)) {
                return name == null ? "" : name;
            }
        }
        return null;
    }

    boolean allowed(String who, Permission what, String name) {
        if (name == null) {
            return true; // the engine refuses a null name with its own clear answer
        }
        for (Rule r : rules) {
            if (r.permissions.contains(what) && r.appliesTo(who) && r.covers(name)) {
                return true;
            }
        }
        return false;
    }

    /** True if {@code who} may inspect every name under {@code prefix}. */
    boolean mayInspectAll(String who, String prefix) {
        for (Rule r : rules) {
            if (r.permissions.contains(Permission.INSPECT) && r.appliesTo(who) && r.coversPrefix(prefix)) {
                return true;
            }
        }
        return false;
    }

    /** True if {@code who} may inspect some name starting with {@code prefix}. */
    boolean mayInspectSomeUnder(String who, String prefix) {
        String p = prefix == null ? "" : prefix;
        for (Rule r : rules) {
            if (r.permissions.contains(Permission.INSPECT) && r.appliesTo(who) && r.mayCoverSomeUnder(p)) {
                return true;
            }
        }
        return false;
    }

    String source() {
        return source;
    }

    int size() {
        return rules.size();
    }
}
