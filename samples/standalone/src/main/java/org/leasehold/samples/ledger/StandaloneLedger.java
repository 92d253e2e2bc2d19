package org.leasehold.samples.ledger;

import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.Micros;
import org.leasehold.time.SystemTimeSource;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * A ledger on the embedded lease service, no application server: many threads transfer money between accounts,
 * each transfer under the leases of both accounts, writing a journal entry with a timestamp inside its leases and
 * releasing with that timestamp as watermark. At the end the journal is replayed in timestamp order and checked:
 * money is conserved, no account ever goes negative, each account's entries follow its lease order, and the replay
 * gives the live balances.
 */
@Command(name = "standalone-ledger", mixinStandardHelpOptions = true,
        description = "Runs concurrent transfers under Leasehold leases and checks the journal.")
public final class StandaloneLedger implements Callable<Integer> {

    @Option(names = "--accounts", defaultValue = "16", description = "Number of accounts (default ${DEFAULT-VALUE}).")
    int accounts;

    @Option(names = "--threads", defaultValue = "8", description = "Concurrent transfer threads (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--duration", defaultValue = "PT3S",
            description = "How long to run, as an ISO-8601 duration (default ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(names = "--opening-balance", defaultValue = "1000", description = "Each account's opening balance.")
    long openingBalance;

    @Spec
    CommandSpec spec;

    private final PrintStream out;

    StandaloneLedger(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new StandaloneLedger(System.out)).execute(args));
    }

    /** One journal entry: a transfer written under both accounts' leases. */
    record Entry(long timestamp, int from, int to, long amount, long fromGeneration, long toGeneration, String thread) {
    }

    @Override
    public Integer call() throws Exception {
        if (accounts < 2 || threads < 1 || duration.isNegative() || duration.isZero()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "need at least 2 accounts, 1 thread and a positive duration");
        }
        ConcurrentLinkedQueue<Entry> journal = new ConcurrentLinkedQueue<>();
        long[] live = new long[accounts];
        java.util.Arrays.fill(live, openingBalance);
        AtomicLong transfers = new AtomicLong();
        AtomicLong declined = new AtomicLong();
        AtomicLong waited = new AtomicLong();
        AtomicLong busy = new AtomicLong();

        // One process owns the lease service and the ledger, and a previous run has ended, so no quiet period is
        // needed; a service shared by several processes keeps the default (max lease + grace).
        try (SystemTimeSource time = new SystemTimeSource("ledger-lease-timer");
                EmbeddedLeaseService leases = new EmbeddedLeaseService(
                        EngineConfig.defaults().withQuietPeriod(Duration.ZERO), time)) {
            Instant until = time.now().plus(duration);
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < threads; w++) {
                String worker = "teller-" + w;
                workers.add(pool.submit(() -> {
                    HolderId me = new HolderId("standalone-ledger", worker);
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    while (time.now().isBefore(until)) {
                        int from = rnd.nextInt(accounts);
                        int to = (from + 1 + rnd.nextInt(accounts - 1)) % accounts;
                        long amount = 1 + rnd.nextInt(200);
                        Instant asked = time.now();
                        Lease lease;
                        try {
                            lease = leases.acquire(LeaseRequest.builder(me, account(from), account(to))
                                    .leaseFor(Duration.ofSeconds(5)).waitFor(Duration.ofSeconds(2)).build());
                        } catch (LeaseBusyException e) {
                            busy.incrementAndGet();
                            continue;
                        }
                        if (lease.grantedAt().isAfter(asked)) {
                            waited.incrementAndGet();
                        }
                        // Under both leases: read the balance, decide, write the entry, release with its timestamp.
                        if (live[from] < amount) {
                            declined.incrementAndGet();
                            leases.release(lease, null, null);
                            continue;
                        }
                        long t = Math.max(Micros.of(lease.floor()) + 1, time.nowMicros());
                        if (t >= Micros.of(lease.deadline())) {
                            leases.release(lease, null, null);
                            continue;
                        }
                        live[from] -= amount;
                        live[to] += amount;
                        journal.add(new Entry(t, from, to, amount, lease.grant(account(from)).generation(),
                                lease.grant(account(to)).generation(), worker));
                        leases.release(lease, Micros.toInstant(t), "journal=in-memory");
                        transfers.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get();
            }
            pool.shutdown();
        }

        out.printf("Leasehold standalone ledger: %d accounts, %d threads, %s%n", accounts, threads, duration);
        out.printf("  transfers committed: %d (%.0f/s), declined for funds: %d, lease waits: %d, gave up waiting: %d%n",
                transfers.get(), transfers.get() / (duration.toMillis() / 1000.0), declined.get(), waited.get(),
                busy.get());
        List<String> problems = check(new ArrayList<>(journal), live);
        if (problems.isEmpty()) {
            out.println("  check: journal replayed in timestamp order: money conserved, no account below zero, "
                    + "entries in lease order, replay equals live balances: OK");
            return 0;
        }
        out.println("  check FAILED:");
        problems.stream().limit(20).forEach(p -> out.println("    " + p));
        return 1;
    }

    static String account(int i) {
        return "ledger/account/" + i;
    }

    /** Replays the journal in timestamp order and lists every broken rule. */
    List<String> check(List<Entry> journal, long[] live) {
        List<String> problems = new ArrayList<>();
        journal.sort(Comparator.comparingLong(Entry::timestamp));
        long[] balance = new long[accounts];
        java.util.Arrays.fill(balance, openingBalance);
        Map<Integer, Entry> last = new HashMap<>();
        for (Entry e : journal) {
            balance[e.from()] -= e.amount();
            balance[e.to()] += e.amount();
            if (balance[e.from()] < 0) {
                problems.add("account " + e.from() + " below zero at " + e.timestamp() + " (" + balance[e.from()] + ")");
            }
            checkOrder(problems, last, e.from(), e);
            checkOrder(problems, last, e.to(), e);
        }
        long total = 0;
        for (int i = 0; i < accounts; i++) {
            total += balance[i];
            if (balance[i] != live[i]) {
                problems.add("account " + i + ": replay gives " + balance[i] + ", live balance is " + live[i]);
            }
        }
        if (total != openingBalance * accounts) {
            problems.add("money not conserved: " + total + " != " + openingBalance * accounts);
        }
        return problems;
    }

    /** Entries of one account must have strictly increasing timestamps in lease (generation) order. */
    private static void checkOrder(List<String> problems, Map<Integer, Entry> last, int account, Entry e) {
        Entry previous = last.put(account, e);
        if (previous == null) {
            return;
        }
        long gen = generationOf(e, account);
        long previousGen = generationOf(previous, account);
        if (previousGen >= gen || previous.timestamp() >= e.timestamp()) {
            problems.add("account " + account + ": entry at " + e.timestamp() + " under generation " + gen
                    + " follows one at " + previous.timestamp() + " under generation " + previousGen);
        }
    }

    private static long generationOf(Entry e, int account) {
        return e.from() == account ? e.fromGeneration() : e.toGeneration();
    }
}
