package org.leasehold.samples.ledger.runner;

import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One Payara Micro process for the sample: 127.0.0.1 only, clustering off, its domain, temporary files and the bag
 * store under the run directory, the Leasehold adapter deployed first (post-boot commands) with a connection pool
 * that sets only the bag store root (embedded defaults for everything else), then the ledger. Stopped on close.
 * {@link Options} adds JVM options, libraries for the server's class path and post-boot commands (the benchmark's
 * pools).
 */
final class PayaraMicro implements AutoCloseable {

    /** JVM options for a short run: quick start-up, small footprint. */
    static final List<String> STARTUP_JVM_OPTIONS = List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData");

    /**
     * What a run adds to the server.
     *
     * @param jvmOptions       options of the server's JVM (heap, GC, JIT)
     * @param libs             jars for the server's class path ({@code --addLibs}), such as a JDBC driver
     * @param postBootCommands asadmin commands run after the adapter's, before the ledger is deployed
     */
    record Options(List<String> jvmOptions, List<Path> libs, List<String> postBootCommands) {
        Options {
            jvmOptions = List.copyOf(jvmOptions);
            libs = List.copyOf(libs);
            postBootCommands = List.copyOf(postBootCommands);
        }

        /** The sample's: start-up JVM options, nothing added. */
        static Options defaults() {
            return new Options(STARTUP_JVM_OPTIONS, List.of(), List.of());
        }
    }

    private final Process process;
    private final int port;
    private final Path log;

    private PayaraMicro(Process process, int port, Path log) {
        this.process = process;
        this.port = port;
        this.log = log;
    }

    static PayaraMicro start(Path sampleDir, Path run, int port, Duration timeout, PrintStream out)
            throws IOException, InterruptedException {
        return start(sampleDir, run, port, timeout, Options.defaults(), out);
    }

    /** The bag store root of a run (the connection pools' {@code BagStoreRoot}). */
    static Path bagStore(Path run) {
        return run.resolve("bag-store").toAbsolutePath();
    }

    static PayaraMicro start(Path sampleDir, Path run, int port, Duration timeout, Options options, PrintStream out)
            throws IOException, InterruptedException {
        Path store = Files.createDirectories(bagStore(run));
        Path tmp = Files.createDirectories(run.resolve("tmp"));
        // A restart in the same run (same bag store) gets its own server directory and log.
        String suffix = "";
        for (int i = 2; Files.exists(run.resolve("payara-root" + suffix)); i++) {
            suffix = "-" + i;
        }
        Path root = run.resolve("payara-root" + suffix);
        Path preboot = run.resolve("preboot" + suffix + ".asadmin");
        Path postboot = run.resolve("postboot" + suffix + ".asadmin");
        Files.writeString(preboot, String.join("\n",
                "set configs.config.server-config.hazelcast-config-specific-configuration.enabled=false",
                "set configs.config.server-config.network-config.network-listeners.network-listener.http-listener"
                        + ".address=127.0.0.1", ""));
        List<String> commands = new ArrayList<>(List.of(
                "deploy --name leasehold " + sampleDir.resolve("leasehold.rar").toAbsolutePath(),
                "create-connector-connection-pool --raname leasehold --connectiondefinition "
                        + "org.leasehold.connector.LeaseConnectionFactory --transactionsupport XATransaction "
                        + "--property BagStoreRoot=" + escape(store.toString()) + " LedgerPool",
                "create-connector-resource --poolname LedgerPool leasehold/Ledger"));
        commands.addAll(options.postBootCommands());
        commands.add("");
        Files.writeString(postboot, String.join("\n", commands));
        Path log = run.resolve("payara" + suffix + ".log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(options.jvmOptions());
        cmd.addAll(List.of("-Djava.io.tmpdir=" + tmp.toAbsolutePath(), "-jar",
                sampleDir.resolve("payara-micro.jar").toString(), "--nocluster", "--port", String.valueOf(port),
                "--rootdir", root.toAbsolutePath().toString(), "--prebootcommandfile", preboot.toString(),
                "--postbootcommandfile", postboot.toString()));
        for (Path lib : options.libs()) {
            cmd.addAll(List.of("--addLibs", lib.toAbsolutePath().toString()));
        }
        cmd.addAll(List.of("--deploy", sampleDir.resolve("ledger.war").toAbsolutePath().toString()));
        out.printf("Starting Payara Micro on 127.0.0.1:%d (log: %s)...%n", port, log);
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile())
                .redirectInput(ProcessBuilder.Redirect.PIPE).start();
        PayaraMicro micro = new PayaraMicro(p, port, log);
        Runtime.getRuntime().addShutdownHook(new Thread(micro::stop, "stop-payara-micro"));
        try {
            micro.awaitReady(timeout);
        } catch (IOException | RuntimeException | InterruptedException e) {
            micro.close();
            throw e;
        }
        out.printf("Payara Micro ready with the adapter and the ledger in %.1f s%n", (System.nanoTime() - t0) / 1e9);
        return micro;
    }

    /** asadmin property values escape the separator ':' and '='. */
    static String escape(String v) {
        return v.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=");
    }

    /** The server's process id (to attach a profiler, say). */
    long pid() {
        return process.pid();
    }

    URI baseUri() {
        return URI.create("http://127.0.0.1:" + port);
    }

    private void awaitReady(Duration timeout) throws IOException, InterruptedException {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
        long end = System.nanoTime() + timeout.toNanos();
        URI probe = URI.create(baseUri() + "/ledger/api/ledger/stats");
        while (System.nanoTime() < end) {
            if (!process.isAlive()) {
                throw new IOException("Payara Micro exited with " + process.exitValue() + " while starting; the end of "
                        + "its log:\n" + tail());
            }
            try {
                HttpResponse<Void> r = http.send(HttpRequest.newBuilder(probe).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.discarding());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // Not listening yet.
            }
            Thread.sleep(500);
        }
        throw new IOException("Payara Micro was not ready after " + timeout + "; the end of its log:\n" + tail());
    }

    private String tail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    private void stop() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        stop();
    }
}
