package org.leasehold.server;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A lease server in its own JVM, started from the test class path, on 127.0.0.1 with ports chosen by the OS (read
 * back from its ready line). It exits by itself when the test JVM goes away (its standard input closes); its log
 * goes to {@code target/server-logs/}, and unless the arguments say otherwise its state directory is a fresh one under
 * {@code target/server-state/}.
 */
final class ServerProcess implements AutoCloseable {
    private static final Pattern READY = Pattern.compile("LEASEHOLD-2000 ready grpc=(\\S+) http=(-?\\d+)");
    static final Path LOGS = Path.of("target", "server-logs");
    static final Path STATE = Path.of("target", "server-state");
    /** How long a start may take: JVM start-up on a machine shared with other builds can be slow. */
    private static final int READY_SECONDS = 120;

    private final Process process;
    private final String address;
    private final int httpPort;
    private final Path log;

    private ServerProcess(Process process, String address, int httpPort, Path log) {
        this.process = process;
        this.address = address;
        this.httpPort = httpPort;
        this.log = log;
    }

    /** Starts a server with {@code args} (after the defaults: loopback, free ports, exit when stdin closes). */
    static ServerProcess start(String name, String... args) throws IOException, InterruptedException, TimeoutException {
        return start(name, List.of(), args);
    }

    static ServerProcess start(String name, List<String> jvmArgs, String... args)
            throws IOException, InterruptedException, TimeoutException {
        List<String> cmd = new ArrayList<>(javaCommand(jvmArgs));
        cmd.add(LeaseServerMain.class.getName());
        boolean listen = false;
        boolean http = false;
        boolean state = false;
        for (String a : args) {
            listen |= a.startsWith("--listen");
            http |= a.startsWith("--http-listen");
            state |= a.startsWith("--state-dir") || a.equals("--no-state-dir");
        }
        if (!state) {
            cmd.add("--state-dir=" + freshStateDir(name));
        }
        if (!listen) {
            cmd.add("--listen=127.0.0.1:0");
        }
        if (!http) {
            cmd.add("--http-listen=127.0.0.1:0");
        }
        cmd.add("--exit-when-stdin-closes");
        cmd.addAll(List.of(args));
        Files.createDirectories(LOGS);
        Path log = LOGS.resolve(name + ".log");
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        CompletableFuture<Matcher> ready = new CompletableFuture<>();
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    Matcher m = READY.matcher(line);
                    if (m.find()) {
                        ready.complete(m);
                    }
                }
            } catch (IOException e) {
                ready.completeExceptionally(e);
            }
            ready.completeExceptionally(new IOException("the server process ended before it was ready; see " + log));
        }, "server-stdout-" + name);
        reader.setDaemon(true);
        reader.start();
        try {
            Matcher m = ready.get(READY_SECONDS, TimeUnit.SECONDS);
            return new ServerProcess(p, m.group(1), Integer.parseInt(m.group(2)), log);
        } catch (java.util.concurrent.ExecutionException e) {
            p.destroyForcibly();
            throw new IOException(e.getCause().getMessage() + "\n" + tail(log), e.getCause());
        } catch (TimeoutException e) {
            p.destroyForcibly();
            throw new TimeoutException("the server did not get ready in " + READY_SECONDS + " s; see " + log + "\n" + tail(log));
        }
    }

    /** A state directory under {@code target/} that no other server has used. */
    static Path freshStateDir(String name) {
        return STATE.resolve(name + "-" + System.nanoTime());
    }

    /** {@code java} with the test class path, lean on memory, and {@code jvmArgs}. */
    static List<String> javaCommand(List<String> jvmArgs) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx256m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-Djava.io.tmpdir=" + Path.of("target").toAbsolutePath());
        String logging = System.getProperty("java.util.logging.config.file");
        if (logging != null) {
            cmd.add("-Djava.util.logging.config.file=" + logging);
        }
        cmd.addAll(jvmArgs);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        return cmd;
    }

    static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    String address() {
        return address;
    }

    int port() {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    int httpPort() {
        return httpPort;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    Process process() {
        return process;
    }

    /** SIGKILL, as a crash. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM (graceful shutdown); the exit code. */
    int terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("the server did not stop within 15 s of SIGTERM; see " + log);
        }
        return process.exitValue();
    }

    String log() {
        return tail(log);
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
