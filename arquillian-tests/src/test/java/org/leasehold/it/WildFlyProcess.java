package org.leasehold.it;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Pattern;

import org.wildfly.core.launcher.StandaloneCommandBuilder;

/**
 * Starts WildFly for a test: the unpacked distribution on a server base directory of its own (configuration,
 * deployments, transaction log), with the command line that WildFly's own launcher library builds, bound to 127.0.0.1
 * on free ports.
 */
final class WildFlyProcess {
    private static final Pattern READY = Pattern.compile("WFLYSRV0025: .* started in ([0-9]+)ms");
    private static final Pattern FAILED = Pattern.compile("WFLYSRV0026: .* started \\(with errors\\)");

    private WildFlyProcess() {
    }

    /** Starts WildFly on {@code baseDir} with {@code jvm} options and waits until it has booted with its deployments. */
    static ServerProcess start(Path home, Path baseDir, Path log, List<String> jvm, Duration timeout)
            throws IOException, InterruptedException {
        int http = ServerProcess.freePort();
        int https = ServerProcess.freePort();
        int management = ServerProcess.freePort();
        StandaloneCommandBuilder command = StandaloneCommandBuilder.of(home)
                .setJavaHome(System.getProperty("java.home"))
                .setBaseDirectory(baseDir)
                .setServerConfiguration("standalone.xml")
                .addJavaOptions(jvm)
                .addJavaOptions("-Djboss.bind.address=127.0.0.1", "-Djboss.bind.address.management=127.0.0.1",
                        "-Djboss.http.port=" + http, "-Djboss.https.port=" + https,
                        "-Djboss.management.http.port=" + management);
        return ServerProcess.start("WildFly", new ProcessBuilder(command.build()).directory(baseDir.toFile()), log, http,
                READY, FAILED, timeout);
    }
}
