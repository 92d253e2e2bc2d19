package org.leasehold.it;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One Payara Micro process started by a test (not by Arquillian, which always boots a fresh domain): bound to
 * 127.0.0.1 on a free port, its output in a log file, stopped (or killed) by the test, and by a shutdown hook if the
 * test JVM ends first.
 */
final class MicroProcess implements AutoCloseable {
    private static final Pattern READY = Pattern.compile("Payara Micro .* ready in ([0-9,]+) \\(ms\\)");

    private final Process process;
    private final Path log;
    private final int port;
    private final Thread hook;
    private final long readyMillis;
    private final long wallMillis;

    private MicroProcess(Process process, Path log, int port, Thread hook, long readyMillis, long wallMillis) {
        this.process = process;
        this.log = log;
        this.port = port;
        this.hook = hook;
        this.readyMillis = readyMillis;
        this.wallMillis = wallMillis;
    }

    /**
     * Starts Payara Micro in {@code workDir} with {@code jvm} options and Micro {@code options}, and waits until it
     * reports ready.
     */
    static MicroProcess start(Path microJar, Path workDir, Path log, List<String> jvm, List<String> options,
            Duration timeout) throws IOException, InterruptedException {
        int port = freePort();
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvm);
        cmd.add("-jar");
        cmd.add(microJar.toString());
        cmd.addAll(options);
        cmd.addAll(List.of("--port", Integer.toString(port)));
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).directory(workDir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        Thread hook = new Thread(() -> stop(p), "stop-payara-micro-" + p.pid());
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            long ready = awaitReady(p, log, timeout);
            return new MicroProcess(p, log, port, hook, ready, (System.nanoTime() - t0) / 1_000_000);
        } catch (IOException | InterruptedException | RuntimeException e) {
            stop(p);
            Runtime.getRuntime().removeShutdownHook(hook);
            throw e;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static long awaitReady(Process p, Path log, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.readString(log, StandardCharsets.UTF_8);
            Matcher m = READY.matcher(out);
            if (m.find()) {
                return Long.parseLong(m.group(1).replace(",", ""));
            }
            if (!p.isAlive()) {
                throw new IllegalStateException("Payara Micro exited with " + p.exitValue() + " before it was ready; "
                        + "see " + log);
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException("Payara Micro was not ready within " + timeout.toSeconds() + " s; see " + log);
    }

    private static void stop(Process p) {
        if (!p.isAlive()) {
            return;
        }
        p.destroy();
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    int port() {
        return port;
    }

    Path log() {
        return log;
    }

    /** Micro's own "ready in" figure. */
    long readyMillis() {
        return readyMillis;
    }

    /** From starting the JVM to ready, as the test saw it. */
    long wallMillis() {
        return wallMillis;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Waits for the process to end by itself (a halt); returns its exit code. */
    int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new IllegalStateException("Payara Micro (pid " + process.pid() + ") did not end within "
                    + timeout.toSeconds() + " s; see " + log);
        }
        Runtime.getRuntime().removeShutdownHook(hook);
        return process.exitValue();
    }

    /** SIGKILL, like {@code kill -9}; returns the exit code. */
    int kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(60, TimeUnit.SECONDS);
        Runtime.getRuntime().removeShutdownHook(hook);
        return process.exitValue();
    }

    /** The lines of the server log that contain {@code text}. */
    List<String> logLines(String text) throws IOException {
        return Arrays.stream(Files.readString(log, StandardCharsets.UTF_8).split("\n")).filter(l -> l.contains(text))
                .toList();
    }

    /** Stops the server (SIGTERM, then SIGKILL after a minute). */
    @Override
    public void close() {
        stop(process);
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException e) {
            // The JVM is already shutting down: the hook runs (and finds the process gone).
        }
    }
}
