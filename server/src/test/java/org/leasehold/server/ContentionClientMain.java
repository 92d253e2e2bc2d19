package org.leasehold.server;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBrokenException;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseException;
import org.leasehold.lease.LeaseExpiredException;
import org.leasehold.lease.LeaseGrant;
import org.leasehold.lease.LeaseKind;
import org.leasehold.lease.LeaseMode;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.lease.StaleLeaseException;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One contending client process for {@link MultiProcessContentionTest}: several threads take, upgrade, renew and
 * release leases on a small shared set of names through one {@link RemoteLeaseService}, some pausing past their
 * deadline, and every answer the service gave is appended to a record file as one JSON object per line (events
 * {@code grant}, {@code upgrade}, {@code broken}, {@code renew}, {@code release}, {@code expired}, {@code error},
 * and a final {@code summary}). The work is a number of transactions per thread, not a time window. The process
 * exits when its standard input closes (the test JVM went away).
 */
@Command(name = "contention-client", mixinStandardHelpOptions = true,
        description = "Contends for leases and records every grant and ending.")
public final class ContentionClientMain implements Callable<Integer> {
    @Option(names = "--servers", required = true, description = "comma-separated host:port of the lease servers")
    String servers;
    @Option(names = "--client", required = true, description = "this process's name, used in holder identities")
    String client;
    @Option(names = "--out", required = true, description = "record file (JSON lines)")
    Path out;
    @Option(names = "--threads", defaultValue = "4")
    int threads;
    @Option(names = "--transactions", defaultValue = "30", description = "transactions per thread")
    int transactions;
    @Option(names = "--names", defaultValue = "5", description = "how many lease names are contended")
    int names;
    @Option(names = "--seed", defaultValue = "1")
    long seed;
    @Option(names = "--connections", defaultValue = "1", description = "connections to each server")
    int connections;
    @Option(names = "--transport", defaultValue = "GRPC", description = "GRPC or SOCKET")
    RemoteClientConfig.Transport transport;

    private static final int MAX_ATTEMPTS = 40;
    private final ObjectMapper json = new ObjectMapper();
    private final Map<String, AtomicInteger> counts = new LinkedHashMap<>();
    private BufferedWriter writer;
    private RemoteLeaseService leases;
    /** The contended names grouped by the server that holds them, so that two-name requests stay on one server. */
    private final List<List<String>> byServer = new ArrayList<>();

    public static void main(String[] args) {
        Thread watchdog = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) {
                    // Nothing is sent; the loop ends when the parent closes our standard input or dies.
                }
            } catch (IOException e) {
                // The parent is gone either way.
            }
            Runtime.getRuntime().halt(3);
        }, "stdin-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
        System.exit(new CommandLine(new ContentionClientMain()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        for (String c : List.of("transactions", "committed", "gaveUp", "grants", "shared", "exclusive", "twoNames",
                "tentative", "upgraded", "broken", "busy", "waited", "renewed", "paused", "releases", "expired",
                "secondLeases", "crossServer", "errors")) {
            counts.put(c, new AtomicInteger());
        }
        Files.createDirectories(out.toAbsolutePath().getParent());
        leases = new RemoteLeaseService(RemoteClientConfig.builder(servers.split(","))
                .callTimeout(Duration.ofSeconds(10)).connections(connections).transport(transport).build());
        try (BufferedWriter w = Files.newBufferedWriter(out, StandardCharsets.UTF_8)) {
            writer = w;
            Map<String, List<String>> groups = new LinkedHashMap<>();
            for (int i = 0; i < names; i++) {
                String name = "contended/" + i;
                groups.computeIfAbsent(leases.serverFor(name), k -> new ArrayList<>()).add(name);
            }
            byServer.addAll(groups.values());
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Random rnd = new Random(seed * 1_000 + t);
                int thread = t;
                done.add(pool.submit(() -> {
                    for (int tx = 0; tx < transactions; tx++) {
                        transaction(rnd, new HolderId(client, "t" + thread + "-tx" + tx));
                        counts.get("transactions").incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            pool.shutdown();
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("ev", "summary");
            summary.put("client", client);
            counts.forEach((k, v) -> summary.put(k, v.get()));
            write(summary);
            System.out.println("contention client " + client + ": " + summary);
        } finally {
            leases.close();
        }
        return 0;
    }

    private void transaction(Random rnd, HolderId holder) throws InterruptedException {
        boolean shared = rnd.nextInt(4) == 0;
        LeaseMode mode = shared ? LeaseMode.SHARED : LeaseMode.EXCLUSIVE;
        List<String> group = byServer.get(rnd.nextInt(byServer.size()));
        List<String> want = new ArrayList<>();
        want.add(group.get(rnd.nextInt(group.size())));
        if (group.size() > 1 && rnd.nextInt(4) == 0) {
            String other = group.get(rnd.nextInt(group.size()));
            while (other.equals(want.get(0))) {
                other = group.get(rnd.nextInt(group.size()));
            }
            want.add(other);
        }
        LeaseKind kind = rnd.nextBoolean() ? LeaseKind.TENTATIVE : LeaseKind.FULL;
        try {
            Instant startedAt = leases.now();
            if (rnd.nextBoolean()) {
                // A transaction that began earlier and did other work first: older than the holders it meets (even
                // those retrying for a while), it breaks their tentative leases while they wait for a second lease
                // (wound-wait). Without it, queues served oldest first leave few younger holders in an older
                // request's way; with it, tentative holds of 40 to 240 ms and second leases for half of them, a run
                // of 300 transactions breaks some 8 to 14 leases (four runs on a quiet machine).
                startedAt = startedAt.minusMillis(1_000 + rnd.nextInt(2_000));
            }
            for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
                Duration wait = Duration.ofMillis(rnd.nextInt(4) == 0 ? 0 : 200 + rnd.nextInt(1000));
                Instant asked = leases.now();
                Lease lease;
                try {
                    lease = leases.acquire(LeaseRequest.builder(holder, want).mode(mode).kind(kind).startedAt(startedAt)
                            .leaseFor(Duration.ofMillis(300 + rnd.nextInt(500))).waitFor(wait).build());
                } catch (LeaseBusyException e) {
                    counts.get("busy").incrementAndGet();
                    continue;
                }
                record("grant", lease, Map.of("mode", mode.type().name(), "kind", kind.name()));
                counts.get("grants").incrementAndGet();
                counts.get(shared ? "shared" : "exclusive").incrementAndGet();
                if (want.size() > 1) {
                    counts.get("twoNames").incrementAndGet();
                }
                if (lease.grantedAt().isAfter(asked.plusMillis(50))) {
                    counts.get("waited").incrementAndGet();
                }
                Lease second = null;
                if (kind == LeaseKind.TENTATIVE) {
                    counts.get("tentative").incrementAndGet();
                    // The rest of the transaction's work, during which older requests may queue for its names.
                    Thread.sleep(40 + rnd.nextInt(200));
                    // Half ask for a second lease, on any server, and may wait for it: a server breaks a younger
                    // tentative lease for an older request only while its holder waits (a holder that waits for
                    // nothing cannot be in a cycle of waits), there or, told by the client, at another server.
                    List<String> anyServer = byServer.get(rnd.nextInt(byServer.size()));
                    String other = anyServer.get(rnd.nextInt(anyServer.size()));
                    if (rnd.nextBoolean() && !want.contains(other)) {
                        if (anyServer != group) {
                            counts.get("crossServer").incrementAndGet();
                        }
                        try {
                            second = leases.acquire(LeaseRequest.builder(holder, other).tentative().startedAt(startedAt)
                                    .leaseFor(Duration.ofMillis(300 + rnd.nextInt(500)))
                                    .waitFor(Duration.ofMillis(200 + rnd.nextInt(1000))).build());
                        } catch (LeaseBusyException e) {
                            counts.get("busy").incrementAndGet();
                            releaseQuietly(lease);
                            continue;
                        }
                        record("grant", second, Map.of("mode", LeaseMode.Type.EXCLUSIVE.name(), "kind", kind.name()));
                        counts.get("secondLeases").incrementAndGet();
                    }
                    try {
                        lease = upgrade(lease);
                        if (second != null) {
                            second = upgrade(second);
                        }
                    } catch (LeaseBrokenException | StaleLeaseException | LeaseExpiredException e) {
                        releaseQuietly(lease);
                        releaseQuietly(second);
                        continue;
                    }
                }
                hold(rnd, lease);
                releaseQuietly(second);
                counts.get("committed").incrementAndGet();
                return;
            }
            counts.get("gaveUp").incrementAndGet();
        } catch (LeaseException | RuntimeException e) {
            counts.get("errors").incrementAndGet();
            write(Map.of("ev", "error", "holder", holder.toString(), "error", String.valueOf(e)));
        }
    }

    /** Upgrades {@code lease}, recording the upgrade, or the break or expiry it threw. */
    private Lease upgrade(Lease lease) throws LeaseException {
        try {
            Lease full = leases.upgrade(lease, null);
            record("upgrade", full, Map.of());
            counts.get("upgraded").incrementAndGet();
            return full;
        } catch (LeaseBrokenException | StaleLeaseException e) {
            // Stale: a tentative lease broken while it waited for its second lease, its ending since dropped from the
            // name's bounded history (before its deadline nothing else ends it unseen): never upgraded, a rollback.
            record("broken", lease, Map.of());
            counts.get("broken").incrementAndGet();
            throw e;
        } catch (LeaseExpiredException e) {
            record("expired", lease, Map.of());
            counts.get("expired").incrementAndGet();
            throw e;
        }
    }

    /** Releases {@code lease} (null: nothing) without a watermark, if it is still held: nothing was written under it. */
    private void releaseQuietly(Lease lease) throws LeaseException {
        if (lease == null) {
            return;
        }
        try {
            release(lease, null);
        } catch (LeaseBrokenException | StaleLeaseException e) {
            // Broken by an older request (and perhaps forgotten since): nothing to give back.
        }
    }

    /** Holds a full lease: maybe renews, maybe pauses past the deadline, then releases with a watermark. */
    private void hold(Random rnd, Lease lease) throws LeaseException, InterruptedException {
        boolean writer = lease.mode().type() == LeaseMode.Type.EXCLUSIVE;
        if (writer && lease.writableFrom().isBefore(lease.deadline().minusMillis(100))) {
            sleepUntil(lease.writableFrom());
        }
        Thread.sleep(rnd.nextInt(100));
        if (rnd.nextInt(5) == 0) {
            try {
                lease = leases.renewFor(lease, Duration.ofMillis(200 + rnd.nextInt(500)));
                record("renew", lease, Map.of());
                counts.get("renewed").incrementAndGet();
            } catch (LeaseExpiredException e) {
                record("expired", lease, Map.of());
                counts.get("expired").incrementAndGet();
                return;
            }
        }
        if (rnd.nextInt(8) == 0) {
            // Paused past the deadline (as a GC pause would): the late release must be refused.
            counts.get("paused").incrementAndGet();
            sleepUntil(lease.deadline().plusMillis(50 + rnd.nextInt(250)));
            release(lease, null);
            return;
        }
        Instant watermark = null;
        if (writer) {
            Instant now = leases.now();
            Instant above = lease.floor().plusNanos(1_000);
            Instant wm = now.isAfter(above) ? now : above;
            if (wm.isBefore(lease.deadline()) && !wm.isBefore(lease.writableFrom())) {
                watermark = wm;
            }
        }
        release(lease, watermark);
    }

    private void release(Lease lease, Instant watermark) throws LeaseException {
        try {
            Instant ended = leases.release(lease, watermark, null);
            Map<String, Object> extra = new LinkedHashMap<>();
            extra.put("endedAt", ended.toString());
            if (watermark != null) {
                extra.put("watermark", watermark.toString());
            }
            record("release", lease, extra);
            counts.get("releases").incrementAndGet();
        } catch (LeaseExpiredException e) {
            record("expired", lease, Map.of());
            counts.get("expired").incrementAndGet();
        }
    }

    private void sleepUntil(Instant serviceTime) throws InterruptedException {
        long ms = Duration.between(leases.now(), serviceTime).toMillis();
        if (ms > 0) {
            Thread.sleep(ms + 1);
        }
    }

    /** One line per name of {@code lease}: what the service said about it. */
    private void record(String event, Lease lease, Map<String, Object> extra) {
        for (LeaseGrant g : lease.grants()) {
            Map<String, Object> line = new LinkedHashMap<>();
            line.put("ev", event);
            line.put("name", g.name());
            line.put("generation", g.generation());
            line.put("holder", lease.holder().toString());
            line.put("kind", lease.kind().name());
            line.put("grantedAt", lease.grantedAt().toString());
            line.put("deadline", lease.deadline().toString());
            line.put("floor", g.floor().toString());
            line.put("writableFrom", g.writableFrom().toString());
            line.putAll(extra);
            write(line);
        }
    }

    private synchronized void write(Map<String, Object> line) {
        try {
            writer.write(json.writeValueAsString(line));
            writer.newLine();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the record file " + out, e);
        }
    }
}
