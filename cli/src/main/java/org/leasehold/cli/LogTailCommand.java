package org.leasehold.cli;

import java.nio.channels.ClosedByInterruptException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

import org.leasehold.bag.BagStoreException;
import org.leasehold.bag.Message;
import org.leasehold.bag.MessageStream;
import org.leasehold.bag.ReadProblem;
import org.leasehold.bag.ReadRequest;
import org.leasehold.config.Check;
import org.leasehold.store.LogGeometry;
import org.leasehold.store.StoreReader;
import org.leasehold.time.Micros;
import org.leasehold.time.TimeSource;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code leasehold log tail}: the last messages of a log, and with {@code -f} every message that appears after them
 * until interrupted.
 *
 * <p>Following polls through the store's read API: every {@code --interval} it reads again from the frontier, the
 * earlier of the oldest bucket that still had a tentative message and now minus the window, and prints what it has not
 * printed yet. A message is printed once when first seen, marked sealed or tentative; a message first printed
 * tentative is printed once more, marked sealed, when its bucket is sealed (so the sealed lines alone are the exact
 * sealed log from the start of the tail on). Messages of a bucket older than the window that was still empty and
 * unsealed when it left the window are not followed; {@code log cat} of the range shows them.
 */
@Command(name = "tail", mixinStandardHelpOptions = true, versionProvider = LeaseholdCli.Version.class,
        description = {"Print the last messages of a log; with -f, keep printing new messages until interrupted.",
            "Lines as for 'log cat'. Following, a message first printed tentative is printed again, marked sealed, "
                + "when its bucket is sealed; with --sealed-only only sealed messages are printed, each once."})
final class LogTailCommand implements Callable<Integer> {
    private final CliContext context;

    @Spec
    private CommandLine.Model.CommandSpec spec;

    @Mixin
    private LogCommand.StoreOption store;

    @Mixin
    private LogCommand.LogOption log;

    @Mixin
    private ReadOptions read;

    @Option(names = {"-n", "--lines"}, paramLabel = "N", defaultValue = "10",
            description = "How many of the last messages to print first (default: ${DEFAULT-VALUE}).")
    private int lines;

    @Option(names = {"-f", "--follow"}, description = "Keep printing new messages until interrupted.")
    private boolean follow;

    @Option(names = "--interval", paramLabel = "DURATION", defaultValue = "1s",
            description = "How often to look for new messages when following (default: ${DEFAULT-VALUE}).")
    private String interval;

    @Option(names = "--window", paramLabel = "DURATION", defaultValue = "1m",
            description = "How far back each look reads again, at least the log's bucket width plus grace plus twice "
                    + "its clock error (default: ${DEFAULT-VALUE}).")
    private String window;

    private final Set<ReadProblem> reported = new HashSet<>();

    LogTailCommand(CliContext context) {
        this.context = context;
    }

    /** Where a message is stored: what tells two messages apart. */
    private record Key(long bucket, String file, long offset, int index) {
        static Key of(Message m) {
            return new Key(Micros.of(m.bucket()), m.file(), m.offset(), m.index());
        }
    }

    @Override
    public Integer call() throws Exception {
        if (lines < 0) {
            throw new ParameterException(spec.commandLine(), "-n is " + lines + ": give 0 or more messages");
        }
        if (follow && read.to != null) {
            throw new ParameterException(spec.commandLine(), "--to cannot be combined with -f: a followed log has no end");
        }
        Duration every = duration("--interval", interval);
        Duration back = duration("--window", window);
        Instant now = context.time().now();
        ReadRequest request = read.request(log.log, now);
        try (StoreReader reader = store.open(context)) {
            LogGeometry g = reader.geometry(log.log);
            ArrayDeque<Message> last = new ArrayDeque<>();
            Set<Key> sealed = new HashSet<>();
            Set<Key> tentative = new HashSet<>();
            ReadRequest first = follow ? new ReadRequest(request.log(), request.from(), null, request.leaseNames(),
                    request.skipUnreadable(), true) : request;
            long earliestTentative = Long.MAX_VALUE;
            long windowMicros = Math.max(Micros.of(back), g.widthMicros() + g.graceMicros() + 2 * g.errorMicros());
            long inWindow = g.bucketOf(Micros.of(now) - windowMicros);
            try (MessageStream s = reader.read(first)) {
                Message m;
                while ((m = s.next()) != null) {
                    // Remember what a later look reads again: from the first tentative bucket (buckets come in time
                    // order) or the window on; what lies before both is never read again.
                    long bucket = Micros.of(m.bucket());
                    if (m.tentative()) {
                        earliestTentative = Math.min(earliestTentative, bucket);
                    }
                    if (follow && (earliestTentative != Long.MAX_VALUE || bucket >= inWindow)) {
                        (m.tentative() ? tentative : sealed).add(Key.of(m));
                    }
                    if (m.tentative() && read.sealedOnly) {
                        continue;
                    }
                    if (lines > 0) {
                        if (last.size() == lines) {
                            last.removeFirst();
                        }
                        last.addLast(m);
                    }
                }
                problems(s);
            }
            for (Message m : last) {
                context.out().println(MessageOutput.line(m, read.json));
            }
            context.out().flush();
            if (!follow) {
                return 0;
            }
            long floor = request.from() == null ? LogGeometry.MIN_MICROS : g.bucketOf(Micros.of(request.from()));
            long frontier = floor;
            while (true) {
                long t = context.time().nowMicros();
                frontier = Math.max(frontier, Math.min(earliestTentative, g.bucketOf(t - windowMicros)));
                long cut = frontier;
                sealed.removeIf(k -> k.bucket < cut);
                tentative.removeIf(k -> k.bucket < cut);
                if (!await(context.time(), Micros.of(every))) {
                    return 0;
                }
                earliestTentative = Long.MAX_VALUE;
                try (MessageStream s = reader.read(new ReadRequest(request.log(), Micros.toInstant(cut), null,
                        request.leaseNames(), request.skipUnreadable(), true))) {
                    Message m;
                    while ((m = s.next()) != null) {
                        if (request.from() != null && m.timestamp().isBefore(request.from())) {
                            continue;
                        }
                        Key k = Key.of(m);
                        if (m.tentative()) {
                            earliestTentative = Math.min(earliestTentative, k.bucket);
                            if (tentative.add(k) && !read.sealedOnly) {
                                context.out().println(MessageOutput.line(m, read.json));
                            }
                        } else if (sealed.add(k)) {
                            context.out().println(MessageOutput.line(m, read.json));
                        }
                    }
                    problems(s);
                } catch (BagStoreException e) {
                    if (Thread.currentThread().isInterrupted() || e.getCause() instanceof ClosedByInterruptException) {
                        return 0;
                    }
                    throw e;
                }
                context.out().flush();
            }
        }
    }

    /** Reports what a read skipped, each problem once however often following reads it again. */
    private void problems(MessageStream s) {
        for (ReadProblem p : s.problems()) {
            if (reported.add(p)) {
                context.err().println(MessageOutput.problem(p));
            }
        }
    }

    /** Waits until the clock has moved on by {@code micros}; false if interrupted (the end of following). */
    private static boolean await(TimeSource time, long micros) {
        CountDownLatch due = new CountDownLatch(1);
        TimeSource.Timer timer = time.schedule(time.nowMicros() + micros, due::countDown);
        try {
            due.await();
            return true;
        } catch (InterruptedException e) {
            timer.cancel();
            return false;
        }
    }

    private Duration duration(String option, String text) {
        Duration d;
        try {
            d = Check.duration(option, text);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        if (d.isZero() || d.isNegative()) {
            throw new ParameterException(spec.commandLine(), option + " is " + text + ": give a positive duration such "
                    + "as 500ms or 1s");
        }
        return d;
    }
}
