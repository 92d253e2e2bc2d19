package org.leasehold.bench;

import java.time.Duration;
import java.util.List;

import org.HdrHistogram.Histogram;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.remote.RemoteClientConfig;
import org.leasehold.remote.RemoteLeaseService;
import org.leasehold.server.LeaseServer;
import org.leasehold.server.ServerConfig;

/**
 * How long a writer under a remote lease waits for its frame witnesses: a lease server started in this process
 * (loopback, signing with its default linger), one client per transport, one thread taking a lease of its own name
 * and then its stamps ({@code LeaseStamp.of}, which waits for each witness's proof) and releasing it, in a loop: a full
 * lease taken outside a transaction, and a tentative one upgraded first (as a transaction's prepare does). Reports the
 * wait for the stamps and the whole cycle (p50, p99, max; HdrHistogram), after a warm-up. See docs/BENCHMARKS.md,
 * "Remote writers: the wait for a witness's proof".
 *
 * <pre>java -cp benchmarks/target/benchmarks.jar org.leasehold.bench.RemoteStampBench [cycles] [warm-up cycles]</pre>
 */
public final class RemoteStampBench {
    private RemoteStampBench() {
    }

    public static void main(String[] args) throws Exception {
        int cycles = args.length > 0 ? Integer.parseInt(args[0]) : 2_000;
        int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 1_000;
        ServerConfig config = ServerConfig.loopback(EngineConfig.defaults().withQuietPeriod(Duration.ZERO))
                .withSocket(ServerConfig.SocketSettings.loopback());
        System.out.printf("%d cycles after %d of warm-up, one thread, lease server in this process%n", cycles, warmup);
        System.out.println("| transport | lease | stamps p50 | p99 | max | cycle p50 | p99 |");
        System.out.println("|---|---|---:|---:|---:|---:|---:|");
        try (LeaseServer server = LeaseServer.start(config)) {
            for (RemoteClientConfig.Transport t : RemoteClientConfig.Transport.values()) {
                try (RemoteLeaseService client = new RemoteLeaseService(RemoteClientConfig.builder(server.address())
                        .transport(t).callTimeout(Duration.ofSeconds(30)).build())) {
                    for (boolean upgraded : new boolean[] {false, true}) {
                        Histogram stamps = new Histogram(3);
                        Histogram cycle = new Histogram(3);
                        for (int i = 0; i < warmup + cycles; i++) {
                            String name = "stamp/" + t + "/" + upgraded + "/" + i;
                            long t0 = System.nanoTime();
                            LeaseRequest.Builder r = LeaseRequest.builder(new HolderId("bench", "w"), name);
                            Lease lease = upgraded ? client.upgrade(client.acquire(r.tentative().build()), null)
                                    : client.acquire(r.build());
                            long t1 = System.nanoTime();
                            List<LeaseStamp> s = LeaseStamp.of(lease);
                            long t2 = System.nanoTime();
                            client.release(lease, null, null);
                            long t3 = System.nanoTime();
                            if (s.isEmpty() || s.get(0).witnessLength() == 0) {
                                throw new IllegalStateException("no witness in the stamp of " + name);
                            }
                            if (i >= warmup) {
                                stamps.recordValue((t2 - t1) / 1_000);
                                cycle.recordValue((t3 - t0) / 1_000);
                            }
                        }
                        System.out.printf("| %s | %s | %,d µs | %,d µs | %,d µs | %,d µs | %,d µs |%n", t,
                                upgraded ? "tentative, upgraded" : "full", stamps.getValueAtPercentile(50),
                                stamps.getValueAtPercentile(99), stamps.getMaxValue(), cycle.getValueAtPercentile(50),
                                cycle.getValueAtPercentile(99));
                    }
                }
            }
        }
    }
}
