package org.leasehold.peers;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import org.leasehold.remote.RemoteClientConfig.Transport;
import org.leasehold.config.Check;

/**
 * The peer benchmark: the same lock workloads through one {@link LockClient} interface against Leasehold's lease
 * server and the lock services users would pick instead, in one run. Started by {@code peer-benchmarks/run.sh}, which
 * starts the servers; a system without an address is skipped.
 */
@Command(name = "peer-benchmark", mixinStandardHelpOptions = true, sortOptions = false,
        description = "Cycles/s and acquire latency of Leasehold's lease server against etcd, Redis, ZooKeeper and "
                + "PostgreSQL, and of Leasehold's etcd backend against etcd's own lock, every system under each "
                + "workload in turn, run after run.")
public final class PeerBenchmark implements Callable<Integer> {
    static final List<String> ALL_SYSTEMS = List.of("leasehold", "leasehold-nosign", "leasehold-socket",
            "leasehold-socket-nosign", "leasehold-conns",
            "leasehold-socket-conns", "leasehold-echo", "leasehold-socket-echo", "redis-jedis",
            "redis-lettuce", "redis-jedis-ping", "redis-lettuce-ping", "etcd", "leasehold-etcd", "etcd-txn", "etcd-lease-lock",
            "zookeeper",
            "postgresql", "java-socket-echo", "local-handoff");

    /** The systems that keep their locks in the etcd of {@code --etcd}; their cost to etcd is read from its counters. */
    static final List<String> ETCD_SYSTEMS = List.of("etcd", "leasehold-etcd", "etcd-txn", "etcd-lease-lock");

    /**
     * Systems run only when named in {@code --systems}: the client variants with several connections, and the etcd
     * backend with its plain-transaction floor (measured on their own, see docs/BENCHMARKS.md "etcd backend").
     */
    static final List<String> NAMED_ONLY = List.of("leasehold-conns", "leasehold-socket-conns", "leasehold-etcd",
            "etcd-txn", "etcd-lease-lock");

    @Option(names = "--leasehold", paramLabel = "HOST:PORT", description = "Leasehold lease server (gRPC); the "
            + "leasehold-socket systems use its socket transport, which it must serve (--socket-listen)")
    String leasehold;
    @Option(names = "--leasehold-nosign", paramLabel = "HOST:PORT", description = "A second Leasehold lease server, "
            + "started with --no-signing: the leasehold-nosign and leasehold-socket-nosign systems use it (the socket "
            + "transport too), so that what signing costs is measured in the same run as the signing server of --leasehold")
    String leaseholdNoSign;
    @Option(names = "--leasehold-connections", paramLabel = "N", defaultValue = "4",
            description = "Connections of the leasehold-conns system's client (its connections option); leasehold uses one "
                    + "(default: ${DEFAULT-VALUE})")
    int leaseholdConnections;
    @Option(names = "--leasehold-spin-wait", paramLabel = "DURATION", defaultValue = "50us",
            description = "The spinWait of the Leasehold clients on the socket transport (0 turns the client's active wait "
                    + "off; the server's is its --socket-spin-wait) (default: ${DEFAULT-VALUE}, the client's default)")
    String leaseholdSpinWait;
    @Option(names = "--redis", paramLabel = "HOST:PORT", description = "Redis server")
    String redis;
    @Option(names = "--etcd", paramLabel = "URL", description = "etcd client URL, e.g. http://127.0.0.1:2379; etcd (jetcd's "
            + "Lock), leasehold-etcd (Leasehold's etcd backend in this process), etcd-txn (a plain etcd transaction) and "
            + "etcd-lease-lock (jetcd's Lock with a lease per lock) use it")
    String etcd;
    @Option(names = "--zookeeper", paramLabel = "HOST:PORT", description = "ZooKeeper server")
    String zookeeper;
    @Option(names = "--postgres", paramLabel = "JDBC-URL",
            description = "PostgreSQL, e.g. jdbc:postgresql://127.0.0.1:5432/postgres")
    String postgres;
    @Option(names = "--postgres-user", paramLabel = "USER", defaultValue = "postgres",
            description = "PostgreSQL user (default: ${DEFAULT-VALUE})")
    String postgresUser;
    @Option(names = "--postgres-pool", paramLabel = "N", defaultValue = "16",
            description = "HikariCP pool size (default: ${DEFAULT-VALUE})")
    int postgresPool;

    @Option(names = "--systems", split = ",", paramLabel = "SYSTEM",
            description = "Systems to run, of ${COMPLETION-CANDIDATES}; default: every one given an address (java-socket-echo "
                    + "and local-handoff need none) but the -conns variants, leasehold-etcd, etcd-txn and "
                    + "etcd-lease-lock",
            completionCandidates = SystemNames.class)
    List<String> systems;
    @Option(names = "--workloads", split = ",", paramLabel = "WORKLOAD", defaultValue = "uncontended,contended,single",
            description = "Of uncontended, contended, single (default: ${DEFAULT-VALUE})")
    List<String> workloads;
    @Option(names = "--threads", defaultValue = "64", description = "Threads of the multi-threaded workloads (default: ${DEFAULT-VALUE})")
    int threads;
    @Option(names = "--names", defaultValue = "100000",
            description = "Names of the uncontended and single workloads (default: ${DEFAULT-VALUE})")
    int names;
    @Option(names = "--contended-names", defaultValue = "16", description = "Names of the contended workload (default: ${DEFAULT-VALUE})")
    int contendedNames;
    @Option(names = "--duration", defaultValue = "20s", description = "Measured time of each run (default: ${DEFAULT-VALUE})")
    String duration;
    @Option(names = "--warmup", defaultValue = "5s", description = "Warm-up before each measured run (default: ${DEFAULT-VALUE})")
    String warmup;
    @Option(names = "--first-warmup", defaultValue = "20s",
            description = "Before the first run, each system runs the first workload this long, unmeasured, so that "
                    + "servers on the JVM (Leasehold, ZooKeeper) are compiled before anything counts; 0s to skip "
                    + "(default: ${DEFAULT-VALUE}; --quick skips it)")
    String firstWarmup;
    @Option(names = "--runs", defaultValue = "3", description = "Runs of every system and workload (default: ${DEFAULT-VALUE})")
    int runs;
    @Option(names = "--quick",
            description = "Smoke run: 1 run, 1 s warm-up, 3 s measured (overrides --runs, --warmup, --duration)")
    boolean quick;
    @Option(names = "--out", required = true, paramLabel = "DIR",
            description = "Where results.md, results.csv, runs.csv and results.png go")
    Path out;
    @Option(names = "--note", paramLabel = "TEXT", description = "A line about the machine, written into results.md")
    List<String> notes = new ArrayList<>();

    /** The key prefix of leasehold-etcd in this invocation: its records carry the history of its earlier runs. */
    private final String etcdPrefix = "peer-benchmark-"
            + Long.toHexString(java.util.concurrent.ThreadLocalRandom.current().nextLong() >>> 16) + "/";

    /** The system names, for picocli's help. */
    static final class SystemNames extends ArrayList<String> {
        SystemNames() {
            super(ALL_SYSTEMS);
        }
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new PeerBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Duration warm = quick ? Duration.ofSeconds(1) : Check.duration("--warmup", warmup);
        Duration measured = quick ? Duration.ofSeconds(3) : Check.duration("--duration", duration);
        int runCount = quick ? 1 : runs;
        if (runCount < 1 || measured.isZero() || measured.isNegative()) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--runs must be at least 1 and --duration positive");
        }
        List<Workload> plan = new ArrayList<>();
        for (String w : workloads) {
            plan.add(Workload.named(w, threads, names, contendedNames));
        }
        List<String> chosen = systems != null ? systems
                : ALL_SYSTEMS.stream().filter(s -> address(s) != null && !NAMED_ONLY.contains(s)).toList();
        for (String s : chosen) {
            if (!ALL_SYSTEMS.contains(s)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown system '" + s + "'; use " + ALL_SYSTEMS);
            }
            if (address(s) == null) {
                throw new CommandLine.ParameterException(new CommandLine(this), "system '" + s + "' has no address: give "
                        + option(s));
            }
        }
        // By default the in-process baselines run beside servers, never alone.
        if (systems == null && chosen.stream().allMatch(s -> address(s).equals("in-process"))) {
            throw new CommandLine.ParameterException(new CommandLine(this), "no system to measure: give at least one of "
                    + "--leasehold, --redis, --etcd, --zookeeper, --postgres");
        }
        Files.createDirectories(out);
        Duration prewarm = quick ? Duration.ZERO : Check.duration("--first-warmup", firstWarmup);
        if (!prewarm.isZero() && !prewarm.isNegative()) {
            for (String s : chosen) {
                try (LockClient<?> client = open(s, plan.get(0).threads())) {
                    System.out.printf(Locale.ROOT, "warming %s up: %s %d s, not counted%n", s, plan.get(0).label(),
                            prewarm.toSeconds());
                    TrialRunner.run(client, plan.get(0), 0, prewarm, Duration.ofSeconds(1));
                }
            }
        }
        ResultTable table = new ResultTable();
        EtcdMetrics etcdMetrics = etcd == null ? null : new EtcdMetrics(etcd);
        Map<String, EtcdMetrics.Cost> costs = new LinkedHashMap<>();
        for (int run = 1; run <= runCount; run++) {
            for (Workload w : plan) {
                for (String s : chosen) {
                    try (LockClient<?> client = open(s, w.threads())) {
                        List<Map<String, Double>> window = new ArrayList<>();
                        boolean counted = etcdMetrics != null && ETCD_SYSTEMS.contains(s);
                        Runnable read = counted ? () -> window.add(etcdMetrics.read()) : () -> { };
                        TrialResult r = TrialRunner.run(client, w, run, warm, measured, read, read);
                        table.add(r);
                        if (counted) {
                            costs.computeIfAbsent(w.label() + "/" + s, k -> new EtcdMetrics.Cost(w.label(), s))
                                    .add(window.get(0), window.get(1), r.cycles());
                        }
                        System.out.printf(Locale.ROOT, "run %d %-12s %-15s %10.0f cycles/s  p50 %9.1f µs  p99 %9.1f µs  "
                                        + "p99.9 %9.1f µs  errors %d%s%n", run, w.label(), s, r.cyclesPerSecond(),
                                r.acquireMicros(50), r.acquireMicros(99), r.acquireMicros(99.9), r.errors(),
                                r.firstError() == null ? "" : "  (first: " + r.firstError() + ")");
                    }
                    Files.writeString(out.resolve("runs.csv"), table.runsCsv());
                }
            }
        }
        String subtitle = runCount + (runCount == 1 ? " run" : " runs") + " × " + measured.toSeconds() + " s";
        Files.writeString(out.resolve("results.csv"), table.summaryCsv());
        if (!costs.isEmpty()) {
            Files.writeString(out.resolve("etcd-costs.csv"), EtcdMetrics.csv(List.copyOf(costs.values())));
        }
        StringBuilder md = new StringBuilder("# Lease server against peers\n\n");
        md.append(String.format(Locale.ROOT, "%d run(s) of every system and workload, %d ms warm-up and %d ms measured each"
                + " (before the first, %d ms of the first workload per system, not counted).%n%n", runCount, warm.toMillis(),
                measured.toMillis(), prewarm.toMillis()));
        for (Workload w : plan) {
            md.append("- ").append(w.label()).append(": ").append(w.describe()).append('\n');
        }
        for (String n : notes) {
            md.append("- ").append(n).append('\n');
        }
        md.append('\n').append(table.markdownTable()).append('\n').append(table.markdownGoals());
        String signing = table.markdownSigning();
        if (!signing.isEmpty()) {
            md.append('\n').append(signing);
        }
        String etcdBackend = table.markdownEtcdBackend();
        if (!etcdBackend.isEmpty()) {
            md.append('\n').append(etcdBackend);
        }
        String ceilings = table.markdownCeilings();
        if (!ceilings.isEmpty()) {
            md.append('\n').append(ceilings);
        }
        String etcdCosts = EtcdMetrics.markdown(List.copyOf(costs.values()));
        if (!etcdCosts.isEmpty()) {
            md.append('\n').append(etcdCosts);
        }
        Files.writeString(out.resolve("results.md"), md.toString());
        Charts.write(table, subtitle, out.resolve("results.png"));
        System.out.println();
        System.out.print(md);
        return 0;
    }

    private String address(String system) {
        return switch (system) {
            case "leasehold", "leasehold-socket", "leasehold-conns", "leasehold-socket-conns", "leasehold-echo",
                 "leasehold-socket-echo" -> leasehold;
            case "leasehold-nosign", "leasehold-socket-nosign" -> leaseholdNoSign;
            case "redis-jedis", "redis-lettuce", "redis-jedis-ping", "redis-lettuce-ping" -> redis;
            case "java-socket-echo", "local-handoff" -> "in-process";
            case "etcd", "leasehold-etcd", "etcd-txn", "etcd-lease-lock" -> etcd;
            case "zookeeper" -> zookeeper;
            case "postgresql" -> postgres;
            default -> null;
        };
    }

    private static String option(String system) {
        return switch (system) {
            case "leasehold", "leasehold-socket", "leasehold-conns", "leasehold-socket-conns", "leasehold-echo",
                 "leasehold-socket-echo" -> "--leasehold";
            case "leasehold-nosign", "leasehold-socket-nosign" -> "--leasehold-nosign";
            case "redis-jedis", "redis-lettuce", "redis-jedis-ping", "redis-lettuce-ping" -> "--redis";
            case "etcd", "leasehold-etcd", "etcd-txn", "etcd-lease-lock" -> "--etcd";
            default -> "--" + system.replace("postgresql", "postgres");
        };
    }

    private LockClient<?> open(String system, int threadCount) throws Exception {
        return switch (system) {
            case "leasehold" -> new LeaseholdLockClient("leasehold", leasehold, 1, Transport.GRPC,
                    leaseholdSpinWait);
            case "leasehold-socket" -> new LeaseholdLockClient("leasehold-socket", leasehold, 1, Transport.SOCKET,
                    leaseholdSpinWait);
            case "leasehold-nosign" -> new LeaseholdLockClient("leasehold-nosign", leaseholdNoSign, 1, Transport.GRPC,
                    leaseholdSpinWait);
            case "leasehold-socket-nosign" -> new LeaseholdLockClient("leasehold-socket-nosign", leaseholdNoSign, 1,
                    Transport.SOCKET, leaseholdSpinWait);
            case "leasehold-conns" -> new LeaseholdLockClient("leasehold-conns", leasehold, leaseholdConnections,
                    Transport.GRPC, leaseholdSpinWait);
            case "leasehold-socket-conns" -> new LeaseholdLockClient("leasehold-socket-conns", leasehold,
                    leaseholdConnections, Transport.SOCKET, leaseholdSpinWait);
            case "leasehold-echo" -> new LeaseholdEchoClient("leasehold-echo", leasehold, Transport.GRPC,
                    leaseholdSpinWait);
            case "leasehold-socket-echo" -> new LeaseholdEchoClient("leasehold-socket-echo", leasehold,
                    Transport.SOCKET, leaseholdSpinWait);
            case "redis-jedis" -> new JedisLockClient(host(redis, "--redis"), port(redis, "--redis"), threadCount);
            case "redis-lettuce" -> new LettuceLockClient(host(redis, "--redis"), port(redis, "--redis"));
            case "redis-jedis-ping" -> RedisPingClient.jedis(host(redis, "--redis"), port(redis, "--redis"), threadCount);
            case "redis-lettuce-ping" -> RedisPingClient.lettuce(host(redis, "--redis"), port(redis, "--redis"));
            case "java-socket-echo" -> new JavaSocketEchoClient();
            case "local-handoff" -> new LocalHandoffClient();
            case "etcd" -> new EtcdLockClient(etcd);
            case "leasehold-etcd" -> new LeaseholdEtcdLockClient(etcd, etcdPrefix);
            case "etcd-txn" -> new EtcdTxnLockClient(etcd);
            case "etcd-lease-lock" -> new EtcdLeaseLockClient(etcd);
            case "zookeeper" -> new CuratorLockClient(zookeeper);
            case "postgresql" -> new PostgresLockClient(postgres, postgresUser, postgresPool);
            default -> throw new IllegalArgumentException("unknown system " + system);
        };
    }

    private static String host(String address, String option) {
        int colon = address.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException(option + " '" + address + "' is not host:port");
        }
        return address.substring(0, colon);
    }

    private static int port(String address, String option) {
        try {
            return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " '" + address + "' is not host:port (the port is not a number)");
        }
    }
}
