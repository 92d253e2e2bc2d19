package org.leasehold.store;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.time.ManualTimeSource;

/** Shared helpers: fresh directories under {@code target/store-tests}, configurations, leases and reads. */
final class StoreFixture {
    /** A bucket boundary, far from minute and hour edges. */
    static final Instant T0 = Instant.parse("2026-11-22T02:43:10Z");
    /**
     * {@code target/store-tests}, or {@code target/store-tests/pid-<pid>} when the system property
     * {@code leasehold.test.dirPerProcess} is true: mutation testing runs the same tests in two worker processes at
     * once, which must not share a test's directory.
     */
    static final Path BASE = Boolean.getBoolean("leasehold.test.dirPerProcess")
            ? Paths.get("target", "store-tests", "pid-" + ProcessHandle.current().pid()).toAbsolutePath()
            : Paths.get("target", "store-tests").toAbsolutePath();
    static final Path LOCKS = BASE.resolve("writer-locks");

    private StoreFixture() {
    }

    /** An empty directory {@code target/store-tests/<name>}. */
    static Path freshDir(String name) throws IOException {
        Path d = BASE.resolve(name);
        deleteTree(d);
        Files.createDirectories(d);
        return d;
    }

    /** Deletes a tree (test cleanup only; the store itself never deletes). */
    static void deleteTree(Path d) throws IOException {
        if (!Files.exists(d)) {
            return;
        }
        Files.walkFileTree(d, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** Defaults (1 s buckets, 2 s grace, 500 ms clock error), no metronome, local locks under target. */
    static BagStoreConfig.Builder config(Path root) {
        return BagStoreConfig.builder(root).localLockDir(LOCKS).metronome(false);
    }

    static ManualTimeSource clock() {
        return new ManualTimeSource(T0);
    }

    /** A lease stamp with an explicit window, writable from the epoch. */
    static LeaseStamp lease(String name, long generation, Instant floor, Instant deadline) {
        return new LeaseStamp(name, generation, floor, deadline, Instant.EPOCH, null, null);
    }

    /** A lease stamp valid for a minute around {@code T0}. */
    static LeaseStamp lease(String name, long generation) {
        return lease(name, generation, T0.minusSeconds(60), T0.plusSeconds(60));
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String text(Message m) {
        return new String(m.payload(), StandardCharsets.UTF_8);
    }

    static AppendRequest req(String log, List<LeaseStamp> leases, String... payloads) {
        byte[][] b = new byte[payloads.length][];
        for (int i = 0; i < payloads.length; i++) {
            b[i] = bytes(payloads[i]);
        }
        return AppendRequest.of(log, leases, b);
    }

    /** Every message of a read. */
    static List<Message> readAll(FileBagStore store, ReadRequest r) throws BagStoreException {
        List<Message> out = new ArrayList<>();
        try (MessageStream s = store.read(r)) {
            Message m;
            while ((m = s.next()) != null) {
                out.add(m);
            }
        }
        return out;
    }

    /** The payload texts of a read. */
    static List<String> texts(FileBagStore store, ReadRequest r) throws BagStoreException {
        List<String> out = new ArrayList<>();
        for (Message m : readAll(store, r)) {
            out.add(text(m));
        }
        return out;
    }

    /** Writes {@code bytes} over {@code file} at {@code at} (damage by hand). */
    static void overwrite(Path file, long at, byte... bytes) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(at);
            f.write(bytes);
        }
    }

    /** Cuts {@code file} to {@code size} bytes. */
    static void cut(Path file, long size) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(size);
        }
    }

    /** Flips one bit of the byte of {@code file} at {@code at}. */
    static void flip(Path file, long at) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer one = ByteBuffer.allocate(1);
            ch.read(one, at);
            one.put(0, (byte) (one.get(0) ^ 0x40)).rewind();
            ch.write(one, at);
        }
    }

    static Duration ms(long v) {
        return Duration.ofMillis(v);
    }
}
