package org.leasehold.store;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/** Starts {@link StoreChild} JVMs and collects their standard output lines. */
final class Children {
    private Children() {
    }

    /** A running child JVM. */
    static final class Child implements AutoCloseable {
        final Process process;
        final List<String> lines = new ArrayList<>();
        private final Thread reader;
        private final PrintStream stdin;

        Child(Process process) {
            this.process = process;
            this.stdin = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            this.reader = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                        StandardCharsets.UTF_8))) {
                    String l;
                    while ((l = r.readLine()) != null) {
                        synchronized (lines) {
                            lines.add(l);
                            lines.notifyAll();
                        }
                    }
                } catch (IOException e) {
                    // The child died; the lines read so far stay.
                }
            }, "child-stdout");
            reader.setDaemon(true);
            reader.start();
        }

        /** Waits until a line matches (or the child ends); returns it, or null. */
        String await(Predicate<String> p, long timeoutMillis) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            synchronized (lines) {
                while (true) {
                    for (String l : lines) {
                        if (p.test(l)) {
                            return l;
                        }
                    }
                    long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                    if (left <= 0 || (!process.isAlive() && !reader.isAlive())) {
                        return null;
                    }
                    lines.wait(Math.min(left, 100));
                }
            }
        }

        /** Waits until {@code n} lines match (or the child ends); true if they did. */
        boolean awaitCount(Predicate<String> p, int n, long timeoutMillis) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
            synchronized (lines) {
                while (true) {
                    int count = 0;
                    for (String l : lines) {
                        if (p.test(l)) {
                            count++;
                        }
                    }
                    if (count >= n) {
                        return true;
                    }
                    long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                    if (left <= 0 || (!process.isAlive() && !reader.isAlive())) {
                        return false;
                    }
                    lines.wait(Math.min(left, 100));
                }
            }
        }

        /** The lines so far (after the child ended: all of them). */
        List<String> lines() throws InterruptedException {
            if (!process.isAlive()) {
                reader.join(10_000);
            }
            synchronized (lines) {
                return new ArrayList<>(lines);
            }
        }

        void tell(String line) {
            stdin.println(line);
        }

        /**
         * kill -9, then every line the child wrote before it died. Through the process handle: {@link
         * Process#destroyForcibly()} also closes our end of its standard output, and the lines still in the pipe (a
         * loaded machine reads them late) would be lost.
         */
        void kill() throws InterruptedException {
            process.toHandle().destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
            reader.join(10_000);
        }

        int waitFor(long timeoutMillis) throws InterruptedException {
            if (!process.waitFor(timeoutMillis, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("child did not finish within " + timeoutMillis + " ms");
            }
            reader.join(10_000);
            return process.exitValue();
        }

        @Override
        public void close() {
            if (process.isAlive()) {
                process.destroyForcibly();
                try {
                    process.waitFor(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** Starts {@code StoreChild args...}; its standard error goes to {@code stderr}. */
    static Child start(Path stderr, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
        String logging = System.getProperty("java.util.logging.config.file");
        if (logging != null) {
            cmd.add("-Djava.util.logging.config.file=" + logging);
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(StoreChild.class.getName());
        for (String a : args) {
            cmd.add(a);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()));
        return new Child(pb.start());
    }
}
