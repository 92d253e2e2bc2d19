package org.leasehold.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;

import org.leasehold.fs.NfsSafeFiles;

/**
 * A lease service's signing keys in its state directory, with NFS-safe operations only: {@code key.<n>.pem}, the
 * highest {@code n} the current key, each written to a prepared file (mode 0600), forced, and linked into place.
 * Rotation links the next number; the first process to link a number wins and the others read its key.
 */
public final class KeyFiles {
    private final NfsSafeFiles fs;
    private final Path dir;
    private final String writer;
    private final SecureRandom random;

    /**
     * The keys in {@code dir} (created if missing, its parent must exist), written as {@code writer}.
     *
     * @throws IOException if the directory cannot be created
     */
    public KeyFiles(NfsSafeFiles fs, Path dir, String writer, SecureRandom random) throws IOException {
        this.fs = fs;
        this.dir = dir;
        this.writer = writer;
        this.random = random;
        fs.createDirectory(dir);
    }

    public Path directory() {
        return dir;
    }

    /** The current key: the highest-numbered file's, or a new {@code key.1.pem} if there is none. */
    public SigningKey current() throws IOException, AuditFormatException {
        int n = highest();
        return n == 0 ? next() : read(dir.resolve("key." + n + ".pem"));
    }

    /** Creates and links the next key ({@code key.<n+1>.pem}); if another process linked it first, its key. */
    public SigningKey next() throws IOException, AuditFormatException {
        int n = highest() + 1;
        SigningKey key = SigningKey.generate(random);
        Path name = dir.resolve("key." + n + ".pem");
        if (!publish(fs, name, writer, key.toPem().getBytes(StandardCharsets.US_ASCII), random, true)) {
            return read(name);
        }
        return key;
    }

    /**
     * The first key: the lowest-numbered file's, or a new {@code key.1.pem} if there is none. A lease server names
     * its service after it, so that rotations keep one service.
     */
    public SigningKey first() throws IOException, AuditFormatException {
        int n = lowest();
        return n == 0 ? next() : read(dir.resolve("key." + n + ".pem"));
    }

    /** The key files, lowest-numbered first (the current key's is the last). */
    public List<Path> files() throws IOException {
        return files(fs, dir);
    }

    /**
     * The key files in {@code dir}, lowest-numbered first; none if it does not exist (nothing is created, unlike the
     * constructor: for a look at a directory that may be the wrong one).
     */
    public static List<Path> files(NfsSafeFiles fs, Path dir) throws IOException {
        List<Integer> numbers = numbers(fs, dir);
        numbers.sort(null);
        List<Path> out = new ArrayList<>(numbers.size());
        for (int n : numbers) {
            out.add(dir.resolve("key." + n + ".pem"));
        }
        return out;
    }

    /** The key {@code key.<n>.pem}, for instance a rotated-out one. */
    public SigningKey numbered(int n) throws IOException, AuditFormatException {
        return read(dir.resolve("key." + n + ".pem"));
    }

    private int highest() throws IOException {
        int best = 0;
        for (int n : numbers()) {
            best = Math.max(best, n);
        }
        return best;
    }

    /** The lowest number of a key file, or 0 if there is none. */
    private int lowest() throws IOException {
        int best = 0;
        for (int n : numbers()) {
            best = best == 0 ? n : Math.min(best, n);
        }
        return best;
    }

    private List<Integer> numbers() throws IOException {
        return numbers(fs, dir);
    }

    private static List<Integer> numbers(NfsSafeFiles fs, Path dir) throws IOException {
        List<Integer> out = new ArrayList<>();
        for (String s : listOrEmpty(fs, dir)) {
            if (s.startsWith("key.") && s.endsWith(".pem")) {
                try {
                    int n = Integer.parseInt(s.substring(4, s.length() - 4));
                    if (n > 0) {
                        out.add(n);
                    }
                } catch (NumberFormatException e) {
                    // not ours
                }
            }
        }
        return out;
    }

    /** Reads a PEM private key file (the {@code SigningKeyFile} an operator configures, or one of these). */
    public static SigningKey read(Path file) throws IOException, AuditFormatException {
        return SigningKey.fromPem(readText(new NfsSafeFiles(), file));
    }

    static String readText(NfsSafeFiles fs, Path file) throws IOException {
        try (FileChannel ch = fs.openForRead(file)) {
            long size = ch.size();
            if (size > 64 * 1024) {
                throw new IOException(file + " is " + size + " bytes; a key file is a few hundred");
            }
            ByteBuffer b = ByteBuffer.allocate((int) size);
            while (b.hasRemaining() && ch.read(b) >= 0) {
                // read all
            }
            return new String(b.array(), 0, b.position(), StandardCharsets.UTF_8);
        }
    }

    /**
     * Writes {@code bytes} to a prepared file beside {@code name}, forces it and links it as {@code name}. Returns
     * false if {@code name} existed (the prepared file stays, as the store's prepared files do).
     */
    static boolean publish(NfsSafeFiles fs, Path name, String writer, byte[] bytes, SecureRandom random,
            boolean secret) throws IOException {
        Path prepared = name.resolveSibling(name.getFileName() + "." + writer + "."
                + HexFormat.of().toHexDigits(random.nextLong()));
        try (FileChannel ch = fs.createNew(prepared)) {
            if (secret) {
                try {
                    fs.chmod(prepared, EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE));
                } catch (UnsupportedOperationException e) {
                    // not a POSIX file system: its own access rules apply
                }
            }
            ByteBuffer b = ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) {
                ch.write(b);
            }
            ch.force(true);
        }
        return fs.link(name, prepared);
    }

    /** The names in {@code dir}, or none if it does not exist. */
    static List<String> listOrEmpty(NfsSafeFiles fs, Path dir) throws IOException {
        try {
            return fs.list(dir);
        } catch (NoSuchFileException e) {
            return List.of();
        }
    }
}
