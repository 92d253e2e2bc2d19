package org.leasehold.samples.ledger;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.leasehold.bag.AppendRequest;
import org.leasehold.bag.Appended;
import org.leasehold.bag.LeaseStamp;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.StampedLease;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.engine.EmbeddedLeaseService;
import org.leasehold.engine.EngineConfig;
import org.leasehold.lease.HolderId;
import org.leasehold.lease.Lease;
import org.leasehold.lease.LeaseBusyException;
import org.leasehold.lease.LeaseRequest;
import org.leasehold.time.Micros;
import org.leasehold.store.BagStoreConfig;
import org.leasehold.store.FileBagStore;
import org.leasehold.time.SystemTimeSource;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * A ledger on the embedded lease service and a bag store, no application server: many threads transfer money
 * between accounts, each transfer under the leases of both accounts, appending one entry to the store's log (the
 * store picks a timestamp inside the leases) and releasing with that timestamp as watermark. At the end the log is
 * read back from the store directory and replayed in order: money is conserved, no account ever goes negative, each
 * account's entries follow its lease order, and the replay gives the live balances, as does the store's materialized
 * view of them ({@link Deltas}: a published snapshot plus the entries after it).
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

    @Option(names = "--data", defaultValue = "target/ledger-data",
            description = "Directory for the bag store; each run writes a fresh store under it (default ${DEFAULT-VALUE}).")
    Path data;

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
        Path root = Files.createDirectories(data.resolve("run-" + System.nanoTime()));
        List<Entry> journal;
        ViewState<long[]> view;
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
                        EngineConfig.defaults().withQuietPeriod(Duration.ZERO), time);
                FileBagStore store = FileBagStore.open(BagStoreConfig.defaults(root), time)) {
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
                        byte[] entry = ("transfer " + from + " " + to + " " + amount).getBytes(StandardCharsets.UTF_8);
                        Appended written = store.append(AppendRequest.of(LOG, LeaseStamp.of(lease), entry));
                        live[from] -= amount;
                        live[to] += amount;
                        leases.release(lease, written.timestamp(), "log=" + LOG);
                        transfers.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get();
            }
            pool.shutdown();
            journal = readBack(store);
            Deltas deltas = new Deltas(accounts);
            store.buildView(LOG, deltas, Instant.MAX);
            view = store.view(LOG, deltas);
        }

        out.printf("Leasehold standalone ledger: %d accounts, %d threads, %s%n", accounts, threads, duration);
        out.printf("  transfers committed: %d (%.0f/s), declined for funds: %d, lease waits: %d, gave up waiting: %d%n",
                transfers.get(), transfers.get() / (duration.toMillis() / 1000.0), declined.get(), waited.get(),
                busy.get());
        out.printf("  log '%s' in %s: %d entries read back%n", LOG, root, journal.size());
        List<String> problems = check(new ArrayList<>(journal), live);
        if (journal.size() != transfers.get()) {
            problems.add("the log holds " + journal.size() + " entries, " + transfers.get() + " were acknowledged");
        }
        for (int i = 0; i < accounts; i++) {
            if (openingBalance + view.state()[i] != live[i]) {
                problems.add("account " + i + ": the view gives " + (openingBalance + view.state()[i]) + ", live balance "
                        + "is " + live[i]);
            }
        }
        out.printf("  view 'balances': snapshot at %s plus %d entries after it%n", view.boundary(), view.tailMessages());
        if (problems.isEmpty()) {
            out.println("  check: log replayed in order: every acknowledged transfer read back once, money conserved, "
                    + "no account below zero, entries in lease order, replay and view equal live balances: OK");
            return 0;
        }
        out.println("  check FAILED:");
        problems.stream().limit(20).forEach(p -> out.println("    " + p));
        return 1;
    }

    static final String LOG = "ledger";

    /** The store's view of the ledger: per account the sum of its transfers, in account order (deterministic). */
    static final class Deltas implements ViewDefinition<long[]> {
        private final int accounts;

        Deltas(int accounts) {
            this.accounts = accounts;
        }

        @Override
        public String name() {
            return "balances";
        }

        @Override
        public String version() {
            return "standalone deltas 1, " + accounts + " accounts";
        }

        @Override
        public long[] initial() {
            return new long[accounts];
        }

        @Override
        public long[] apply(long[] state, Message m) {
            String[] f = new String(m.payload(), StandardCharsets.UTF_8).split(" ");
            long amount = Long.parseLong(f[3]);
            state[Integer.parseInt(f[1])] -= amount;
            state[Integer.parseInt(f[2])] += amount;
            return state;
        }

        @Override
        public byte[] encode(long[] state) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(state.length * 8);
            for (long v : state) {
                b.putLong(v);
            }
            return b.array();
        }

        @Override
        public long[] decode(byte[] bytes) {
            if (bytes.length != accounts * 8) {
                throw new IllegalArgumentException(bytes.length + " bytes are not " + accounts + " accounts");
            }
            long[] state = new long[accounts];
            java.nio.ByteBuffer.wrap(bytes).asLongBuffer().get(state);
            return state;
        }
    }

    static String account(int i) {
        return "ledger/account/" + i;
    }

    /** Every entry of the log, as the store returns it, with each account's lease generation. */
    private static List<Entry> readBack(FileBagStore store) throws Exception {
        List<Entry> entries = new ArrayList<>();
        try (MessageStream messages = store.read(ReadRequest.all(LOG))) {
            Message m;
            while ((m = messages.next()) != null) {
                String[] f = new String(m.payload(), StandardCharsets.UTF_8).split(" ");
                int from = Integer.parseInt(f[1]);
                int to = Integer.parseInt(f[2]);
                long fromGen = 0;
                long toGen = 0;
                for (StampedLease l : m.leases()) {
                    if (l.name().equals(account(from))) {
                        fromGen = l.generation();
                    } else if (l.name().equals(account(to))) {
                        toGen = l.generation();
                    }
                }
                entries.add(new Entry(Micros.of(m.timestamp()), from, to, Long.parseLong(f[3]), fromGen, toGen,
                        m.writer()));
            }
        } catch (org.leasehold.bag.UnknownLogException e) {
            return entries;
        }
        return entries;
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
