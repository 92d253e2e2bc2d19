package org.leasehold.it;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One server process started by a test (not by Arquillian, which always boots a fresh server): bound to 127.0.0.1 on
 * free ports, its output in a log file, stopped (or killed) by the test, and by a shutdown hook if the test JVM ends
 * first. {@link MicroProcess} starts Payara Micro, {@link WildFlyProcess} WildFly.
 */
class ServerProcess implements AutoCloseable {
    private final String server;
    private final Process process;
    private final Path log;
    private final int port;
    private final Thread hook;
    private final long readyMillis;
    private final long wallMillis;

    private ServerProcess(String server, Process process, Path log, int port, Thread hook, long readyMillis,
            long wallMillis) {
        this.server = server;
        this.process = process;
        this.log = log;
        this.port = port;
        this.hook = hook;
        this.readyMillis = readyMillis;
        this.wallMillis = wallMillis;
    }

    /**
     * Starts {@code command} (its output to {@code log}) and waits until the log matches {@code ready}, whose first
     * group is the server's own boot time in milliseconds; a match of {@code failed} ends the wait with an error.
     */
    static ServerProcess start(String server, ProcessBuilder command, Path log, int port, Pattern ready,
            Pattern failed, Duration timeout) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = command.redirectErrorStream(true).redirectOutput(log.toFile()).start();
        Thread hook = new Thread(() -> stop(p), "stop-server-" + p.pid());
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            long readyIn = awaitReady(server, p, log, ready, failed, timeout);
            return new ServerProcess(server, p, log, port, hook, readyIn, (System.nanoTime() - t0) / 1_000_000);
        } catch (IOException | InterruptedException | RuntimeException e) {
            stop(p);
            Runtime.getRuntime().removeShutdownHook(hook);
            throw e;
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static long awaitReady(String server, Process p, Path log, Pattern ready, Pattern failed, Duration timeout)
            throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            String out = Files.readString(log, StandardCharsets.UTF_8);
            if (failed != null && failed.matcher(out).find()) {
                throw new IllegalStateException(server + " started with errors; see " + log);
            }
            Matcher m = ready.matcher(out);
            if (m.find()) {
                return Long.parseLong(m.group(1).replace(",", ""));
            }
            if (!p.isAlive()) {
                throw new IllegalStateException(server + " exited with " + p.exitValue() + " before it was ready; see "
                        + log);
            }
            Thread.sleep(250);
        }
        throw new IllegalStateException(server + " was not ready within " + timeout.toSeconds() + " s; see " + log);
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

    /** The HTTP port. */
    int port() {
        return port;
    }

    Path log() {
        return log;
    }

    /** The server's own boot time figure. */
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
            throw new IllegalStateException(server + " (pid " + process.pid() + ") did not end within "
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
