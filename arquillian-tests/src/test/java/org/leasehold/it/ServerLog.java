package org.leasehold.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * The server's log as an in-container test sees it: the records of the Leasehold loggers ({@code org.leasehold}) from
 * {@link #capture()} on, and on WildFly also the lines of its {@code server.log} from the server's start (records
 * logged before the test, while the server booted). Payara Micro logs to its console only, which the test cannot
 * read from inside the server.
 */
final class ServerLog implements AutoCloseable {
    /** Held while capturing: a logger nobody references may be collected, and its handler with it. */
    private final Logger logger = Logger.getLogger("org.leasehold");
    private final List<String> captured = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        private final SimpleFormatter formatter = new SimpleFormatter();

        @Override
        public void publish(LogRecord r) {
            captured.add(r.getLevel() + " [" + r.getLoggerName() + "] " + formatter.formatMessage(r));
        }

        @Override
        public void flush() {
            // Nothing buffered.
        }

        @Override
        public void close() {
            // Nothing held.
        }
    };

    private ServerLog() {
        logger.addHandler(handler);
    }

    /** Starts recording the Leasehold loggers' records. */
    static ServerLog capture() {
        return new ServerLog();
    }

    /** The lines containing every one of {@code texts}: recorded since {@link #capture()}, and WildFly's server.log. */
    List<String> lines(String... texts) {
        List<String> all = new ArrayList<>(captured);
        String dir = System.getProperty("jboss.server.log.dir");
        if (dir != null && Files.isRegularFile(Path.of(dir, "server.log"))) {
            try {
                all.addAll(Files.readAllLines(Path.of(dir, "server.log"), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new UncheckedIOException("could not read WildFly's server.log in " + dir, e);
            }
        }
        return all.stream().filter(l -> List.of(texts).stream().allMatch(l::contains)).toList();
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }

    /**
     * Every throwable in {@code t}'s chain, causes and suppressed exceptions included, as {@code "class: message"}, in
     * the order they are found (depth first).
     */
    static List<String> chain(Throwable t) {
        List<String> out = new ArrayList<>();
        walk(t, out, Collections.newSetFromMap(new IdentityHashMap<>()));
        return out;
    }

    private static void walk(Throwable t, List<String> out, Set<Throwable> seen) {
        if (t == null || !seen.add(t)) {
            return;
        }
        out.add(t.getClass().getName() + ": " + t.getMessage());
        for (Throwable s : t.getSuppressed()) {
            walk(s, out, seen);
        }
        walk(t.getCause(), out, seen);
    }
}
