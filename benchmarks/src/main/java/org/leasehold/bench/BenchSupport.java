package org.leasehold.bench;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** Argument parsing and formatting shared by the custom harnesses. */
final class BenchSupport {
    private BenchSupport() {
    }

    /** {@code --key value} pairs, with defaults. */
    static Map<String, String> args(String[] args, Map<String, String> defaults) {
        Map<String, String> m = new LinkedHashMap<>(defaults);
        if (args.length % 2 != 0) {
            throw new IllegalArgumentException("options come in pairs (--key value); '" + args[args.length - 1]
                    + "' has no value; known: " + defaults.keySet());
        }
        for (int i = 0; i + 1 < args.length; i += 2) {
            if (!args[i].startsWith("--") || !m.containsKey(args[i].substring(2))) {
                throw new IllegalArgumentException("unknown option " + args[i] + "; known: " + defaults.keySet());
            }
            m.put(args[i].substring(2), args[i + 1]);
        }
        return m;
    }

    static Path dir(String s) {
        return Paths.get(s).toAbsolutePath();
    }

    /**
     * Where the benchmarks write their files unless told otherwise: the system property {@code leasehold.bench.dir},
     * else {@code bench-data} beside the benchmarks jar (or the classes directory), that is
     * {@code benchmarks/target/bench-data}, whatever the working directory.
     */
    static String defaultDir() {
        String p = System.getProperty("leasehold.bench.dir");
        if (p != null && !p.isBlank()) {
            return p;
        }
        try {
            Path code = Paths.get(BenchSupport.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return code.toAbsolutePath().getParent().resolve("bench-data").toString();
        } catch (java.net.URISyntaxException | RuntimeException e) {
            return "target/bench-data";
        }
    }

    /** CPU time used so far by this process, all threads (user + system), in nanoseconds; -1 if unknown. */
    static long processCpuNanos() {
        java.lang.management.OperatingSystemMXBean os = java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        if (os instanceof com.sun.management.OperatingSystemMXBean sun) {
            return sun.getProcessCpuTime();
        }
        return -1;
    }

    /** The one-minute load average of the machine, for the record (other processes share the cores). */
    static String load() {
        double l = java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
        return String.format(Locale.ROOT, "load average (1 min) %.2f on %d cores", l,
                Runtime.getRuntime().availableProcessors());
    }

    static int[] ints(String csv) {
        String[] p = csv.split(",");
        int[] out = new int[p.length];
        for (int i = 0; i < p.length; i++) {
            out[i] = positive("a list", p[i]);
        }
        return out;
    }

    /** A positive whole number, or an error naming what was wrong. */
    static int positive(String what, String s) {
        try {
            int v = Integer.parseInt(s.trim());
            if (v > 0) {
                return v;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(what + " takes positive whole numbers; got '" + s + "'");
    }

    static String mb(double bytesPerSecond) {
        return String.format(Locale.ROOT, "%.1f MB/s", bytesPerSecond / 1e6);
    }

    static String ms(double micros) {
        return String.format(Locale.ROOT, "%.2f ms", micros / 1000.0);
    }

    static String pct(double ratio) {
        return String.format(Locale.ROOT, "%.0f %%", ratio * 100);
    }

    /** Deletes {@code dir} and everything under it (directories made writable first); nothing if it is absent. */
    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        Set<PosixFilePermission> rwx = PosixFilePermissions.fromString("rwx------");
        Files.walkFileTree(dir, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path d, BasicFileAttributes a) throws IOException {
                Files.setPosixFilePermissions(d, rwx);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path f, BasicFileAttributes a) throws IOException {
                Files.delete(f);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException e) throws IOException {
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
