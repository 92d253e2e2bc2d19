package org.leasehold;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Holds the log ids of the whole project to their registries: each module that logs {@code LEASEHOLD-nnnn} lists
 * every id it uses, with its one meaning, in {@code src/main/resources/META-INF/leasehold/log-ids-<module>.properties}.
 * Reads the real source tree and docs (the project root is found from the working directory upwards) and names the
 * files and lines of every breach.
 */
final class LogIdRegistryTest {

    private static final Pattern ID = Pattern.compile("LEASEHOLD-(\\d{4})");
    private static final Pattern RANGE = Pattern.compile("LEASEHOLD-(\\d)xxx");
    private static final Pattern MODULE = Pattern.compile("<module>([^<]+)</module>");
    private static final Pattern PLACEHOLDER = Pattern.compile("\\{\\d+}");

    /** An occurrence of an id: a use starts a string literal (a message), a reference is anything else. */
    private record Site(String id, String module, Path file, int line, boolean use, String text) {
        @Override
        public String toString() {
            return file + ":" + line + (use ? " \"" + id + " " + text + "\"" : " (reference)");
        }
    }

    private record Entry(String module, Path file, int line, String meaning) {
    }

    private static Path root;
    private static final Map<String, Entry> REGISTRY = new TreeMap<>();
    private static final List<String> REGISTRY_PROBLEMS = new ArrayList<>();
    private static final Map<String, List<Site>> SITES = new TreeMap<>();

    @BeforeAll
    static void readTree() throws IOException {
        root = projectRoot();
        Matcher modules = MODULE.matcher(Files.readString(root.resolve("pom.xml")));
        while (modules.find()) {
            String module = modules.group(1).trim();
            readRegistry(module);
            Path sources = root.resolve(module).resolve("src/main/java");
            if (Files.isDirectory(sources)) {
                try (Stream<Path> files = Files.walk(sources)) {
                    for (Path f : files.filter(p -> p.toString().endsWith(".java")).sorted().toList()) {
                        scan(module, f);
                    }
                }
            }
        }
    }

    @Test
    void theRegistriesListEachIdOnceInTheirOwnRange() {
        assertFalse(REGISTRY.isEmpty(), "no registry found under " + root);
        assertTrue(REGISTRY_PROBLEMS.isEmpty(), () -> "registry problems:\n" + String.join("\n", REGISTRY_PROBLEMS));
    }

    @Test
    void everyIdUsedInTheSourcesIsInTheRegistryOfItsModule() {
        List<String> problems = new ArrayList<>();
        SITES.forEach((id, sites) -> {
            Entry entry = REGISTRY.get(id);
            for (Site s : sites) {
                if (entry == null) {
                    problems.add(id + " is in no registry: " + s);
                } else if (s.use() && !entry.module().equals(s.module())) {
                    problems.add(id + " is registered by module " + entry.module() + " (" + entry.file() + ":"
                            + entry.line() + ") but logged by module " + s.module() + ": " + s);
                }
            }
        });
        assertTrue(problems.isEmpty(), () -> "ids missing from their registry (add them to "
                + "META-INF/leasehold/log-ids-<module>.properties with their meaning):\n" + String.join("\n", problems));
    }

    @Test
    void eachIdHasOneMessageText() {
        List<String> problems = new ArrayList<>();
        SITES.forEach((id, sites) -> {
            List<Site> uses = sites.stream().filter(Site::use).toList();
            if (uses.stream().map(Site::text).distinct().count() > 1) {
                StringBuilder b = new StringBuilder(id + " is used for more than one message (give each its own id):");
                uses.forEach(u -> b.append("\n  ").append(u));
                problems.add(b.toString());
            }
        });
        assertTrue(problems.isEmpty(), () -> String.join("\n", problems));
    }

    @Test
    void everyRegisteredIdIsUsed() {
        List<String> problems = new ArrayList<>();
        REGISTRY.forEach((id, entry) -> {
            boolean used = SITES.getOrDefault(id, List.of()).stream()
                    .anyMatch(s -> s.use() && s.module().equals(entry.module()));
            if (!used) {
                problems.add(entry.file() + ":" + entry.line() + " " + id + " (" + entry.meaning() + ") is logged "
                        + "nowhere in module " + entry.module());
            }
        });
        assertTrue(problems.isEmpty(), () -> "registered but unused ids (remove them; never reuse the number):\n"
                + String.join("\n", problems));
    }

    @Test
    void theDocsNameRegisteredIdsWithTheirMessages() throws IOException {
        List<Path> docs = new ArrayList<>();
        docs.add(root.resolve("README.md"));
        try (Stream<Path> files = Files.list(root.resolve("docs"))) {
            files.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        List<String> problems = new ArrayList<>();
        int mentions = 0;
        for (Path doc : docs) {
            List<String> lines = Files.readAllLines(doc, StandardCharsets.UTF_8);
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i);
                String where = root.relativize(doc) + ":" + (i + 1);
                Matcher m = ID.matcher(line);
                while (m.find()) {
                    mentions++;
                    String id = m.group();
                    if (!REGISTRY.containsKey(id)) {
                        problems.add(where + " names " + id + ", which is in no registry");
                        continue;
                    }
                    String quoted = quotedAfter(line, m.end());
                    String source = messageText(id);
                    if (source != null && !agrees(source, quoted)) {
                        problems.add(where + " quotes " + id + " as \"" + quoted + "\" but the sources log \""
                                + source + "\"");
                    }
                }
                Matcher r = RANGE.matcher(line);
                while (r.find()) {
                    String digit = r.group(1);
                    if (REGISTRY.keySet().stream().noneMatch(id -> id.startsWith("LEASEHOLD-" + digit))) {
                        problems.add(where + " names the range " + r.group() + ", in which no id is registered");
                    }
                }
            }
        }
        assertTrue(mentions > 0, "the docs name no log id: is " + root + " the project root?");
        assertTrue(problems.isEmpty(), () -> "docs out of step with the registry:\n" + String.join("\n", problems));
    }

    @Test
    void aQuotationAgreesOnlyWithItsOwnMessage() {
        assertTrue(agrees("the transaction of {0} rolls back: {1}", "the transaction of "));
        assertTrue(agrees("the transaction of {0} rolls back: {1}", "the"));
        assertTrue(agrees("principal ''{0}'' (admin) released {1}, granted to ", "principal 'ops' (admin) released"));
        assertTrue(agrees("the Leasehold connection definition for log {0} ", "the Leasehold connection "
                + "definition for log owned at"));
        assertTrue(agrees("ready grpc=", "ready grpc=127.0.0.1:7420 http=7421"));
        assertTrue(agrees("anything", ""));
        assertFalse(agrees("principal ''{0}'' (admin) released {1}", "principal 'ops' (user) released"));
        assertFalse(agrees("bag store opened at {0} as writer {1}", "lease server listening on"));
        assertFalse(agrees("the transaction of {0} rolls back: {1}", "the transaction of x is committed: y"));
    }

    private static void readRegistry(String module) throws IOException {
        Path file = root.resolve(module).resolve("src/main/resources/META-INF/leasehold/log-ids-" + module
                + ".properties");
        if (!Files.exists(file)) {
            return;
        }
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        Path shown = root.relativize(file);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            int eq = line.indexOf('=');
            String id = eq < 0 ? line : line.substring(0, eq).strip();
            String meaning = eq < 0 ? "" : line.substring(eq + 1).strip();
            if (!ID.matcher(id).matches() || meaning.isEmpty()) {
                REGISTRY_PROBLEMS.add(shown + ":" + (i + 1) + " is not 'LEASEHOLD-nnnn=meaning': " + line);
                continue;
            }
            Entry earlier = REGISTRY.putIfAbsent(id, new Entry(module, shown, i + 1, meaning));
            if (earlier != null) {
                REGISTRY_PROBLEMS.add(shown + ":" + (i + 1) + " registers " + id + " again; first at "
                        + earlier.file() + ":" + earlier.line());
            }
        }
    }

    private static void scan(String module, Path file) throws IOException {
        List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        Path shown = root.relativize(file);
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher m = ID.matcher(line);
            while (m.find()) {
                boolean use = m.start() > 0 && line.charAt(m.start() - 1) == '"';
                String text = use ? literalRest(line, m.end()).strip() : "";
                SITES.computeIfAbsent(m.group(), k -> new ArrayList<>())
                        .add(new Site(m.group(), module, shown, i + 1, use, text));
            }
        }
    }

    /** The rest of the string literal that starts at {@code from}, on its line. */
    private static String literalRest(String line, int from) {
        StringBuilder b = new StringBuilder();
        for (int i = from; i < line.length(); i++) {
            char c = line.charAt(i);
            if (c == '\\' && i + 1 < line.length()) {
                b.append(c).append(line.charAt(++i));
            } else if (c == '"') {
                break;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }

    /** The text a doc gives after an id inside its code span, up to an ellipsis (what the doc leaves out). */
    private static String quotedAfter(String line, int from) {
        int tick = line.indexOf('`', from);
        String text = (tick < 0 ? line.substring(from) : line.substring(from, tick)).strip();
        for (String cut : List.of("…", "...")) {
            int at = text.indexOf(cut);
            if (at >= 0) {
                text = text.substring(0, at);
            }
        }
        return text;
    }

    private static String messageText(String id) {
        return SITES.getOrDefault(id, List.of()).stream().filter(Site::use).map(Site::text).findFirst().orElse(null);
    }

    /**
     * Whether a doc's quotation and the message's first literal can be the same message: a placeholder stands for
     * any text (for the one the doc stops in: any text without parentheses, colons, semicolons or commas), and
     * either may stop before the other (the literal at a concatenation, the doc at an ellipsis).
     */
    static boolean agrees(String source, String quoted) {
        String[] parts = PLACEHOLDER.split(source.replace("''", "'"), -1);
        String doc = quoted.strip();
        StringBuilder whole = new StringBuilder();
        for (int k = 0; k < parts.length; k++) {
            if (k > 0) {
                if (Pattern.matches(whole + "[^():;,]*", doc)) {
                    return true;
                }
                whole.append(".*?");
            }
            String p = parts[k];
            boolean stopsInLiteral = k == 0 ? Pattern.matches(anyPrefixOf(p), doc) : !p.isEmpty()
                    && Pattern.matches(whole + Pattern.quote(p.substring(0, 1)) + anyPrefixOf(p.substring(1)), doc);
            if (stopsInLiteral) {
                return true;
            }
            whole.append(Pattern.quote(parts[k]));
        }
        return Pattern.compile(whole.toString()).matcher(doc).lookingAt();
    }

    /** A regex matching exactly the prefixes of {@code s}, the empty one included. */
    private static String anyPrefixOf(String s) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            b.append("(?:").append(Pattern.quote(String.valueOf(s.charAt(i))));
        }
        b.append(")?".repeat(s.length()));
        return b.toString();
    }

    private static Path projectRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isDirectory(p.resolve("docs")) && Files.exists(p.resolve("impl/pom.xml"))) {
                return p;
            }
        }
        throw new IllegalStateException("no project root (with docs/ and impl/pom.xml) above "
                + Path.of("").toAbsolutePath());
    }
}
