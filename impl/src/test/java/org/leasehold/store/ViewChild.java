package org.leasehold.store;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Instant;

import org.leasehold.bag.BagStoreException;
import org.leasehold.time.SystemTimeSource;

/**
 * A view builder in its own JVM, on the real clock: {@code <root> <lockDir> <log> <writerId> <through>} opens a
 * store with the geometry of {@link SegmentsRandomizedTest}, prints {@code READY}, waits for a line, builds
 * {@link TallyView} {@code tally} through {@code through}, printing {@code PREPARED} once its prepared file is forced
 * and waiting for another line before linking it, and prints {@code OUTCOME <outcome> <file>} (or
 * {@code FAILED <exception>: <message>}).
 */
public final class ViewChild {
    private ViewChild() {
    }

    public static void main(String[] a) throws Exception {
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Path root = Paths.get(a[0]);
        BagStoreConfig config = SegmentsRandomizedTest.config(root, a[3]).localLockDir(Paths.get(a[1])).build();
        try (SystemTimeSource time = new SystemTimeSource("child-timer");
                FileBagStore store = FileBagStore.open(config, time)) {
            LogHandle log = new LogHandle(a[2], root.resolve(a[2]), LogGeometry.of(config));
            Views views = new Views(store.context(), store, () -> {
                out.println("PREPARED");
                try {
                    in.readLine();
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
            out.println("READY");
            in.readLine();
            ViewSnapshotReport r = views.build(log, new TallyView("tally"), LogGeometry.micros(Instant.parse(a[4])));
            out.println("OUTCOME " + r.outcome() + " " + r.file());
        } catch (BagStoreException e) {
            out.println("FAILED " + e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }
}
