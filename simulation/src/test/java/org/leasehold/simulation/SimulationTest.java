package org.leasehold.simulation;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;
import org.leasehold.simulation.nfs.NfsModel;

/**
 * The deterministic simulation in CI: many seeds, at least a million simulated operations in all, no violation; a
 * seed replays to the same trace; and the checker catches a client that breaks close-to-open consistency.
 *
 * <p>{@code -Dsim.seed=N} runs only seed {@code N} and prints its trace's last events;
 * {@code -Dsim.seedBase=N} fixes the first seed of the CI run (otherwise drawn at random and printed);
 * {@code -Dsim.seeds} and {@code -Dsim.operations} set how many seeds and how many operations each.
 */
class SimulationTest {
    static final String REPLAY = "mvn -o -B -pl simulation -am verify -Dtest=SimulationTest#seedsHoldEveryInvariant "
            + "-Dsurefire.failIfNoSpecifiedTests=false -Dsim.seed=";

    /** The correct NFS client: lifetimes of seconds to a minute, negative entries cached, early write-back. */
    static NfsModel nfs(long seed) {
        SplittableRandom r = new SplittableRandom(seed ^ 0x5eed);
        return new NfsModel(1_000_000L + r.nextLong(59_000_000L), 1_000_000L + r.nextLong(59_000_000L),
                true, 0.02 + r.nextDouble() * 0.2, r.nextInt(4) != 0, false, false);
    }

    static Simulation.Result run(long seed, long operations, NfsModel model) {
        return new Simulation(new Simulation.Options(seed, operations, model, false)).run();
    }

    @Test
    void seedsHoldEveryInvariant() throws Exception {
        String one = System.getProperty("sim.seed");
        long operations = Long.getLong("sim.operations", 100_000L);
        if (one != null) {
            long seed = Long.parseLong(one);
            Simulation.Result r = run(seed, operations, nfs(seed));
            System.out.println("seed " + seed + ": " + r.summary() + "; digest " + Long.toHexString(r.digest()));
            if (!r.violations().isEmpty()) {
                System.out.println("last events of seed " + seed + ":\n  " + String.join("\n  ", r.lastEvents()));
                fail("seed " + seed + " violates:\n  " + String.join("\n  ", r.violations()));
            }
            return;
        }
        long base = Long.getLong("sim.seedBase", new SplittableRandom().nextLong() >>> 16);
        int seeds = Integer.getInteger("sim.seeds", 10);
        System.out.println("simulation: seeds " + base + " to " + (base + seeds - 1) + " (-Dsim.seedBase=" + base
                + " repeats this run)");
        ExecutorService pool = Executors.newFixedThreadPool(2);
        List<Future<Simulation.Result>> futures = new ArrayList<>();
        for (int i = 0; i < seeds; i++) {
            long seed = base + i;
            futures.add(pool.submit(() -> run(seed, operations, nfs(seed))));
        }
        long total = 0;
        List<String> failures = new ArrayList<>();
        try {
            for (Future<Simulation.Result> f : futures) {
                Simulation.Result r = f.get();
                total += r.operations();
                System.out.println("seed " + r.seed() + ": " + r.summary());
                if (!r.violations().isEmpty()) {
                    failures.add("seed " + r.seed() + " violates:\n  " + String.join("\n  ", r.violations())
                            + "\n  replay: " + REPLAY + r.seed());
                }
            }
        } finally {
            pool.shutdownNow();
        }
        System.out.println("simulation: " + total + " operations over " + seeds + " seeds, " + failures.size()
                + " failing");
        if (!failures.isEmpty()) {
            fail(String.join("\n", failures));
        }
        assertTrue(total >= 1_000_000L || Long.getLong("sim.operations") != null,
                "fewer than a million simulated operations: " + total);
    }

    @Test
    void aSeedReplaysExactly() {
        long seed = 20_261_126L;
        Simulation.Result a = run(seed, 40_000, nfs(seed));
        Simulation.Result b = run(seed, 40_000, nfs(seed));
        Simulation.Result c = run(seed + 1, 40_000, nfs(seed + 1));
        assertTrue(a.violations().isEmpty(), () -> String.join("\n", a.violations()));
        assertEquals(a.operations(), b.operations());
        assertEquals(a.events(), b.events());
        assertEquals(a.summary(), b.summary());
        assertEquals(a.digest(), b.digest(), "the same seed must replay to the same trace");
        assertNotEquals(a.digest(), c.digest(), "another seed must give another trace");
    }

    @Test
    void writersTrustingModeBitsAreCaught() {
        assertCaught(UnaryOperator.identity(), true, "writers that trust mode bits instead of the prelock");
    }

    @Test
    void listingFromTheCacheIsCaught() {
        assertCaught(NfsModel::withListFromCache, false, "a client listing directories from its cache");
    }

    @Test
    void sizeFromTheCacheIsCaught() {
        assertCaught(NfsModel::withSizeFromCache, false, "a client taking sizes from cached attributes (no "
                + "close-to-open)");
    }

    private static void assertCaught(UnaryOperator<NfsModel> broken, boolean trustModeBits, String what) {
        List<String> tried = new ArrayList<>();
        for (long seed = 1; seed <= 8; seed++) {
            NfsModel model = broken.apply(nfs(seed));
            Simulation.Result r = new Simulation(new Simulation.Options(seed, 60_000, model, trustModeBits)).run();
            tried.add("seed " + seed + ": " + r.violations().size() + " violations");
            if (!r.violations().isEmpty()) {
                System.out.println("broken (" + what + "), seed " + seed + ": caught: " + r.violations().get(0));
                return;
            }
        }
        fail("a client " + what + " was not caught: " + tried);
    }
}
