package org.leasehold.it;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/** Starts Payara Micro for a test: {@code java -jar payara-micro.jar} with the given options, on a free port. */
final class MicroProcess {
    private static final Pattern READY = Pattern.compile("Payara Micro .* ready in ([0-9,]+) \\(ms\\)");

    private MicroProcess() {
    }

    /**
     * Starts Payara Micro in {@code workDir} with {@code jvm} options and Micro {@code options}, and waits until it
     * reports ready.
     */
    static ServerProcess start(Path microJar, Path workDir, Path log, List<String> jvm, List<String> options,
            Duration timeout) throws IOException, InterruptedException {
        int port = ServerProcess.freePort();
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvm);
        cmd.add("-jar");
        cmd.add(microJar.toString());
        cmd.addAll(options);
        cmd.addAll(List.of("--port", Integer.toString(port)));
        return ServerProcess.start("Payara Micro", new ProcessBuilder(cmd).directory(workDir.toFile()), log, port, READY,
                null, timeout);
    }
}
