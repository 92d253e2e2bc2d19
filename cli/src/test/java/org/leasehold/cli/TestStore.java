package org.leasehold.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.ManualTimeSource;

/**
 * A real store under {@code target/cli-tests/<name>}, written through {@link FileBagStore} on a manual clock, and
 * what was appended to it.
 */
final class TestStore implements AutoCloseable {
    /** A bucket boundary, far from minute and hour edges. */
    static final Instant T0 = Instant.parse("2026-11-22T02:43:10Z");
    static final Path BASE = Paths.get("target", "cli-tests").toAbsolutePath();

    final Path root;
    final ManualTimeSource clock = new ManualTimeSource(T0);
    final FileBagStore store;
    /** Every appended message, in append order. */
    final List<Expected> appended = new ArrayList<>();

    /**
     * One appended message.
     *
     * @param log     the log
     * @param at      what the store answered
     * @param index   its index in the append
     * @param leases  the leases it was written under
     * @param payload its payload
     */
    record Expected(String log, Appended at, int index, List<LeaseStamp> leases, byte[] payload) {
    }

    TestStore(String name) throws IOException, org.leasehold.bag.BagStoreException {
        this(name, Duration.ofSeconds(1));
    }

    /** A store whose writer refuses timestamps further than {@code signedTimeBound} from their signed time. */
    TestStore(String name, Duration signedTimeBound) throws IOException, org.leasehold.bag.BagStoreException {
        root = BASE.resolve(name);
        deleteTree(root);
        Files.createDirectories(root);
        store = FileBagStore.open(BagStoreConfig.builder(root).localLockDir(BASE.resolve("writer-locks"))
                .metronome(false).signedTimeBound(signedTimeBound).build(), clock);
    }

    static LeaseStamp lease(String name, long generation) {
        return new LeaseStamp(name, generation, T0.minusSeconds(60), T0.plusSeconds(600), Instant.EPOCH, null, null);
    }

    /** Appends {@code payloads} as one frame under {@code leases} at the clock's time. */
    Appended append(String log, List<LeaseStamp> leases, byte[]... payloads) throws Exception {
        Appended a = store.append(AppendRequest.of(log, leases, payloads));
        for (int i = 0; i < payloads.length; i++) {
            appended.add(new Expected(log, a, i, leases, payloads[i]));
        }
        return a;
    }

    Appended append(String log, List<LeaseStamp> leases, String... texts) throws Exception {
        byte[][] b = new byte[texts.length][];
        for (int i = 0; i < texts.length; i++) {
            b[i] = texts[i].getBytes(StandardCharsets.UTF_8);
        }
        return append(log, leases, b);
    }

    /** What was appended to {@code log}, in read order (timestamp, writer, file, offset, index). */
    List<Expected> expected(String log) {
        List<Expected> l = new ArrayList<>();
        for (Expected e : appended) {
            if (e.log().equals(log)) {
                l.add(e);
            }
        }
        l.sort((a, b) -> {
            int c = a.at().timestamp().compareTo(b.at().timestamp());
            if (c == 0) {
                c = a.at().file().compareTo(b.at().file());
            }
            if (c == 0) {
                c = Long.compare(a.at().offset(), b.at().offset());
            }
            return c != 0 ? c : Integer.compare(a.index(), b.index());
        });
        return l;
    }

    /** The total size of the data files under {@code log}'s directory. */
    long dataBytes(String log) throws IOException {
        long[] total = {0};
        Files.walkFileTree(root.resolve(log), new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) {
                if (file.getFileName().toString().endsWith(".data")) {
                    total[0] += attrs.size();
                }
                return FileVisitResult.CONTINUE;
            }
        });
        return total[0];
    }

    @Override
    public void close() {
        store.close();
    }

    /** Deletes a tree (test cleanup only; the store itself never deletes). */
    static void deleteTree(Path d) throws IOException {
        if (!Files.exists(d)) {
            return;
        }
        Files.walkFileTree(d, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                file.toFile().setWritable(true);
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) {
                dir.toFile().setWritable(true);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
