package org.leasehold.server;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.leasehold.engine.EngineConfig;
import org.leasehold.config.Check;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;

/**
 * {@code java -jar leasehold-server.jar [options]}: starts the lease server and runs until SIGTERM/SIGINT (graceful
 * shutdown), or until standard input closes with {@code --exit-when-stdin-closes}. Every option can also come from
 * the environment ({@code LEASEHOLD_<OPTION>}, e.g. {@code LEASEHOLD_MAX_LEASE=5s}) or from a properties file given
 * with {@code --config} (keys are option names without dashes, e.g. {@code max-lease=5s}); the command line wins over
 * the environment, which wins over the file.
 */
@Command(name = "leasehold-server", mixinStandardHelpOptions = true, version = "Leasehold lease server 0.1.0",
        sortOptions = false, usageHelpWidth = 110,
        description = {"Runs one Leasehold lease server: in-memory, strict, short leases over gRPC (Leasehold protocol "
                + "v1). Leases are not persisted: after a start it grants nothing for its quiet period (max lease + grace "
                + "by default), so that every lease an earlier incarnation granted is over. Only a time mark is kept "
                + "(--state-dir), so that generations and floors never go back, even if the clock steps back.",
            "", "Every option may also be set as environment variable LEASEHOLD_<OPTION> (dashes as underscores, e.g. "
                + "LEASEHOLD_MAX_LEASE=5s) or in the --config properties file (e.g. max-lease=5s). Durations: 500ms, 5s, "
                + "2m, 1h or ISO-8601 (PT5S).", ""},
        footer = {"", "Token file: one '<principal> <token>' per line. ACL file: one '<principal|*> <name|prefix*|*> "
                + "<lease,check,inspect,admin|all>' per line. See docs/SERVER.md."})
public final class LeaseServerMain implements Callable<Integer> {
    /** The state directory when neither {@code --state-dir} nor {@code --no-state-dir} is given. */
    static final String DEFAULT_STATE_DIR = "leasehold-state";

    @Option(names = "--config", paramLabel = "FILE", description = "Properties file with option defaults.")
    Path configFile;

    @Option(names = "--listen", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:7420",
            description = "gRPC listen address (port 0: any free port). Default: ${DEFAULT-VALUE}.")
    String listen;

    @Option(names = "--http-listen", paramLabel = "HOST:PORT|none", defaultValue = "127.0.0.1:7421",
            description = "Metrics (/metrics) and health (/health, /ready) address, or 'none'. Default: ${DEFAULT-VALUE}.")
    String httpListen;

    @Option(names = "--socket-listen", paramLabel = "HOST:PORT|auto|none", defaultValue = "auto",
            description = "Also serve the session calls (acquire, release, renew, upgrade) over the socket transport on "
                    + "this address: length-prefixed protobuf frames on plain TCP (or TLS), where each client thread does "
                    + "its own socket I/O (lower latency than gRPC). Clients take it by default (transport=socket) and "
                    + "learn its port from the server. 'auto': the host of --listen, any free port; 'none': gRPC only. "
                    + "Same authentication, ACLs and limits. Default: ${DEFAULT-VALUE}.")
    String socketListen;

    @Option(names = "--socket-max-connections", paramLabel = "N", defaultValue = "1024",
            description = "Socket transport connections allowed at once (each has a thread on the server). "
                    + "Default: ${DEFAULT-VALUE}.")
    int socketMaxConnections;

    @Option(names = "--socket-write-timeout", paramLabel = "DURATION", defaultValue = "10s",
            description = "A socket connection whose answers wait this long for the client to read them is closed "
                    + "(its waiting requests are withdrawn). Default: ${DEFAULT-VALUE}.")
    String socketWriteTimeout;

    @Option(names = "--socket-spin-wait", paramLabel = "DURATION", defaultValue = "50us",
            description = "After answering, a socket connection's thread waits actively this long for the next request "
                    + "(yielding its core to any other thread at every turn) before it blocks in a read: on an otherwise "
                    + "idle machine a blocked thread's core sleeps, and waking it can cost more than the call itself. "
                    + "At most half the server's cores wait so at once; a connection whose requests keep coming later "
                    + "than this stops waiting actively. 0 turns it off. Default: ${DEFAULT-VALUE}.")
    String socketSpinWait;

    @Option(names = "--port-file", paramLabel = "FILE",
            description = "Write 'grpc=<port>', 'http=<port>' and 'socket=<port>' here once listening (useful with "
                    + "port 0).")
    Path portFile;

    @Option(names = "--max-lease", paramLabel = "DURATION", defaultValue = "10s",
            description = "Longest lease granted; requests are clamped. Default: ${DEFAULT-VALUE}.")
    String maxLease;

    @Option(names = "--grace", paramLabel = "DURATION", defaultValue = "2s",
            description = "After an unrelinquished expiry the next holder writes from deadline + grace. "
                    + "Default: ${DEFAULT-VALUE}.")
    String grace;

    @Option(names = "--clock-error", paramLabel = "DURATION", defaultValue = "500ms",
            description = "Bound on clock error between processes (used when a holder re-takes its own lease). "
                    + "Default: ${DEFAULT-VALUE}.")
    String clockError;

    @Option(names = "--quiet-period", paramLabel = "DURATION",
            description = "Grant nothing for this long after the start. Default: max lease + grace (the safe value; "
                    + "shorter only if no earlier incarnation can have granted anything).")
    String quietPeriod;

    @Option(names = "--state-dir", paramLabel = "DIR",
            description = "Where the server keeps its time mark: a bound, recorded every 2 s, above every generation, "
                    + "floor and deadline it granted. A start whose clock is behind the mark grants nothing until the "
                    + "clock passes it (plus the quiet period). Created if missing; local disk; one server per directory. "
                    + "Default: leasehold-state under the working directory.")
    Path stateDir;

    @Option(names = "--backend", paramLabel = "SPEC",
            description = "Serve the leases of an etcd cluster instead of the embedded engine: "
                    + "etcd://<host:port>[,<host:port>...][?user=U&password=P&tls=true&trust=F&cert=F&key=F&prefix=P]. "
                    + "Several servers with one backend serve the same names (any of them may stop); no state "
                    + "directory and no quiet period are needed. Needs the leasehold-etcd jar (in the server's jar).")
    String backend;

    @Option(names = "--no-state-dir",
            description = "Keep no time mark (a warning is logged): if the clock steps back across a restart, "
                    + "generations and floors go back with it. Only where the clock cannot step back.")
    boolean noStateDir;

    @Option(names = "--signing-key", paramLabel = "PEM",
            description = "The Ed25519 private key (PEM, PKCS#8) the server signs its witnesses and time answers with. "
                    + "Default: a key generated into the state directory at the first start and kept across restarts; "
                    + "without a state directory an ephemeral key (logged).")
    Path signingKey;

    @Option(names = "--publish-keys", paramLabel = "DIR",
            description = "A bag store root: the server publishes its public keys into DIR/.leasehold/keys/ before it "
                    + "signs, so that 'leasehold verify' on that store finds them.")
    Path publishKeys;

    @Option(names = "--signing-linger", paramLabel = "DURATION", defaultValue = "200us",
            description = "How long a signed batch waits for more witnesses after its first (0 to 1s): a longer linger "
                    + "makes fewer, bigger batches (less CPU) and delays the proofs nobody waits for yet; a client "
                    + "that waits for a proof (a commit writing under its lease) has the batch signed at once. A "
                    + "batch waits a hundred times as long as the last signature took if that is longer (at most 20ms "
                    + "or this linger). Default: ${DEFAULT-VALUE}.")
    String signingLinger;

    @Option(names = "--no-signing",
            description = "Sign nothing: grants carry no witnesses and time requests are refused (saves the signing "
                    + "thread's CPU; the bag store then cannot prove which lease a message was written under).")
    boolean noSigning;

    @Option(names = "--stripes", paramLabel = "N", defaultValue = "64",
            description = "Lock stripes of the engine (internal sharding), a power of two up to 256. "
                    + "Default: ${DEFAULT-VALUE}.")
    int stripes;

    @Option(names = "--history-per-name", paramLabel = "N", defaultValue = "16",
            description = "Metadata entries kept per name (oldest dropped). Default: ${DEFAULT-VALUE}.")
    int historyPerName;

    @Option(names = "--max-metadata-chars", paramLabel = "N", defaultValue = "4096",
            description = "Longest metadata string accepted. Default: ${DEFAULT-VALUE}.")
    int maxMetadataChars;

    @Option(names = "--max-names-per-request", paramLabel = "N", defaultValue = "1000",
            description = "Most names in one request (at most 1000). Default: ${DEFAULT-VALUE}.")
    int maxNamesPerRequest;

    @Option(names = "--idle-retention", paramLabel = "DURATION", defaultValue = "5m",
            description = "An idle name is forgotten after this (its floor and generation survive as a bound). "
                    + "Default: ${DEFAULT-VALUE}.")
    String idleRetention;

    @Option(names = "--max-waiters-per-name", paramLabel = "N", defaultValue = "10000",
            description = "Longest queue of waiting requests per name. Default: ${DEFAULT-VALUE}.")
    int maxWaitersPerName;

    @Option(names = "--max-waiters", paramLabel = "N", defaultValue = "100000",
            description = "Waiting acquisitions allowed at once on the whole server. Default: ${DEFAULT-VALUE}.")
    int maxWaiters;

    @Option(names = "--max-waiters-per-connection", paramLabel = "N", defaultValue = "10000",
            description = "Waiting acquisitions allowed at once on one client connection. Default: ${DEFAULT-VALUE}.")
    int maxWaitersPerConnection;

    @Option(names = "--max-calls-per-connection", paramLabel = "N", defaultValue = "20000",
            description = "Concurrent calls (HTTP/2 streams) per connection. Default: ${DEFAULT-VALUE}.")
    int maxCallsPerConnection;

    @Option(names = "--max-message-bytes", paramLabel = "N", defaultValue = "1048576",
            description = "Largest request message accepted; larger ones are refused (RESOURCE_EXHAUSTED). At least "
                    + "65536 (clients batch session requests up to 32 KiB a message). Default: ${DEFAULT-VALUE}.")
    int maxMessageBytes;

    @Option(names = "--tls-cert", paramLabel = "PEM", description = "Server certificate chain (PEM); turns TLS on.")
    Path tlsCert;

    @Option(names = "--tls-key", paramLabel = "PEM", description = "Private key of --tls-cert (PEM, PKCS#8).")
    Path tlsKey;

    @Option(names = "--tls-client-ca", paramLabel = "PEM",
            description = "CA(s) whose client certificates authenticate callers (mutual TLS); the principal is the "
                    + "certificate's CN. Required of every client unless --tokens is also given.")
    Path tlsClientCa;

    @Option(names = "--tokens", paramLabel = "FILE",
            description = "Bearer tokens: one '<principal> <token>' per line. Clients send 'authorization: Bearer "
                    + "<token>'.")
    Path tokens;

    @Option(names = "--acl", paramLabel = "FILE",
            description = "Access control list: one '<principal|*> <name|prefix*|*> <lease,check,inspect,admin|all>' "
                    + "per line ('all' is lease,check,inspect). Without it every authenticated caller may do everything "
                    + "but admin.")
    Path acl;

    @Option(names = "--drain-timeout", paramLabel = "DURATION", defaultValue = "5s",
            description = "On shutdown, how long calls in flight may finish. Default: ${DEFAULT-VALUE}.")
    String drainTimeout;

    @Option(names = "--exit-when-stdin-closes",
            description = "Shut down when standard input reaches its end (a supervising parent died).")
    boolean exitWhenStdinCloses;

    @Option(names = "--insecure",
            description = "Allow listening beyond loopback without TLS and authentication (trusted networks only).")
    boolean insecure;

    @Option(names = "--test-clock", paramLabel = "INSTANT", hidden = false,
            description = "TESTS ONLY: run on a manual clock starting at this ISO-8601 instant, moved by the "
                    + "AdvanceTestClock call; enables the test-only calls. Never in production.")
    String testClock;

    ServerConfig toConfig() {
        EngineConfig engine = EngineConfig.defaults()
                .withMaxLeaseDuration(Check.duration("--max-lease", maxLease))
                .withGrace(Check.duration("--grace", grace))
                .withClockErrorBound(Check.duration("--clock-error", clockError))
                .withQuietPeriod(quietPeriod == null ? null : Check.duration("--quiet-period", quietPeriod))
                .withShards(stripes).withHistoryPerName(historyPerName).withMaxMetadataChars(maxMetadataChars)
                .withMaxNamesPerRequest(maxNamesPerRequest)
                .withIdleRetention(Check.duration("--idle-retention", idleRetention))
                .withMaxWaitersPerName(maxWaitersPerName);
        InetSocketAddress http = httpListen.equalsIgnoreCase("none") ? null
                : ServerConfig.address("--http-listen", httpListen);
        Instant clock = null;
        if (testClock != null) {
            try {
                clock = Instant.parse(testClock);
            } catch (DateTimeParseException e) {
                throw new IllegalArgumentException("--test-clock '" + testClock
                        + "' is not an ISO-8601 instant such as 2026-03-01T10:00:00Z", e);
            }
        }
        Duration drain = Check.duration("--drain-timeout", drainTimeout);
        InetSocketAddress socketAddress = socketListen.equalsIgnoreCase("none") ? null
                : socketListen.equalsIgnoreCase("auto")
                        ? new InetSocketAddress(ServerConfig.address("--listen", listen).getAddress(), 0)
                        : ServerConfig.address("--socket-listen", socketListen);
        ServerConfig.SocketSettings socket = socketAddress == null ? null
                : new ServerConfig.SocketSettings(socketAddress,
                        socketMaxConnections, Check.duration("--socket-write-timeout", socketWriteTimeout),
                        Check.duration("--socket-spin-wait", socketSpinWait));
        if (noStateDir && stateDir != null) {
            throw new IllegalArgumentException("--state-dir " + stateDir + " and --no-state-dir contradict each other: "
                    + "give one of them");
        }
        if (backend != null && stateDir != null) {
            throw new IllegalArgumentException("--state-dir " + stateDir + " and --backend contradict each other: a "
                    + "server in front of a backend keeps no state of its own; drop --state-dir");
        }
        Path state = noStateDir ? null : stateDir != null ? stateDir : Path.of(DEFAULT_STATE_DIR);
        return new ServerConfig(ServerConfig.address("--listen", listen), http, portFile, engine, maxWaiters,
                maxWaitersPerConnection, maxCallsPerConnection, maxMessageBytes, tlsCert, tlsKey, tlsClientCa, tokens, acl,
                clock, exitWhenStdinCloses, drain, insecure, socket, backend == null ? state : null, backend,
                new ServerConfig.Signing(!noSigning, signingKey, publishKeys,
                        Check.duration("--signing-linger", signingLinger))).validate();
    }

    @Override
    public Integer call() throws Exception {
        ServerConfig config = toConfig();
        LeaseServer server = LeaseServer.start(config);
        // The ready line: tests and scripts read the bound ports from it.
        System.out.println("LEASEHOLD-2000 ready grpc=" + server.address() + " http=" + server.httpPort()
                + " availableFrom=" + server.availableFrom() + " socket=" + server.socketPort());
        System.out.flush();
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            server.close();
            stopped.countDown();
        }, "leasehold-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        if (config.exitWhenStdinCloses()) {
            Thread watcher = new Thread(() -> {
                try {
                    InputStream in = System.in;
                    byte[] buf = new byte[256];
                    while (in.read(buf) >= 0) {
                        // Discard: only the end of the stream matters.
                    }
                } catch (IOException e) {
                    // A broken stdin counts as closed.
                }
                System.err.println("LEASEHOLD-2005 standard input closed: shutting down");
                System.exit(0);
            }, "leasehold-stdin-watcher");
            watcher.setDaemon(true);
            watcher.start();
        }
        stopped.await();
        return 0;
    }

    /** Runs the server; exits with 2 on a usage error, 1 on a start failure. */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String... args) {
        LeaseServerMain main = new LeaseServerMain();
        CommandLine cmd = new CommandLine(main);
        Defaults defaults;
        try {
            defaults = new Defaults(configFileArgument(args));
            defaults.checkKeys(cmd.getCommandSpec());
        } catch (IllegalArgumentException e) {
            cmd.getErr().println("LEASEHOLD-2900 cannot start the lease server: " + e.getMessage());
            return 2;
        }
        cmd.setDefaultValueProvider(defaults);
        cmd.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("LEASEHOLD-2900 cannot start the lease server: " + ex.getMessage());
            return ex instanceof IllegalArgumentException ? 2 : 1;
        });
        return cmd.execute(args);
    }

    /** The value of {@code --config} (or LEASEHOLD_CONFIG) before parsing, to read defaults from it. */
    private static Path configFileArgument(String[] args) {
        for (int i = 0; i < args.length; i++) {
            if (args[i].equals("--config") && i + 1 < args.length) {
                return Path.of(args[i + 1]);
            }
            if (args[i].startsWith("--config=")) {
                return Path.of(args[i].substring("--config=".length()));
            }
        }
        String env = System.getenv("LEASEHOLD_CONFIG");
        return env == null || env.isBlank() ? null : Path.of(env);
    }

    /** Option defaults from the environment, then the config file, then the annotations. */
    static final class Defaults implements CommandLine.IDefaultValueProvider {
        private final Properties file = new Properties();
        private final Path path;

        Defaults(Path path) {
            this.path = path;
            if (path != null) {
                try (InputStream in = Files.newInputStream(path)) {
                    file.load(in);
                } catch (IOException e) {
                    throw new IllegalArgumentException("cannot read the config file " + path + ": " + e.getMessage(), e);
                }
            }
        }

        /** Refuses keys that name no option, so that a typo in the file is not silently ignored. */
        void checkKeys(CommandLine.Model.CommandSpec spec) {
            for (String key : file.stringPropertyNames()) {
                String k = key.startsWith("--") ? key : "--" + key;
                if (spec.findOption(k) == null || k.equals("--config")) {
                    throw new IllegalArgumentException("the config file " + path + " sets '" + key
                            + "', which is not an option of the lease server; see --help");
                }
            }
        }

        @Override
        public String defaultValue(ArgSpec arg) {
            if (!(arg instanceof OptionSpec o)) {
                return null;
            }
            String key = o.longestName().replaceFirst("^--", "");
            String env = System.getenv("LEASEHOLD_" + key.toUpperCase(Locale.ROOT).replace('-', '_'));
            if (env != null) {
                return env;
            }
            String v = file.getProperty(key);
            if (v == null && path != null && file.containsKey("--" + key)) {
                v = file.getProperty("--" + key);
            }
            return v;
        }
    }
}
