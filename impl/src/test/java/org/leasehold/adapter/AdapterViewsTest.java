package org.leasehold.adapter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadRequest;
import org.leasehold.bag.ViewDefinition;
import org.leasehold.bag.ViewState;
import org.leasehold.connector.LeaseConnection;
import org.leasehold.connector.UnknownViewException;

/**
 * Materialized views through the adapter, on a real store directory and a manual clock: a view read on a connection
 * under its leases equals a full fold of the log while transfers run on other threads; registered views are built in
 * the background on the work manager every {@code ViewBuildIntervalMillis}; a restarted adapter's first read starts
 * from the snapshot and folds only the tail; unknown views, failing definitions and damaged snapshots say so.
 */
class AdapterViewsTest {
    private AdapterFixture fx;
    private final List<String> logged = new CopyOnWriteArrayList<>();
    private java.util.logging.Handler capture;

    /** The loggers whose messages the tests check. */
    private static final List<String> LOGGERS = List.of(AdapterViews.class.getName(), "org.leasehold.store.Views");

    @AfterEach
    void stop() {
        for (String name : LOGGERS) {
            java.util.logging.Logger.getLogger(name).removeHandler(capture);
        }
        if (fx != null) {
            fx.close();
        }
    }

    /** A balance per account from {@code transfer <from> <to> <amount>} payloads; sorted, so deterministic. */
    static class Balances implements ViewDefinition<TreeMap<String, Long>> {
        final AtomicBoolean fail = new AtomicBoolean();

        @Override
        public String name() {
            return "balances";
        }

        @Override
        public String version() {
            return "balances 1";
        }

        @Override
        public TreeMap<String, Long> initial() {
            return new TreeMap<>();
        }

        @Override
        public TreeMap<String, Long> apply(TreeMap<String, Long> s, Message m) {
            if (fail.get()) {
                throw new IllegalStateException("the fold is broken on purpose");
            }
            String[] f = new String(m.payload(), StandardCharsets.UTF_8).split(" ");
            long amount = Long.parseLong(f[3]);
            s.merge(f[1], -amount, Long::sum);
            s.merge(f[2], amount, Long::sum);
            return s;
        }

        @Override
        public byte[] encode(TreeMap<String, Long> s) {
            StringBuilder b = new StringBuilder();
            s.forEach((k, v) -> b.append(k).append('=').append(v).append('\n'));
            return b.toString().getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public TreeMap<String, Long> decode(byte[] bytes) {
            TreeMap<String, Long> s = new TreeMap<>();
            for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n")) {
                if (!line.isEmpty()) {
                    int eq = line.indexOf('=');
                    s.put(line.substring(0, eq), Long.parseLong(line.substring(eq + 1)));
                }
            }
            return s;
        }
    }

    private void start(Long intervalMillis) throws Exception {
        fx = new AdapterFixture("views", mcf -> mcf.setViewBuildIntervalMillis(intervalMillis));
        capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                logged.add(java.text.MessageFormat.format(r.getMessage(), r.getParameters()));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        for (String name : LOGGERS) {
            java.util.logging.Logger jul = java.util.logging.Logger.getLogger(name);
            jul.setLevel(java.util.logging.Level.INFO);
            jul.addHandler(capture);
        }
    }

    /** One transfer on its own connection outside a transaction: both leases, one message, released at close. */
    private void transfer(int from, int to, long amount) throws Exception {
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/" + from, "account/" + to);
            c.append(("transfer " + from + " " + to + " " + amount).getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Rounds of three concurrent transfers on disjoint accounts, the clock moved 100 ms after each round. */
    private void rounds(int count, long seed) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            for (int r = 0; r < count; r++) {
                List<Future<?>> running = new ArrayList<>();
                for (int t = 0; t < 3; t++) {
                    int from = 2 * t + (int) ((seed + r) % 2);
                    int to = 2 * t + 1 - (int) ((seed + r) % 2);
                    long amount = 1 + (seed * 31 + r * 7 + t) % 50;
                    running.add(pool.submit(() -> {
                        transfer(from, to, amount);
                        return null;
                    }));
                }
                for (Future<?> f : running) {
                    f.get();
                }
                fx.time.advance(Duration.ofMillis(100));
                fx.context.drain();
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** The view folded from the first message of the log, read on {@code c}. */
    private static TreeMap<String, Long> fullFold(LeaseConnection c, Balances def) throws Exception {
        TreeMap<String, Long> s = def.initial();
        try (MessageStream m = c.read(ReadRequest.all(c.log()))) {
            for (Message x = m.next(); x != null; x = m.next()) {
                s = def.apply(s, x);
            }
        }
        return s;
    }

    /** How many messages of the log have a timestamp at or after {@code from}. */
    private static long from(LeaseConnection c, Instant from) throws Exception {
        long n = 0;
        try (MessageStream m = c.read(ReadRequest.all(c.log()))) {
            for (Message x = m.next(); x != null; x = m.next()) {
                if (!x.timestamp().isBefore(from)) {
                    n++;
                }
            }
        }
        return n;
    }

    private List<Path> snapshots() throws Exception {
        Path dir = fx.root.resolve("ledger").resolve("views").resolve("balances");
        if (!Files.isDirectory(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".snapshot")).sorted().toList();
        }
    }

    @Test
    void aViewReadUnderALeaseEqualsAFullFoldWhileTransfersRunAndStartsFromTheLatestSnapshot() throws Exception {
        start(0L);
        Balances def = new Balances();
        fx.factory.registerView(def);
        rounds(20, 1);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/0");
            ViewState<TreeMap<String, Long>> cold = c.view(def);
            assertNull(cold.boundary(), "no snapshot yet: folded from the beginning");
            assertEquals(60, cold.tailMessages());
            assertEquals(fullFold(c, def), cold.state());
        }
        Instant first = fx.factory.buildView("balances");
        assertNotNull(first);
        assertTrue(!first.isAfter(fx.time.now().minus(Duration.ofMillis(2_500))), "a sealed boundary: " + first
                + " at " + fx.time.now());
        assertEquals(1, snapshots().size());
        assertEquals(first, fx.factory.buildView("balances"), "the same boundary is left as published");
        assertEquals(1, snapshots().size());

        // Readers on other threads, each under the lease of an account the transfers use, while transfers go on:
        // the account's balance in the view is the one a full fold gives, and the read starts from the snapshot.
        ExecutorService readers = Executors.newFixedThreadPool(2);
        List<Future<Integer>> reads = new ArrayList<>();
        AtomicBoolean writing = new AtomicBoolean(true);
        for (int r = 0; r < 2; r++) {
            String account = String.valueOf(2 * r);
            reads.add(readers.submit(() -> {
                int n = 0;
                while (writing.get() || n == 0) {
                    try (LeaseConnection c = fx.connection()) {
                        c.acquire("account/" + account);
                        ViewState<TreeMap<String, Long>> v = c.view(def);
                        long tail = from(c, first);
                        assertEquals(first, v.boundary());
                        assertEquals(fullFold(c, def).get(account), v.state().get(account), "read " + n);
                        assertTrue(v.tailMessages() > 0 && v.tailMessages() <= tail, v.tailMessages() + " of " + tail);
                        n++;
                    }
                }
                return n;
            }));
        }
        try {
            rounds(20, 2);
        } finally {
            writing.set(false);
        }
        for (Future<Integer> f : reads) {
            assertTrue(f.get() > 0);
        }
        readers.shutdownNow();

        Instant second = fx.factory.buildView("balances");
        assertTrue(second.isAfter(first), second + " after " + first);
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/0", "account/1");
            ViewState<TreeMap<String, Long>> v = c.view(def);
            assertEquals(second, v.boundary());
            assertEquals(fullFold(c, def), v.state());
            assertEquals(from(c, second), v.tailMessages());
            assertTrue(v.tailMessages() < 120, "only the tail: " + v.tailMessages());
            assertTrue(v.tentative(), "the last messages are in buckets not sealed yet");
            assertEquals(0L, v.state().values().stream().mapToLong(Long::longValue).sum());
        }
    }

    @Test
    void registeredViewsAreBuiltInTheBackgroundAndARestartedAdapterStartsFromTheSnapshot() throws Exception {
        start(1_000L);
        Balances def = new Balances();
        fx.factory.registerView(def);
        rounds(100, 3);
        List<Path> built = snapshots();
        // A snapshot every second of the 10 s; each build removes those older than the one it started from.
        assertEquals(2, built.size(), "the latest two snapshots: " + built);
        assertTrue(logged.stream().anyMatch(m -> m.startsWith("LEASEHOLD-4601 view 'balances' (version 'balances 1', "
                + Balances.class.getName() + ") registered for log 'ledger': a snapshot every 1000 ms")), logged::toString);
        Instant latest;
        long total;
        try (LeaseConnection c = fx.connection()) {
            ViewState<TreeMap<String, Long>> v = c.view(def);
            latest = v.boundary();
            assertNotNull(latest);
            total = from(c, Instant.EPOCH);
            assertEquals(300, total);
        }

        fx.restart();
        // The same writer restarting: its engine grants after its earlier leases are over.
        for (int i = 0; i < 10; i++) {
            fx.time.advance(Duration.ofSeconds(2));
            fx.context.drain();
        }
        assertEquals(built, snapshots(), "the stopped adapter builds nothing more, and the new one has no view yet");
        Balances again = new Balances();
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/0", "account/1");
            ViewState<TreeMap<String, Long>> v = c.view(again);
            assertEquals(latest, v.boundary(), "the first read of the restarted adapter starts from the snapshot");
            assertEquals(from(c, latest), v.tailMessages());
            assertTrue(v.tailMessages() < total / 2, "a short tail, not a fold from the beginning: "
                    + v.tailMessages() + " of " + total);
            assertEquals(fullFold(c, again), v.state());
        }
        fx.factory.registerView(again);
        List<Path> before = snapshots();
        fx.time.advance(Duration.ofMillis(1_000));
        fx.context.drain();
        List<Path> after = snapshots();
        assertEquals(List.of(before.get(1)), after.subList(0, 1), "the new adapter builds the view it was given again, "
                + "from the latest snapshot, and removes the one before: " + after);
        assertEquals(2, after.size(), after::toString);
        assertFalse(fx.factory.unregisterView(def), "the restarted adapter has the other definition registered under that name");
        assertTrue(fx.factory.unregisterView(again));
        assertFalse(fx.factory.unregisterView(again));
        fx.time.advance(Duration.ofMillis(1_000));
        fx.context.drain();
        fx.time.advance(Duration.ofMillis(1_000));
        fx.context.drain();
        assertEquals(after, snapshots(), "an unregistered view is not built");
    }

    @Test
    void unknownViewsBadNamesFailingDefinitionsAndDamagedSnapshotsSaySo() throws Exception {
        start(1_000L);
        UnknownViewException none = assertThrows(UnknownViewException.class, () -> fx.factory.buildView("balances"));
        assertEquals("no view is registered as 'balances' for log 'ledger'; none is: register the definition with the "
                + "connection factory (LeaseConnectionFactory.registerView; the CDI integration registers the "
                + "application's ViewDefinition beans when it starts) before building it", none.getMessage());
        Balances def = new Balances();
        fx.factory.registerView(def);
        UnknownViewException other = assertThrows(UnknownViewException.class, () -> fx.factory.buildView("balance"));
        assertTrue(other.getMessage().contains("the registered views are [balances]"), other.getMessage());
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
                () -> fx.factory.registerView(new Balances() {
                    @Override
                    public String name() {
                        return "../balances";
                    }
                }));
        assertTrue(bad.getMessage().startsWith("view name '../balances' is not acceptable"), bad.getMessage());

        rounds(10, 4);
        def.fail.set(true);
        rounds(30, 5);
        assertEquals(1, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4602 no snapshot of view 'balances' of "
                + "log 'ledger' could be built: the definition (" + Balances.class.getName() + ") threw "
                + "java.lang.IllegalStateException: the fold is broken on purpose")).count(),
                "once per view and reason, not at every pass: " + logged);
        def.fail.set(false);
        fx.time.advance(Duration.ofMillis(1_000));
        fx.context.drain();
        assertEquals(1, logged.stream().filter(m -> m.startsWith("LEASEHOLD-4603 view 'balances' of log 'ledger' was "
                + "built again")).count(), logged::toString);

        // The latest snapshot damaged: the read is logged and starts from the one before, and is still the full fold.
        List<Path> all = snapshots();
        assertTrue(all.size() >= 2, all::toString);
        Instant latest;
        try (LeaseConnection c = fx.connection()) {
            latest = c.view(def).boundary();
        }
        Path damaged = all.get(all.size() - 1);
        try (FileChannel ch = FileChannel.open(damaged, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[] {0x55}), ch.size() - 3);
        }
        try (LeaseConnection c = fx.connection()) {
            c.acquire("account/2");
            ViewState<TreeMap<String, Long>> v = c.view(def);
            assertNotNull(v.boundary());
            assertTrue(v.boundary().isBefore(latest), v.boundary() + " is the snapshot before " + latest);
            assertEquals(fullFold(c, def), v.state());
            assertEquals(from(c, v.boundary()), v.tailMessages());
        }
        assertTrue(logged.stream().anyMatch(m -> m.startsWith("LEASEHOLD-6551 snapshot " + damaged.getFileName()
                + " of view 'balances' of log 'ledger' is unreadable")), logged::toString);
    }
}
