package org.leasehold.wire;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.function.LongSupplier;



/**
 * A short wait for bytes on a socket before a blocking read, on both ends of the socket transport: the calling thread
 * of a client waiting alone for its answer, and a server connection's thread after it has answered.
 *
 * <p>A thread that blocks in a read gives up its core, and a core with nothing else to run goes idle; the answer then
 * has to wake it, which on a virtual machine (a halted virtual CPU) can cost more than the whole call over loopback or
 * a fast local network. Waiting actively for a little while first keeps the core awake when the bytes are about to
 * come. The wait yields the core at every turn ({@link Thread#yield}), so any other thread that can run does, and the
 * wait takes only time nobody else wanted. It is bounded ({@code budget}) and it learns: after
 * {@value #MISSES_TO_PAUSE} waits in a row that ended without bytes (answers slower than the budget, as across a slower
 * network), it waits actively again only once in {@value #PROBE_EVERY} calls, until one such wait succeeds. A zero
 * budget turns it off.
 *
 * <p>One reader uses it at a time (a client link's reader may change threads in between: the counters are a hint for
 * the next wait, not a measurement).
 */
public final class SpinWait {
    /** Waits in a row that found no bytes, after which active waiting pauses. */
    static final int MISSES_TO_PAUSE = 8;
    /** While paused, one call in this many waits actively, to find out whether answers have become fast again. */
    static final int PROBE_EVERY = 64;

    /** The default budget of both ends: about a round trip on loopback or a fast local network. */
    public static final Duration DEFAULT = Duration.ofNanos(50_000);

    /** The longest budget allowed. */
    public static final Duration MAX = Duration.ofMillis(10);

    /** What one {@link #await} did. */
    public enum Outcome {
        /** The bytes came while waiting actively: the next read does not block. */
        HIT,
        /** The budget passed without bytes. */
        MISS,
        /** No active wait: off, or paused after misses. */
        SKIPPED
    }

    private final long budgetNanos;
    private final LongSupplier nanoTime;
    private int misses;
    private int skipped;

    /** @param budget the longest one wait lasts; zero for none */
    public SpinWait(Duration budget) {
        this(budget, System::nanoTime);
    }

    SpinWait(Duration budget, LongSupplier nanoTime) {
        if (budget == null || budget.isNegative()) {
            throw new IllegalArgumentException("a spin wait cannot be " + budget + ": give a duration of zero (off) or "
                    + "more");
        }
        this.budgetNanos = budget.toNanos();
        this.nanoTime = nanoTime;
    }

    /**
     * Checks a configured budget: zero (off) to {@link #MAX}.
     *
     * @param what the setting's name, for the message ({@code spinWait}, {@code --socket-spin-wait})
     * @throws IllegalArgumentException outside that range, saying what is accepted
     */
    public static Duration checked(String what, Duration budget) {
        if (budget == null || budget.isNegative() || budget.compareTo(MAX) > 0) {
            throw new IllegalArgumentException(what + " is " + budget + "; use 0 (off) to " + MAX.toMillis() + "ms "
                    + "(default " + DEFAULT.toNanos() / 1_000 + "us, about a round trip on a fast local network)");
        }
        return budget;
    }

    /** Whether waits are active at all (a non-zero budget). */
    public boolean enabled() {
        return budgetNanos > 0;
    }

    /**
     * Waits until {@code in} has bytes to read without blocking, or the budget has passed; returns at once when off or
     * paused.
     *
     * @throws IOException {@code in} failed (the connection is gone): the caller's read will say how
     */
    public Outcome await(InputStream in) throws IOException {
        if (budgetNanos <= 0) {
            return Outcome.SKIPPED;
        }
        if (misses >= MISSES_TO_PAUSE && ++skipped % PROBE_EVERY != 0) {
            return Outcome.SKIPPED;
        }
        long start = nanoTime.getAsLong();
        do {
            if (in.available() > 0) {
                misses = 0;
                skipped = 0;
                return Outcome.HIT;
            }
            Thread.yield();
        } while (nanoTime.getAsLong() - start < budgetNanos);
        if (misses < MISSES_TO_PAUSE) {
            misses++;
        }
        return Outcome.MISS;
    }
}
