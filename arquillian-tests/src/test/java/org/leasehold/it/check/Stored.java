package org.leasehold.it.check;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.store.check.LogChecker;

/** What a log holds, read with the independent {@link LogChecker}; an absent log holds nothing. */
public final class Stored {
    private Stored() {
    }

    /** The bag store root of the Arquillian tests' server (a system property of that server and of the test JVM). */
    public static Path itRoot() {
        String root = System.getProperty("leasehold.it.store");
        if (root == null) {
            throw new IllegalStateException("the system property leasehold.it.store (the bag store root) is not set: "
                    + "run the tests through Maven (failsafe passes it to Payara Micro)");
        }
        return Path.of(root);
    }

    /** Every message of {@code log}, checked against the format; the result lists any violation. */
    public static LogChecker.Result log(Path root, String log) throws IOException {
        Path dir = root.resolve(log);
        if (!Files.isDirectory(dir)) {
            return new LogChecker.Result(List.of(), List.of());
        }
        return LogChecker.check(dir);
    }

    /** The stored messages whose payload is {@code text}, in the store's order. */
    public static List<LogChecker.Msg> withText(LogChecker.Result r, String text) {
        List<LogChecker.Msg> out = new ArrayList<>();
        for (LogChecker.Msg m : r.ordered()) {
            if (m.text().equals(text)) {
                out.add(m);
            }
        }
        return out;
    }

    /** The stored messages whose payload starts with {@code prefix}, in the store's order. */
    public static List<LogChecker.Msg> startingWith(LogChecker.Result r, String prefix) {
        List<LogChecker.Msg> out = new ArrayList<>();
        for (LogChecker.Msg m : r.ordered()) {
            if (m.text().startsWith(prefix)) {
                out.add(m);
            }
        }
        return out;
    }
}
