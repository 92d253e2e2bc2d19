package org.leasehold.campaign;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * One process of the campaign: its standard output lines collected, its standard error appended to a log file, its
 * standard input kept open (every child stops by itself when it closes, so a controller that dies takes its children
 * with it). Signals go through {@code kill(1)} since Java has no SIGSTOP.
 */
final class ChildProcess {
    final String name;
    final Process process;
    private final PrintStream stdin;
    private final List<String> lines = new ArrayList<>();
    private volatile long readyAt;

    private ChildProcess(String name, Process process) {
        this.name = name;
        this.process = process;
        this.stdin = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread reader = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String l;
                while ((l = r.readLine()) != null) {
                    if ((l.startsWith("READY") || l.startsWith("LEASEHOLD-2000 ready")) && readyAt == 0) {
                        readyAt = System.nanoTime();
                    }
                    synchronized (lines) {
                        if (lines.size() < 1000) {
                            lines.add(l);
                        }
                        lines.notifyAll();
                    }
                }
            } catch (IOException e) {
                // The child died; what it printed so far stays.
            }
            synchronized (lines) {
                lines.notifyAll();
            }
        }, "campaign-stdout-" + name);
        reader.setDaemon(true);
        reader.start();
    }

    /** Starts {@code java <jvmArgs> -cp <test class path> <mainClass> <args>}. */
    static ChildProcess start(String name, Path stderr, String mainClass, List<String> args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx128m");
        cmd.add("-Xss512k");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:CICompilerCount=1");
        cmd.add("-Djava.io.tmpdir=" + System.getProperty("java.io.tmpdir"));
        String logging = System.getProperty("java.util.logging.config.file");
        if (logging != null) {
            cmd.add("-Djava.util.logging.config.file=" + logging);
        }
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(mainClass);
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.appendTo(stderr.toFile()));
        return new ChildProcess(name, pb.start());
    }

    /** The first line matching {@code p} within {@code millis} (or null: timed out, or the child ended). */
    String await(Predicate<String> p, long millis) throws InterruptedException {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        synchronized (lines) {
            while (true) {
                for (String l : lines) {
                    if (p.test(l)) {
                        return l;
                    }
                }
                long left = TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime());
                if (left <= 0 || !process.isAlive()) {
                    return null;
                }
                lines.wait(Math.min(left, 200));
            }
        }
    }

    /**
     * True once it said it was ready ({@code READY}, or the lease server's ready line) at least {@code millis} ago: a
     * process that has been at work for a while.
     */
    boolean workingFor(long millis) {
        long r = readyAt;
        return r != 0 && System.nanoTime() - r >= TimeUnit.MILLISECONDS.toNanos(millis) && process.isAlive();
    }

    void tell(String line) {
        stdin.println(line);
    }

    boolean alive() {
        return process.isAlive();
    }

    long pid() {
        return process.pid();
    }

    /** kill -9, and waits until it is gone. */
    void kill() throws InterruptedException {
        process.toHandle().destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGTERM (the lease server shuts down gracefully), then kill -9 if it is still there after 15 s. */
    void terminate() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(15, TimeUnit.SECONDS)) {
            kill();
        }
    }

    /** Sends {@code signal} (STOP, CONT) with kill(1); false if that failed (the process is gone). */
    boolean signal(String signal) throws InterruptedException {
        if (!process.isAlive()) {
            return false;
        }
        try {
            Process k = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).redirectErrorStream(true)
                    .start();
            k.getInputStream().readAllBytes();
            return k.waitFor(10, TimeUnit.SECONDS) && k.exitValue() == 0;
        } catch (IOException e) {
            return false;
        }
    }

    /** Resumes it (if stopped), closes its standard input and kills it: nothing of it is left running. */
    void stop() throws InterruptedException {
        signal("CONT");
        stdin.close();
        if (!process.waitFor(2, TimeUnit.SECONDS)) {
            kill();
        }
    }
}
