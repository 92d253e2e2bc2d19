package org.leasehold.etcd;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Real etcd members (Debian's {@code etcd-server}, {@code /usr/bin/etcd}) on 127.0.0.1, on ports chosen at run time,
 * with their data under {@code target/etcd-tests/}. Members can be killed (SIGKILL) and started again; everything is
 * stopped by {@link #close} and, should a test forget, when the JVM exits.
 */
public final class EtcdCluster implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final Path dir;
    private final int size;
    private final int[] clientPorts;
    private final int[] peerPorts;
    private final Process[] processes;
    private final String token;
    private Path serverCertificate;
    private Path serverKey;
    private int[] metricsPorts;

    private EtcdCluster(String name, int size) {
        this.size = size;
        this.dir = Path.of(System.getProperty("leasehold.etcd.dir", "target/etcd-tests")).toAbsolutePath()
                .resolve(name + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime());
        this.clientPorts = new int[size];
        this.peerPorts = new int[size];
        this.processes = new Process[size];
        this.token = dir.getFileName().toString();
        Runtime.getRuntime().addShutdownHook(new Thread(this::close));
    }

    /** Starts {@code size} members and waits until every one answers. */
    public static EtcdCluster start(String name, int size) {
        return start(new EtcdCluster(name, size));
    }

    /**
     * Starts one member that serves its clients over TLS only ({@code https://}, with {@code certificate} and its
     * PKCS#8 {@code key}, both PEM); its health is asked on a plain metrics port of its own.
     */
    public static EtcdCluster startSecured(String name, Path certificate, Path key) {
        EtcdCluster c = new EtcdCluster(name, 1);
        c.serverCertificate = certificate;
        c.serverKey = key;
        c.metricsPorts = new int[1];
        return start(c);
    }

    private static EtcdCluster start(EtcdCluster c) {
        int size = c.size;
        try {
            Files.createDirectories(c.dir);
            for (int i = 0; i < size; i++) {
                c.clientPorts[i] = freePort();
                c.peerPorts[i] = freePort();
                if (c.metricsPorts != null) {
                    c.metricsPorts[i] = freePort();
                }
            }
            for (int i = 0; i < size; i++) {
                c.startMember(i, true);
            }
            for (int i = 0; i < size; i++) {
                c.awaitHealthy(i);
            }
        } catch (IOException e) {
            c.close();
            throw new UncheckedIOException(e);
        } catch (RuntimeException e) {
            c.close();
            throw e;
        }
        return c;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private void startMember(int i, boolean fresh) throws IOException {
        StringBuilder initial = new StringBuilder();
        for (int k = 0; k < size; k++) {
            if (k > 0) {
                initial.append(',');
            }
            initial.append("m").append(k).append("=http://127.0.0.1:").append(peerPorts[k]);
        }
        List<String> cmd = new ArrayList<>(List.of(etcd(), "--name", "m" + i,
                "--data-dir", dir.resolve("m" + i).toString(),
                "--listen-client-urls", clientUrl(i),
                "--advertise-client-urls", clientUrl(i),
                "--listen-peer-urls", "http://127.0.0.1:" + peerPorts[i],
                "--initial-advertise-peer-urls", "http://127.0.0.1:" + peerPorts[i],
                "--initial-cluster", initial.toString(),
                "--initial-cluster-state", fresh ? "new" : "existing",
                "--initial-cluster-token", token,
                // One grant of 1,000 names is one transaction: 2,000 operations and more than the default 1.5 MiB.
                "--max-txn-ops", "4096", "--max-request-bytes", "16777216",
                // Fast elections on loopback, so that the fault tests see a new leader within a second.
                "--heartbeat-interval", "50", "--election-timeout", "500",
                "--log-outputs", "stderr"));
        if (serverCertificate != null) {
            cmd.addAll(List.of("--cert-file", serverCertificate.toString(), "--key-file", serverKey.toString(),
                    "--listen-metrics-urls", "http://127.0.0.1:" + metricsPorts[i]));
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("m" + i + ".log").toFile()));
        processes[i] = pb.start();
    }

    private String clientUrl(int i) {
        return (serverCertificate != null ? "https" : "http") + "://127.0.0.1:" + clientPorts[i];
    }

    private static String etcd() {
        String configured = System.getProperty("leasehold.etcd.binary");
        if (configured != null) {
            return configured;
        }
        if (Files.isExecutable(Path.of("/usr/bin/etcd"))) {
            return "/usr/bin/etcd";
        }
        throw new IllegalStateException("etcd is not installed (/usr/bin/etcd is missing): install the Debian package "
                + "etcd-server (apt-get install etcd-server), as .ci/run does, or set -Dleasehold.etcd.binary");
    }

    /** Waits until member {@code i} accepts connections and answers {@code /health} with a leader. */
    private void awaitHealthy(int i) {
        long until = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() < until) {
            if (!processes[i].isAlive()) {
                throw new IllegalStateException("etcd member m" + i + " exited with " + processes[i].exitValue()
                        + "; see " + dir.resolve("m" + i + ".log"));
            }
            if (healthy(i)) {
                return;
            }
            try {
                Thread.sleep(20); // a process starting: nothing to be woken by
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while etcd started", e);
            }
        }
        throw new IllegalStateException("etcd member m" + i + " did not become healthy within " + START_TIMEOUT
                + "; see " + dir.resolve("m" + i + ".log"));
    }

    private boolean healthy(int i) {
        try (Socket s = new Socket("127.0.0.1", metricsPorts != null ? metricsPorts[i] : clientPorts[i])) {
            s.setSoTimeout(2_000);
            s.getOutputStream().write(("GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            return answer.contains("\"health\":\"true\"");
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * A gauge or counter of member {@code i}'s Prometheus metrics ({@code /metrics}), for example
     * {@code etcd_debugging_mvcc_watcher_total}; -1 if the member does not answer or has no such metric.
     */
    public double metric(int i, String name) {
        try (Socket s = new Socket("127.0.0.1", clientPorts[i])) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            for (String line : answer.split("\n")) {
                if (line.startsWith(name + " ")) {
                    return Double.parseDouble(line.substring(name.length() + 1).trim());
                }
            }
            return -1;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Waits (at most 20 s) until member {@code i} counts {@code n} watches ({@code etcd_debugging_mvcc_watcher_total}),
     * and returns the count it last saw: one per service when none is left over from a failure.
     */
    public double awaitWatchers(int i, int n) throws InterruptedException {
        String watchers = "etcd_debugging_mvcc_watcher_total";
        long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
        double seen = metric(i, watchers);
        while (seen != n && System.nanoTime() < until) {
            Thread.sleep(100); // polling etcd's metrics: nothing to be woken by
            seen = metric(i, watchers);
        }
        return seen;
    }

    /**
     * The sum of a labelled counter of member {@code i} over the series whose labels contain {@code label}, for example
     * {@code grpc_server_handled_total} with {@code grpc_method="Txn"}; -1 if the member does not answer.
     */
    public double metric(int i, String name, String label) {
        try (Socket s = new Socket("127.0.0.1", clientPorts[i])) {
            s.setSoTimeout(5_000);
            s.getOutputStream().write(("GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").getBytes(
                    java.nio.charset.StandardCharsets.US_ASCII));
            String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
            double sum = 0;
            for (String line : answer.split("\n")) {
                int end = line.indexOf("} ");
                if (line.startsWith(name + "{") && end > 0 && line.substring(0, end).contains(label)) {
                    sum += Double.parseDouble(line.substring(end + 2).trim());
                }
            }
            return sum;
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
    }

    /** The client URLs of every member. */
    public List<URI> endpoints() {
        List<URI> out = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            out.add(URI.create(clientUrl(i)));
        }
        return out;
    }

    public int size() {
        return size;
    }

    /** The member that is leader now, by each member's own log of the last election; -1 if none is known. */
    public int leader() {
        for (int i = 0; i < size; i++) {
            if (processes[i] == null || !processes[i].isAlive()) {
                continue;
            }
            try (Socket s = new Socket("127.0.0.1", clientPorts[i])) {
                s.setSoTimeout(2_000);
                String body = "{}";
                s.getOutputStream().write(("POST /v3/maintenance/status HTTP/1.0\r\nHost: 127.0.0.1\r\n"
                        + "Content-Type: application/json\r\nContent-Length: " + body.length() + "\r\n\r\n" + body)
                        .getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                String answer = new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
                String member = field(answer, "member_id");
                String leader = field(answer, "leader");
                if (member != null && member.equals(leader)) {
                    return i;
                }
            } catch (IOException e) {
                // not answering: not the leader we can name
            }
        }
        return -1;
    }

    private static String field(String json, String name) {
        int at = json.indexOf("\"" + name + "\":\"");
        if (at < 0) {
            return null;
        }
        int start = at + name.length() + 4;
        return json.substring(start, json.indexOf('"', start));
    }

    /** Kills member {@code i} with SIGKILL and waits for it to be gone. */
    public void kill(int i) {
        Process p = processes[i];
        if (p != null && p.isAlive()) {
            p.destroyForcibly();
            try {
                p.waitFor();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Where the members keep their data and logs (for files that belong with them, such as certificates). */
    public Path dir() {
        return dir;
    }

    /** Starts a killed member again, on its data directory and ports, and waits until the cluster is healthy. */
    public void restart(int i) {
        try {
            startMember(i, false);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        awaitHealthy(i);
    }

    /** Stops every member and deletes their data (etcd preallocates 64 MB of log per member); their logs stay. */
    @Override
    public void close() {
        for (int i = 0; i < size; i++) {
            kill(i);
        }
        for (int i = 0; i < size; i++) {
            Path data = dir.resolve("m" + i);
            if (!Files.exists(data)) {
                continue;
            }
            try (java.util.stream.Stream<Path> files = Files.walk(data)) {
                for (Path p : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            } catch (IOException e) {
                // best effort: the data is under target/ and goes with it
            }
        }
    }
}
